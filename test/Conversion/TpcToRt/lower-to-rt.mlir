// tpc-lower-to-rt: every tpc op becomes one rt.alloc per result and one
// rt.kernel with the executable's attribute encoding; arguments become params
// (init from their uses) and inputs (value bounds from their uses); returned
// values become named outputs.
// RUN: tpc-opt %s --split-input-file --tpc-lower-to-rt=seed=42 | FileCheck %s
// RUN: tpc-opt %s --split-input-file --tpc-lower-to-rt \
// RUN:   | FileCheck %s --check-prefix=SEED0

// SEED0: module attributes {rt.seed = 0 : i64

// CHECK-LABEL: module attributes {rt.seed = 42 : i64, tpc.model = {layers = 1 : i64}}
module attributes {tpc.model = {layers = 1 : i64}} {
// CHECK-NOT: func.func
// CHECK: rt.program @forward {
func.func @forward(
    // Both uses of the tied table are neither a norm scale nor a bias.
    // CHECK-NEXT: %[[WTE:.*]] = rt.param "wte" hf_shape [16, 8] init normal : memref<16x8xf32>
    %wte: tensor<16x8xf32> {tpc.param = "wte"},
    // CHECK-NEXT: %[[LNW:.*]] = rt.param "ln.weight" hf_shape [8] init ones : memref<8xf32>
    %lnw: tensor<8xf32> {tpc.param = "ln.weight"},
    // CHECK-NEXT: %[[LNB:.*]] = rt.param "ln.bias" hf_shape [8] init zeros : memref<8xf32>
    %lnb: tensor<8xf32> {tpc.param = "ln.bias"},
    // The view [8, 2, 2, 2] of the checkpoint's [8, 8].
    // CHECK-NEXT: %[[QKVW:.*]] = rt.param "qkv.weight" hf_shape [8, 8] init normal : memref<8x2x2x2xf32>
    %qkvw: tensor<8x2x2x2xf32> {tpc.param = "qkv.weight", tpc.hf_shape = array<i64: 8, 8>},
    // CHECK-NEXT: %[[QKVB:.*]] = rt.param "qkv.bias" hf_shape [8] init zeros : memref<2x2x2xf32>
    %qkvb: tensor<2x2x2xf32> {tpc.param = "qkv.bias", tpc.hf_shape = array<i64: 8>},
    // CHECK-NEXT: %[[NORM:.*]] = rt.param "norm.weight" hf_shape [8] init ones : memref<8xf32>
    %norm: tensor<8xf32> {tpc.param = "norm.weight"},
    // CHECK-NEXT: %[[UP:.*]] = rt.param "up.weight" hf_shape [4, 8] init normal : memref<4x8xf32>
    %up: tensor<4x8xf32> {tpc.param = "up.weight"},
    // CHECK-NEXT: %[[DOWN:.*]] = rt.param "down.weight" hf_shape [8, 4] init normal : memref<8x4xf32>
    %down: tensor<8x4xf32> {tpc.param = "down.weight"},
    // CHECK-NEXT: %[[IDS:.*]] = rt.input "input_ids" bound 16 : memref<2x4xi64>
    %ids: tensor<2x4xi64> {tpc.input = "input_ids"},
    // CHECK-NEXT: %[[LABELS:.*]] = rt.input "labels" bound 16 : memref<2x4xi64>
    %labels: tensor<2x4xi64> {tpc.input = "labels"},
    // An input no op bounds.
    // CHECK-NEXT: %[[EXTRA:.*]] = rt.input "extra" : memref<2x4x8xf32>
    %extra: tensor<2x4x8xf32> {tpc.input = "extra"})
    -> (tensor<f32> {tpc.output = "loss"}, tensor<2x4x16xf32> {tpc.output = "logits"},
        tensor<2x4x8xbf16> {tpc.output = "half"}) {
  // CHECK-NEXT: %[[X:.*]] = rt.alloc : memref<2x4x8xf32>
  // CHECK-NEXT: rt.kernel embedding(%[[WTE]], %[[IDS]]) -> (%[[X]]) : memref<16x8xf32>, memref<2x4xi64> -> memref<2x4x8xf32>
  %x = tpc.embedding %wte[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
  // CHECK-NEXT: %[[POS:.*]] = rt.alloc : memref<4x8xf32>
  // CHECK-NEXT: rt.kernel slice(%[[WTE]]) -> (%[[POS]]) ints [0, 3, 4] : memref<16x8xf32> -> memref<4x8xf32>
  %pos = tpc.slice %wte dim 0 [3 : 4] : tensor<16x8xf32>
  // CHECK-NEXT: %[[SUM:.*]] = rt.alloc
  // CHECK-NEXT: rt.kernel add(%[[X]], %[[POS]]) -> (%[[SUM]]) : memref<2x4x8xf32>, memref<4x8xf32> -> memref<2x4x8xf32>
  %sum = tpc.add %x, %pos : tensor<2x4x8xf32>, tensor<4x8xf32>
  // CHECK-NEXT: %[[DROP:.*]] = rt.alloc
  // CHECK-NEXT: rt.kernel dropout(%[[SUM]]) -> (%[[DROP]]) ints [5] floats [2.500000e-01] :
  %drop = tpc.dropout %sum rate 2.500000e-01 stream 5 : tensor<2x4x8xf32>
  // CHECK-NEXT: %[[LN:.*]] = rt.alloc
  // CHECK-NEXT: rt.kernel layer_norm(%[[DROP]], %[[LNW]], %[[LNB]]) -> (%[[LN]]) floats [1.000000e-05] :
  %ln = tpc.layer_norm %drop, %lnw, %lnb eps 1.000000e-05 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  // in_out: flags 0.
  // CHECK-NEXT: %[[QKV:.*]] = rt.alloc : memref<2x4x2x2x2xf32>
  // CHECK-NEXT: rt.kernel linear(%[[LN]], %[[QKVW]], %[[QKVB]]) -> (%[[QKV]]) : memref<2x4x8xf32>, memref<8x2x2x2xf32>, memref<2x2x2xf32> -> memref<2x4x2x2x2xf32>
  %qkv = tpc.linear %ln, %qkvw, %qkvb layout in_out : tensor<2x4x8xf32>, tensor<8x2x2x2xf32>, tensor<2x2x2xf32>
  // CHECK-NEXT: %[[QS:.*]] = rt.alloc : memref<2x4x1x2x2xf32>
  // CHECK-NEXT: rt.kernel slice(%[[QKV]]) -> (%[[QS]]) ints [2, 0, 1] :
  %qs = tpc.slice %qkv dim 2 [0 : 1] : tensor<2x4x2x2x2xf32>
  // A reshape is a copy.
  // CHECK-NEXT: %[[QR:.*]] = rt.alloc : memref<2x4x2x2xf32>
  // CHECK-NEXT: rt.kernel copy(%[[QS]]) -> (%[[QR]]) : memref<2x4x1x2x2xf32> -> memref<2x4x2x2xf32>
  %qr = tpc.reshape %qs : tensor<2x4x1x2x2xf32> -> tensor<2x4x2x2xf32>
  // CHECK-NEXT: %[[Q:.*]] = rt.alloc : memref<2x2x4x2xf32>
  // CHECK-NEXT: rt.kernel transpose(%[[QR]]) -> (%[[Q]]) ints [0, 2, 1, 3] :
  %q = tpc.transpose %qr [0, 2, 1, 3] : tensor<2x4x2x2xf32>
  // CHECK-NEXT: %[[ROT:.*]] = rt.alloc
  // CHECK-NEXT: rt.kernel rotary(%[[Q]]) -> (%[[ROT]]) ints [2] floats [1.000000e+04] :
  %rot = tpc.rotary %q theta 1.000000e+04 offset 2 : tensor<2x2x4x2xf32>
  // CHECK-NEXT: %[[KV:.*]] = rt.alloc : memref<2x1x4x2xf32>
  // CHECK-NEXT: rt.kernel slice(%[[ROT]]) -> (%[[KV]]) ints [1, 1, 1] :
  %kv = tpc.slice %rot dim 1 [1 : 1] : tensor<2x2x4x2xf32>
  // Fused attention: [dropout stream], [scale, dropout rate], causal.
  // CHECK-NEXT: %[[ATT:.*]] = rt.alloc : memref<2x2x4x2xf32>
  // CHECK-NEXT: rt.kernel attention(%[[ROT]], %[[KV]], %[[KV]]) -> (%[[ATT]]) ints [6] floats [5.000000e-01, 1.000000e-01] flags 1 :
  %att = tpc.attention %rot, %kv, %kv causal scale 5.000000e-01 dropout 1.000000e-01 stream 6 : tensor<2x2x4x2xf32>, tensor<2x1x4x2xf32>, tensor<2x1x4x2xf32>
  // Not causal, no dropout.
  // CHECK-NEXT: %[[ATT2:.*]] = rt.alloc
  // CHECK-NEXT: rt.kernel attention(%[[ATT]], %[[KV]], %[[KV]]) -> (%[[ATT2]]) ints [0] floats [1.000000e+00, 0.000000e+00] :
  %att2 = tpc.attention %att, %kv, %kv scale 1.0 : tensor<2x2x4x2xf32>, tensor<2x1x4x2xf32>, tensor<2x1x4x2xf32>
  // CHECK-NEXT: %[[REP:.*]] = rt.alloc : memref<2x2x4x2xf32>
  // CHECK-NEXT: rt.kernel repeat(%[[KV]]) -> (%[[REP]]) ints [1, 2] :
  %rep = tpc.repeat %kv dim 1 times 2 : tensor<2x1x4x2xf32>
  // transpose_rhs is bit 1 (2), transpose_lhs bit 0 (1).
  // CHECK-NEXT: %[[S:.*]] = rt.alloc : memref<2x2x4x4xf32>
  // CHECK-NEXT: rt.kernel batch_matmul(%[[ATT2]], %[[REP]]) -> (%[[S]]) floats [2.500000e-01] flags 2 :
  %s = tpc.batch_matmul %att2, %rep transpose_rhs scale 2.500000e-01 : tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32>
  // CHECK-NEXT: %[[ST:.*]] = rt.alloc : memref<2x2x4x4xf32>
  // CHECK-NEXT: rt.kernel batch_matmul(%[[S]], %[[S]]) -> (%[[ST]]) floats [1.000000e+00] flags 3 :
  %st = tpc.batch_matmul %s, %s transpose_lhs transpose_rhs : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>
  // CHECK-NEXT: %[[P:.*]] = rt.alloc
  // CHECK-NEXT: rt.kernel softmax(%[[ST]]) -> (%[[P]]) flags 1 :
  %p = tpc.softmax %st causal : tensor<2x2x4x4xf32>
  // CHECK-NEXT: %[[P2:.*]] = rt.alloc
  // CHECK-NEXT: rt.kernel softmax(%[[P]]) -> (%[[P2]]) : memref<2x2x4x4xf32> -> memref<2x2x4x4xf32>
  %p2 = tpc.softmax %p : tensor<2x2x4x4xf32>
  // CHECK-NEXT: %[[O:.*]] = rt.alloc : memref<2x2x4x2xf32>
  // CHECK-NEXT: rt.kernel batch_matmul(%[[P2]], %[[REP]]) -> (%[[O]]) floats [1.000000e+00] :
  %o = tpc.batch_matmul %p2, %rep : tensor<2x2x4x4xf32>, tensor<2x2x4x2xf32>
  %ot = tpc.transpose %o [0, 2, 1, 3] : tensor<2x2x4x2xf32>
  // CHECK: %[[H4:.*]] = rt.alloc : memref<2x4x4xf32>
  // CHECK-NEXT: rt.kernel copy
  %h4 = tpc.reshape %ot : tensor<2x4x2x2xf32> -> tensor<2x4x4xf32>
  // CHECK-NEXT: %[[H:.*]] = rt.alloc : memref<2x4x8xf32>
  // CHECK-NEXT: rt.kernel linear(%[[H4]], %[[DOWN]]) -> (%[[H]]) flags 1 :
  %h = tpc.linear %h4, %down layout out_in : tensor<2x4x4xf32>, tensor<8x4xf32>
  // CHECK-NEXT: %[[RMS:.*]] = rt.alloc
  // CHECK-NEXT: rt.kernel rms_norm(%[[H]], %[[NORM]]) -> (%[[RMS]]) floats [1.000000e-06] :
  %rms = tpc.rms_norm %h, %norm eps 1.0e-6 : tensor<2x4x8xf32>, tensor<8xf32>
  // out_in: flags 1.
  // CHECK-NEXT: %[[G:.*]] = rt.alloc : memref<2x4x4xf32>
  // CHECK-NEXT: rt.kernel linear(%[[RMS]], %[[UP]]) -> (%[[G]]) flags 1 : memref<2x4x8xf32>, memref<4x8xf32> -> memref<2x4x4xf32>
  %g = tpc.linear %rms, %up layout out_in : tensor<2x4x8xf32>, tensor<4x8xf32>
  // CHECK-NEXT: %[[SI:.*]] = rt.alloc
  // CHECK-NEXT: rt.kernel silu(%[[G]]) -> (%[[SI]]) :
  %si = tpc.silu %g : tensor<2x4x4xf32>
  // CHECK-NEXT: %[[M:.*]] = rt.alloc
  // CHECK-NEXT: rt.kernel mul(%[[SI]], %[[G]]) -> (%[[M]]) :
  %m = tpc.mul %si, %g : tensor<2x4x4xf32>, tensor<2x4x4xf32>
  // CHECK-NEXT: %[[GE:.*]] = rt.alloc
  // CHECK-NEXT: rt.kernel gelu(%[[M]]) -> (%[[GE]]) :
  %ge = tpc.gelu %m erf : tensor<2x4x4xf32>
  // CHECK-NEXT: %[[GT:.*]] = rt.alloc
  // CHECK-NEXT: rt.kernel gelu(%[[GE]]) -> (%[[GT]]) flags 1 :
  %gt = tpc.gelu %ge tanh : tensor<2x4x4xf32>
  // CHECK-NEXT: %[[LOGITS:.*]] = rt.alloc : memref<2x4x16xf32>
  // CHECK-NEXT: rt.kernel linear(%[[RMS]], %[[WTE]]) -> (%[[LOGITS]]) flags 1 :
  %logits = tpc.linear %rms, %wte layout out_in : tensor<2x4x8xf32>, tensor<16x8xf32>
  // CHECK-NEXT: %[[LSUM:.*]] = rt.alloc : memref<f32>
  // CHECK-NEXT: %[[COUNT:.*]] = rt.alloc : memref<i64>
  // CHECK-NEXT: rt.kernel cross_entropy(%[[LOGITS]], %[[LABELS]]) -> (%[[LSUM]], %[[COUNT]]) ints [-100] : memref<2x4x16xf32>, memref<2x4xi64> -> memref<f32>, memref<i64>
  %lsum, %count = tpc.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi64>
  // CHECK-NEXT: %[[LOSS:.*]] = rt.alloc : memref<f32>
  // CHECK-NEXT: rt.kernel loss_mean(%[[LSUM]], %[[COUNT]]) -> (%[[LOSS]]) : memref<f32>, memref<i64> -> memref<f32>
  %loss = tpc.loss_mean %lsum, %count
  // CHECK-NEXT: %[[HALF:.*]] = rt.alloc : memref<2x4x8xbf16>
  // CHECK-NEXT: rt.kernel cast(%[[EXTRA]]) -> (%[[HALF]]) : memref<2x4x8xf32> -> memref<2x4x8xbf16>
  %half = tpc.cast %extra : tensor<2x4x8xf32> to tensor<2x4x8xbf16>
  // CHECK-NEXT: rt.output "loss" %[[LOSS]] : memref<f32>
  // CHECK-NEXT: rt.output "logits" %[[LOGITS]] : memref<2x4x16xf32>
  // CHECK-NEXT: rt.output "half" %[[HALF]] : memref<2x4x8xbf16>
  // CHECK-NEXT: }
  return %loss, %logits, %half : tensor<f32>, tensor<2x4x16xf32>, tensor<2x4x8xbf16>
}
}

// -----

// A custom ignore index, a label bound from two uses (the smallest),
// bf16 buffers, and a param that is both a norm's scale and its bias
// (a scale wins). The seed is the full 64-bit value, stored as an i64.
// RUN: tpc-opt %s --split-input-file \
// RUN:   --tpc-lower-to-rt=seed=18446744073709551615 \
// RUN:   | FileCheck %s --check-prefix=MISC

// MISC-LABEL: module attributes {rt.seed = -1 : i64}
// MISC: rt.program @forward {
// MISC-NEXT: rt.param "shared" hf_shape [8] init ones : memref<8xbf16>
// MISC-NEXT: rt.input "x" : memref<2x8xbf16>
// MISC-NEXT: rt.param "w" hf_shape [16, 8] init normal : memref<16x8xbf16>
// MISC-NEXT: rt.param "w2" hf_shape [12, 8] init normal : memref<12x8xbf16>
// MISC-NEXT: rt.input "labels" bound 12 : memref<2xi64>
// MISC: rt.kernel cross_entropy({{.*}}) ints [-1] : memref<2x16xbf16>, memref<2xi64> -> memref<f32>, memref<i64>
// MISC: rt.kernel cross_entropy({{.*}}) ints [-100] : memref<2x12xbf16>, memref<2xi64> -> memref<f32>, memref<i64>
// MISC: rt.output "loss"
func.func @forward(%p: tensor<8xbf16> {tpc.param = "shared"},
                   %x: tensor<2x8xbf16> {tpc.input = "x"},
                   %w: tensor<16x8xbf16> {tpc.param = "w"},
                   %w2: tensor<12x8xbf16> {tpc.param = "w2"},
                   %labels: tensor<2xi64> {tpc.input = "labels"})
    -> (tensor<f32> {tpc.output = "loss"}) {
  %a = tpc.layer_norm %x, %p, %p eps 1.0e-5 : tensor<2x8xbf16>, tensor<8xbf16>, tensor<8xbf16>
  %l1 = tpc.linear %a, %w layout out_in : tensor<2x8xbf16>, tensor<16x8xbf16>
  %l2 = tpc.linear %a, %w2 layout out_in : tensor<2x8xbf16>, tensor<12x8xbf16>
  %s1, %c1 = tpc.cross_entropy %l1, %labels ignore -1 : tensor<2x16xbf16>, tensor<2xi64>
  %s2, %c2 = tpc.cross_entropy %l2, %labels : tensor<2x12xbf16>, tensor<2xi64>
  %loss = tpc.loss_mean %s1, %c2
  return %loss : tensor<f32>
}
