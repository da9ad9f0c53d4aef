// REQUIRES: flatc
// The executable is the planned rt module, 1:1: buffers in program order
// (params, inputs, then one per op result), params with their Hugging Face
// name and shape and their view, inputs with value bounds, outputs by name,
// kernels in order with the attribute encoding of the kernel table, the
// arena, the planned peak and the seed.
//
// RUN: tpc-compile %s -o %t.tpcx --seed 18446744073709551615 --keep-dropout 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SUMMARY --match-full-lines
// RUN: head -c 4 %t.tpcx | FileCheck %s --check-prefix=MAGIC
// RUN: sh %S/Inputs/tpcx-json.sh %tpc_src_root/runtime/schema/tpcx.fbs \
// RUN:   %t.tpcx %t.json | FileCheck %s

// SUMMARY: tpc-compile: 8 kernels, 14 buffers (3 params, 2 inputs, 2 outputs), arena 1728 bytes, planned peak 1472 bytes
// MAGIC: TPCX

// The plan, by hand: params and inputs at 0, 512, 576, 832, 896 (64-byte
// aligned), the arena top at 960. x (192 bytes) at 960, n at 1152; h reuses
// x's bytes; r, the reshape's copy of h (h dies there), takes h's very
// bytes; d reuses n's; logits (384) fits no free range and grows the arena
// from 1344 to 1728; sum, count and loss (64 each once aligned) share r's
// old range. Peak at the second linear: the params and inputs (896) plus
// d (192) and the logits (384).

// CHECK: "schema_version": 1,
// CHECK: "arena_bytes": 1728,
// CHECK: "buffers": [
// wte, g, w, input_ids, labels:
// CHECK: "offset": 0,
// CHECK-NEXT: "size": 512,
// CHECK-NEXT: "dtype": "F32",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: 16,
// CHECK-NEXT: 8
// CHECK: "offset": 512,
// CHECK-NEXT: "size": 32,
// CHECK: "offset": 576,
// CHECK-NEXT: "size": 256,
// CHECK-NEXT: "dtype": "F32",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: 2,
// CHECK-NEXT: 4,
// CHECK-NEXT: 8
// CHECK: "offset": 832,
// CHECK-NEXT: "size": 48,
// CHECK-NEXT: "dtype": "I64",
// CHECK: "offset": 896,
// CHECK-NEXT: "size": 48,
// CHECK-NEXT: "dtype": "I64",
// x, n, h, r, d, logits, sum, count, loss:
// CHECK: "offset": 960,
// CHECK-NEXT: "size": 192,
// CHECK: "offset": 1152,
// CHECK-NEXT: "size": 192,
// CHECK: "offset": 960,
// CHECK-NEXT: "size": 192,
// CHECK-NEXT: "dtype": "F32",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: 2,
// CHECK-NEXT: 3,
// CHECK-NEXT: 2,
// CHECK-NEXT: 4
// CHECK: "offset": 960,
// CHECK-NEXT: "size": 192,
// CHECK: "offset": 1152,
// CHECK-NEXT: "size": 192,
// CHECK: "offset": 1344,
// CHECK-NEXT: "size": 384,
// A scalar has no shape vector (the object API writes an empty one as
// absent, which reads as []).
// CHECK: "offset": 960,
// CHECK-NEXT: "size": 4,
// CHECK-NEXT: "dtype": "F32",
// CHECK-NEXT: "pool": -1
// CHECK-NEXT: },
// CHECK: "offset": 1024,
// CHECK-NEXT: "size": 8,
// CHECK-NEXT: "dtype": "I64"
// CHECK: "offset": 1088,
// CHECK-NEXT: "size": 4,
// CHECK: "params": [
// CHECK: "hf_name": "wte",
// CHECK-NEXT: "hf_shape": [
// CHECK-NEXT: 16,
// CHECK-NEXT: 8
// CHECK-NEXT: ],
// CHECK-NEXT: "view_shape": [
// CHECK-NEXT: 16,
// CHECK-NEXT: 8
// CHECK-NEXT: ],
// No slices: the field is reserved and must stay empty.
// CHECK-NEXT: "buffer": 0,
// CHECK-NEXT: "init": "Normal",
// CHECK-NEXT: "init_std": 0.02
// CHECK: "hf_name": "g",
// CHECK: "buffer": 1,
// CHECK: "init": "Ones",
// The view [2, 4, 8] of the checkpoint's [8, 8].
// CHECK: "hf_name": "w",
// CHECK-NEXT: "hf_shape": [
// CHECK-NEXT: 8,
// CHECK-NEXT: 8
// CHECK-NEXT: ],
// CHECK-NEXT: "view_shape": [
// CHECK-NEXT: 2,
// CHECK-NEXT: 4,
// CHECK-NEXT: 8
// CHECK-NEXT: ],
// CHECK-NEXT: "buffer": 2,
// CHECK: "init": "Normal",
// CHECK: "inputs": [
// CHECK: "name": "input_ids",
// CHECK-NEXT: "buffer": 3,
// CHECK-NEXT: "value_bound": 16
// CHECK: "name": "labels",
// CHECK-NEXT: "buffer": 4,
// CHECK-NEXT: "value_bound": 16
// CHECK: "outputs": [
// CHECK: "name": "loss",
// CHECK-NEXT: "buffer": 13,
// CHECK: "name": "logits",
// CHECK-NEXT: "buffer": 10,
// CHECK: "kernels": [
// CHECK: "op": "Embedding",
// CHECK-NEXT: "operands": [
// CHECK-NEXT: 0,
// CHECK-NEXT: 3
// CHECK-NEXT: ],
// CHECK-NEXT: "results": [
// CHECK-NEXT: 5
// CHECK-NEXT: ],
// CHECK-NEXT: "flags": 0
// CHECK: "op": "RmsNorm",
// CHECK: "float_attrs": [
// CHECK-NEXT: 0.000001
// CHECK: "op": "Linear",
// CHECK-NEXT: "operands": [
// CHECK-NEXT: 6,
// CHECK-NEXT: 2
// CHECK: "flags": 1
// CHECK: "op": "Copy",
// CHECK: "op": "Dropout",
// CHECK: "int_attrs": [
// CHECK-NEXT: 3
// CHECK-NEXT: ],
// CHECK-NEXT: "float_attrs": [
// CHECK-NEXT: 0.5
// CHECK: "op": "Linear",
// CHECK-NEXT: "operands": [
// CHECK-NEXT: 9,
// CHECK-NEXT: 0
// CHECK: "op": "CrossEntropy",
// CHECK-NEXT: "operands": [
// CHECK-NEXT: 10,
// CHECK-NEXT: 4
// CHECK-NEXT: ],
// CHECK-NEXT: "results": [
// CHECK-NEXT: 11,
// CHECK-NEXT: 12
// CHECK-NEXT: ],
// CHECK-NEXT: "int_attrs": [
// CHECK-NEXT: -100
// CHECK: "op": "LossMean",
// CHECK: "planned_peak_bytes": 1472,
// The seed 2^64 - 1 survives as all ones.
// CHECK-NEXT: "seed": 18446744073709551615

func.func @forward(%wte: tensor<16x8xf32> {tpc.param = "wte"},
                   %g: tensor<8xf32> {tpc.param = "g"},
                   %w: tensor<2x4x8xf32> {tpc.param = "w", tpc.hf_shape = array<i64: 8, 8>},
                   %ids: tensor<2x3xi64> {tpc.input = "input_ids"},
                   %labels: tensor<2x3xi64> {tpc.input = "labels"})
    -> (tensor<f32> {tpc.output = "loss"}, tensor<2x3x16xf32> {tpc.output = "logits"}) {
  %x = tpc.embedding %wte[%ids] : tensor<16x8xf32>, tensor<2x3xi64>
  %n = tpc.rms_norm %x, %g eps 1.0e-6 : tensor<2x3x8xf32>, tensor<8xf32>
  %h = tpc.linear %n, %w layout out_in : tensor<2x3x8xf32>, tensor<2x4x8xf32>
  %r = tpc.reshape %h : tensor<2x3x2x4xf32> -> tensor<2x3x8xf32>
  %d = tpc.dropout %r rate 0.5 stream 3 : tensor<2x3x8xf32>
  %logits = tpc.linear %d, %wte layout out_in : tensor<2x3x8xf32>, tensor<16x8xf32>
  %s, %c = tpc.cross_entropy %logits, %labels : tensor<2x3x16xf32>, tensor<2x3xi64>
  %loss = tpc.loss_mean %s, %c
  return %loss, %logits : tensor<f32>, tensor<2x3x16xf32>
}
