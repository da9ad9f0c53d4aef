// rt-plan-memory: exact offsets on a small program, reuse of dead buffers,
// outputs kept to the end, and the planned peak (summed unaligned sizes of the
// buffers live at a kernel).
// RUN: tpc-opt %s --split-input-file --rt-plan-memory=check | FileCheck %s

// Params and inputs first, in order, 64-byte aligned: w [0, 64), x [64, 320).
// Then at each kernel the buffers whose last use was the kernel before are
// freed (coalescing neighbours) and the new ones take the smallest free range
// that fits, else grow the arena:
//   k0: a (512)  at 320, the arena grows to 832
//   k1: b (64)   at 832, grows to 896
//   k2: a freed: [320, 832); c (64) best fit at 320
//   k3: b freed, coalesces: [384, 896); d (256) at 384
//   k4: c freed: [320, 384) and [640, 896); e (256) fits [640, 896) exactly
//   k5: nothing freed (d is read again here); f (256) fits nowhere: 896, the
//       arena grows to 1152
//   k6: d and e freed, coalescing to [320, 896); g (40 -> 64) at 320
//   k7: f freed, coalescing to [384, 1152); h (40 -> 64) at 384
// Peak: params and inputs (40 + 256) are live throughout; at k5, d, e and f
// (3 x 256) are live too: 296 + 768 = 1064.
// CHECK-LABEL: module attributes {rt.arena_bytes = 1152 : i64, rt.planned_peak_bytes = 1064 : i64}
// CHECK-NEXT: rt.program @forward {
// CHECK-NEXT: rt.param "w" {{.*}} offset 0 :
// CHECK-NEXT: rt.input "x" offset 64 :
// CHECK-NEXT: rt.alloc offset 320 : memref<128xf32>
// CHECK-NEXT: rt.kernel repeat
// CHECK-NEXT: rt.alloc offset 832 : memref<16xf32>
// CHECK-NEXT: rt.kernel slice
// CHECK-NEXT: rt.alloc offset 320 : memref<16xf32>
// CHECK-NEXT: rt.kernel silu
// CHECK-NEXT: rt.alloc offset 384 : memref<64xf32>
// CHECK-NEXT: rt.kernel repeat
// CHECK-NEXT: rt.alloc offset 640 : memref<64xf32>
// CHECK-NEXT: rt.kernel silu
// CHECK-NEXT: rt.alloc offset 896 : memref<64xf32>
// CHECK-NEXT: rt.kernel mul
// CHECK-NEXT: rt.alloc offset 320 : memref<10xf32>
// CHECK-NEXT: rt.kernel slice
// CHECK-NEXT: rt.alloc offset 384 : memref<10xf32>
// CHECK-NEXT: rt.kernel add
// CHECK-NEXT: rt.output "h"
rt.program @forward {
  %w = rt.param "w" hf_shape [10] init normal : memref<10xf32>
  %x = rt.input "x" : memref<64xf32>
  %a = rt.alloc : memref<128xf32>
  rt.kernel repeat(%x) -> (%a) ints [0, 2] : memref<64xf32> -> memref<128xf32>
  %b = rt.alloc : memref<16xf32>
  rt.kernel slice(%a) -> (%b) ints [0, 0, 16] : memref<128xf32> -> memref<16xf32>
  %c = rt.alloc : memref<16xf32>
  rt.kernel silu(%b) -> (%c) : memref<16xf32> -> memref<16xf32>
  %d = rt.alloc : memref<64xf32>
  rt.kernel repeat(%c) -> (%d) ints [0, 4] : memref<16xf32> -> memref<64xf32>
  %e = rt.alloc : memref<64xf32>
  rt.kernel silu(%d) -> (%e) : memref<64xf32> -> memref<64xf32>
  %f = rt.alloc : memref<64xf32>
  rt.kernel mul(%e, %d) -> (%f) : memref<64xf32>, memref<64xf32> -> memref<64xf32>
  %g = rt.alloc : memref<10xf32>
  rt.kernel slice(%f) -> (%g) ints [0, 0, 10] : memref<64xf32> -> memref<10xf32>
  %h = rt.alloc : memref<10xf32>
  rt.kernel add(%g, %w) -> (%h) : memref<10xf32>, memref<10xf32> -> memref<10xf32>
  rt.output "h" %h : memref<10xf32>
}

// -----

// An output lives to the end: a is never freed, b is freed after its last
// read (k2) and d reuses its bytes. A buffer of zero bytes and an alloc no
// kernel uses get offset 0 and are live nowhere; the arena is large enough
// for the unused one (512 bytes).
// CHECK-LABEL: module attributes {rt.arena_bytes = 512 : i64, rt.planned_peak_bytes = 256 : i64}
// CHECK-NEXT: rt.program @outputs {
// CHECK-NEXT: rt.input "x" offset 0 : memref<16xf32>
// CHECK-NEXT: rt.input "empty" offset 0 : memref<0x4xf32>
// CHECK-NEXT: rt.alloc offset 64 : memref<16xf32>
// CHECK-NEXT: rt.kernel silu
// CHECK-NEXT: rt.alloc offset 128 : memref<16xf32>
// CHECK-NEXT: rt.kernel silu
// CHECK-NEXT: rt.alloc offset 192 : memref<16xf32>
// CHECK-NEXT: rt.kernel silu
// CHECK-NEXT: rt.alloc offset 128 : memref<16xf32>
// CHECK-NEXT: rt.kernel silu
// CHECK-NEXT: rt.alloc offset 0 : memref<128xf32>
// CHECK-NEXT: rt.output "a"
rt.program @outputs {
  %x = rt.input "x" : memref<16xf32>
  %empty = rt.input "empty" : memref<0x4xf32>
  %a = rt.alloc : memref<16xf32>
  rt.kernel silu(%x) -> (%a) : memref<16xf32> -> memref<16xf32>
  %b = rt.alloc : memref<16xf32>
  rt.kernel silu(%x) -> (%b) : memref<16xf32> -> memref<16xf32>
  %c = rt.alloc : memref<16xf32>
  rt.kernel silu(%b) -> (%c) : memref<16xf32> -> memref<16xf32>
  %d = rt.alloc : memref<16xf32>
  rt.kernel silu(%c) -> (%d) : memref<16xf32> -> memref<16xf32>
  %unused = rt.alloc : memref<128xf32>
  rt.output "a" %a : memref<16xf32>
}

// -----

// A free range at the top of the arena grows rather than leaving a hole: a
// is freed after k0, and b (256 bytes) extends [64, 128) to [64, 320), so
// the arena is 320 bytes, not 384. Peak at k1: x and b.
// CHECK-LABEL: module attributes {rt.arena_bytes = 320 : i64, rt.planned_peak_bytes = 320 : i64}
// CHECK-NEXT: rt.program @top {
// CHECK-NEXT: rt.input "x" offset 0 : memref<16xf32>
// CHECK-NEXT: rt.alloc offset 64 : memref<16xf32>
// CHECK-NEXT: rt.kernel silu
// CHECK-NEXT: rt.alloc offset 64 : memref<64xf32>
rt.program @top {
  %x = rt.input "x" : memref<16xf32>
  %a = rt.alloc : memref<16xf32>
  rt.kernel silu(%x) -> (%a) : memref<16xf32> -> memref<16xf32>
  %b = rt.alloc : memref<64xf32>
  rt.kernel repeat(%x) -> (%b) ints [0, 4] : memref<16xf32> -> memref<64xf32>
  rt.output "b" %b : memref<64xf32>
}

// -----

// With no kernels the peak is the bytes of the params and inputs.
// CHECK-LABEL: module attributes {rt.arena_bytes = 192 : i64, rt.planned_peak_bytes = 136 : i64}
// CHECK: rt.param "w" {{.*}} offset 0 : memref<8xf32>
// CHECK-NEXT: rt.input "x" offset 64 : memref<13xi64>
rt.program @empty {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %x = rt.input "x" : memref<13xi64>
  rt.output "w" %w : memref<8xf32>
}


// -----

// A training step: the state lives for the whole program like the params
// and inputs (placed first, in program order); a gradient is kept to the end
// like an output, so nothing reuses it; the in-place update writes the param
// and state buffers themselves.
//   w [0, 64), x [64, 128), lr [128, 192), m [192, 256) (state)
//   k0: g (32 -> 64) at 256, read by the update (k3) and bound as gradient
//   k1: t (32 -> 64) at 320
//   k2: u (32 -> 64) at 384
//   k3: t and u died at k2: [320, 448) is free; the update writes w and m
// Peak at k2: w, x, lr, m (32 + 32 + 4 + 32) + g, t, u (3 x 32) = 196.
// CHECK-LABEL: module attributes {rt.arena_bytes = 448 : i64, rt.planned_peak_bytes = 196 : i64}
// CHECK-NEXT: rt.program @train_step {
// CHECK-NEXT: rt.param "w" {{.*}} offset 0 :
// CHECK-NEXT: rt.input "x" offset 64 :
// CHECK-NEXT: rt.input "lr" offset 128 :
// CHECK-NEXT: rt.state "momentum" of "w" offset 192 :
// CHECK-NEXT: rt.alloc offset 256 : memref<8xf32>
// CHECK-NEXT: rt.kernel silu
// CHECK-NEXT: rt.alloc offset 320 : memref<8xf32>
// CHECK-NEXT: rt.kernel silu
// CHECK-NEXT: rt.alloc offset 384 : memref<8xf32>
// CHECK-NEXT: rt.kernel add
// CHECK-NEXT: rt.kernel sgd_update
// CHECK-NEXT: rt.grad "w"
rt.program @train_step {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %x = rt.input "x" : memref<8xf32>
  %lr = rt.input "lr" : memref<f32>
  %m = rt.state "momentum" of "w" : memref<8xf32>
  %g = rt.alloc : memref<8xf32>
  rt.kernel silu(%x) -> (%g) : memref<8xf32> -> memref<8xf32>
  %t = rt.alloc : memref<8xf32>
  rt.kernel silu(%g) -> (%t) : memref<8xf32> -> memref<8xf32>
  %u = rt.alloc : memref<8xf32>
  rt.kernel add(%t, %g) -> (%u) : memref<8xf32>, memref<8xf32> -> memref<8xf32>
  rt.kernel sgd_update(%w, %g, %m, %lr) -> (%w, %m) floats [0.9, 0.0] : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32> -> memref<8xf32>, memref<8xf32>
  rt.grad "w" %g : memref<8xf32>
}

// -----

// A reshape's copy takes its operand's very bytes when the operand dies at
// it (the devices then skip the copy): b on a's bytes, and c (a reshape of
// b, which the silu reads again) on bytes of its own.
// CHECK-LABEL: module attributes {rt.arena_bytes = 320 : i64, rt.planned_peak_bytes = 320 : i64}
// CHECK: rt.input "x" offset 0 :
// CHECK-NEXT: rt.alloc offset 64 : memref<4x4xf32>
// CHECK-NEXT: rt.kernel silu
// CHECK-NEXT: rt.alloc offset 64 : memref<16xf32>
// CHECK-NEXT: rt.kernel copy
// CHECK-NEXT: rt.alloc offset 128 : memref<2x8xf32>
// CHECK-NEXT: rt.kernel copy
// CHECK-NEXT: rt.alloc offset 192 : memref<16xf32>
// CHECK-NEXT: rt.kernel silu
// CHECK-NEXT: rt.alloc offset 256 : memref<16xf32>
// CHECK-NEXT: rt.kernel add
rt.program @forward {
  %x = rt.input "x" : memref<4x4xf32>
  %a = rt.alloc : memref<4x4xf32>
  rt.kernel silu(%x) -> (%a) : memref<4x4xf32> -> memref<4x4xf32>
  %b = rt.alloc : memref<16xf32>
  rt.kernel copy(%a) -> (%b) : memref<4x4xf32> -> memref<16xf32>
  %c = rt.alloc : memref<2x8xf32>
  rt.kernel copy(%b) -> (%c) : memref<16xf32> -> memref<2x8xf32>
  %d = rt.alloc : memref<16xf32>
  rt.kernel silu(%b) -> (%d) : memref<16xf32> -> memref<16xf32>
  %e = rt.alloc : memref<16xf32>
  rt.kernel add(%d, %b) -> (%e) : memref<16xf32>, memref<16xf32> -> memref<16xf32>
  rt.output "e" %e : memref<16xf32>
  rt.output "c" %c : memref<2x8xf32>
}

// -----

// A GEMM that the CUDA device runs as one matmul with the next kernel's
// epilogue (linear_input_grad + gelu_grad of the tanh form): the fused
// matmul writes dA while it reads dY, so dY, which dies at the GEMM, is
// freed only after the pair. w [0, 2048), x [2048, 2176); k0: dy (256) at
// 2176; k1: dh (128) at 2432; k2: dy still held, dA (128) at 2560, the
// arena 2688. The lifetimes are unchanged: the peak is at k1, w + x + dy +
// dh = 2560 (at k2 dy is not live: 2432).
// CHECK-LABEL: module attributes {rt.arena_bytes = 2688 : i64, rt.planned_peak_bytes = 2560 : i64}
// CHECK: rt.alloc offset 2176 : memref<2x32xf32>
// CHECK: rt.alloc offset 2432 : memref<2x16xf32>
// CHECK: rt.alloc offset 2560 : memref<2x16xf32>
rt.program @train_step {
  %w = rt.param "w" hf_shape [16, 32] init normal : memref<16x32xf32>
  %x = rt.input "x" : memref<2x16xf32>
  %dy = rt.alloc : memref<2x32xf32>
  rt.kernel zeros() -> (%dy) : -> memref<2x32xf32>
  %dh = rt.alloc : memref<2x16xf32>
  rt.kernel linear_input_grad(%dy, %w) -> (%dh) : memref<2x32xf32>, memref<16x32xf32> -> memref<2x16xf32>
  %da = rt.alloc : memref<2x16xf32>
  rt.kernel gelu_grad(%dh, %x) -> (%da) flags 1 : memref<2x16xf32>, memref<2x16xf32> -> memref<2x16xf32>
  rt.output "da" %da : memref<2x16xf32>
}

// -----

// The erf form's pair is not fused (cuBLASLt's epilogue is the tanh form):
// dy is freed at k2 as usual and dA takes its bytes.
// CHECK-LABEL: module attributes {rt.arena_bytes = 2560 : i64, rt.planned_peak_bytes = 2560 : i64}
// CHECK: rt.alloc offset 2176 : memref<2x32xf32>
// CHECK: rt.alloc offset 2432 : memref<2x16xf32>
// CHECK: rt.alloc offset 2176 : memref<2x16xf32>
rt.program @train_step {
  %w = rt.param "w" hf_shape [16, 32] init normal : memref<16x32xf32>
  %x = rt.input "x" : memref<2x16xf32>
  %dy = rt.alloc : memref<2x32xf32>
  rt.kernel zeros() -> (%dy) : -> memref<2x32xf32>
  %dh = rt.alloc : memref<2x16xf32>
  rt.kernel linear_input_grad(%dy, %w) -> (%dh) : memref<2x32xf32>, memref<16x32xf32> -> memref<2x16xf32>
  %da = rt.alloc : memref<2x16xf32>
  rt.kernel gelu_grad(%dh, %x) -> (%da) : memref<2x16xf32>, memref<2x16xf32> -> memref<2x16xf32>
  rt.output "da" %da : memref<2x16xf32>
}

// -----

// The norm backward and its residual add (layer_norm_param_grad,
// layer_norm_input_grad of the same dY and x, add of the input gradient),
// which the CUDA device runs as one kernel writing z while it reads dY and
// x: dY and x, which die at the input gradient, are freed after the add.
// g [0, 64), r [64, 192); k0: dy at 192; k1: x at 320; k2: dg at 448, db at
// 512; k3: dx at 576; k4: dy and x still held, z at 704, the arena 832.
// Peak at k3: 64 + 128 + 128 + 128 + 64 + 64 + 128 = 704.
// CHECK-LABEL: module attributes {rt.arena_bytes = 832 : i64, rt.planned_peak_bytes = 704 : i64}
// CHECK: rt.alloc offset 576 : memref<2x16xf32>
// CHECK-NEXT: rt.kernel layer_norm_input_grad
// CHECK-NEXT: rt.alloc offset 704 : memref<2x16xf32>
// CHECK-NEXT: rt.kernel add
rt.program @train_step {
  %g = rt.param "g" hf_shape [16] init ones : memref<16xf32>
  %r = rt.input "r" : memref<2x16xf32>
  %dy = rt.alloc : memref<2x16xf32>
  rt.kernel zeros() -> (%dy) : -> memref<2x16xf32>
  %x = rt.alloc : memref<2x16xf32>
  rt.kernel zeros() -> (%x) : -> memref<2x16xf32>
  %dg = rt.alloc : memref<16xf32>
  %db = rt.alloc : memref<16xf32>
  rt.kernel layer_norm_param_grad(%dy, %x) -> (%dg, %db) floats [1.000000e-05] : memref<2x16xf32>, memref<2x16xf32> -> memref<16xf32>, memref<16xf32>
  %dx = rt.alloc : memref<2x16xf32>
  rt.kernel layer_norm_input_grad(%dy, %x, %g) -> (%dx) floats [1.000000e-05] : memref<2x16xf32>, memref<2x16xf32>, memref<16xf32> -> memref<2x16xf32>
  %z = rt.alloc : memref<2x16xf32>
  rt.kernel add(%dx, %r) -> (%z) : memref<2x16xf32>, memref<2x16xf32> -> memref<2x16xf32>
  rt.output "dg" %dg : memref<16xf32>
  rt.output "db" %db : memref<16xf32>
  rt.output "z" %z : memref<2x16xf32>
}

// -----

// The residual add with the next norm (apply_mask + add + layer_norm), which
// the CUDA device runs as one row kernel: r and d, which die in the run,
// are held to its end, but the norm writes each row after reading that
// row's operands and may lie on an operand's very bytes: y takes r's. w
// [0, 64), b [64, 128), x [128, 256); k0: r at 256; k1: m (32) at 384; k2:
// d at 448; k3: z at 576; k4: y at 256 (r's), the arena 704 (832 with y on
// bytes of its own). Peak at k2: 128 + 128 + 128 + 32 + 128 = 544.
// CHECK-LABEL: module attributes {rt.arena_bytes = 704 : i64, rt.planned_peak_bytes = 544 : i64}
// CHECK: rt.alloc offset 256 : memref<2x16xf32>
// CHECK-NEXT: rt.kernel silu
// CHECK: rt.alloc offset 576 : memref<2x16xf32>
// CHECK-NEXT: rt.kernel add
// CHECK-NEXT: rt.alloc offset 256 : memref<2x16xf32>
// CHECK-NEXT: rt.kernel layer_norm
rt.program @train_step {
  %w = rt.param "w" hf_shape [16] init ones : memref<16xf32>
  %b = rt.param "b" hf_shape [16] init zeros : memref<16xf32>
  %x = rt.input "x" : memref<2x16xf32>
  %r = rt.alloc : memref<2x16xf32>
  rt.kernel silu(%x) -> (%r) : memref<2x16xf32> -> memref<2x16xf32>
  %m = rt.alloc : memref<2x16xi8>
  rt.kernel dropout_mask() -> (%m) ints [0, 0] floats [1.000000e-01] : -> memref<2x16xi8>
  %d = rt.alloc : memref<2x16xf32>
  rt.kernel apply_mask(%r, %m) -> (%d) floats [1.000000e-01] : memref<2x16xf32>, memref<2x16xi8> -> memref<2x16xf32>
  %z = rt.alloc : memref<2x16xf32>
  rt.kernel add(%x, %d) -> (%z) : memref<2x16xf32>, memref<2x16xf32> -> memref<2x16xf32>
  %y = rt.alloc : memref<2x16xf32>
  rt.kernel layer_norm(%z, %w, %b) -> (%y) floats [1.000000e-05] : memref<2x16xf32>, memref<16xf32>, memref<16xf32> -> memref<2x16xf32>
  rt.output "z" %z : memref<2x16xf32>
  rt.output "y" %y : memref<2x16xf32>
}

// -----

// The same run where r lives on (an output): y takes d's bytes (the add's
// operand, which dies at the add; the fused kernel never writes it), 448.
// CHECK-LABEL: module attributes {rt.arena_bytes = 704 : i64, rt.planned_peak_bytes = 640 : i64}
// CHECK: rt.kernel add
// CHECK-NEXT: rt.alloc offset 448 : memref<2x16xf32>
// CHECK-NEXT: rt.kernel layer_norm
rt.program @train_step {
  %w = rt.param "w" hf_shape [16] init ones : memref<16xf32>
  %b = rt.param "b" hf_shape [16] init zeros : memref<16xf32>
  %x = rt.input "x" : memref<2x16xf32>
  %r = rt.alloc : memref<2x16xf32>
  rt.kernel silu(%x) -> (%r) : memref<2x16xf32> -> memref<2x16xf32>
  %m = rt.alloc : memref<2x16xi8>
  rt.kernel dropout_mask() -> (%m) ints [0, 0] floats [1.000000e-01] : -> memref<2x16xi8>
  %d = rt.alloc : memref<2x16xf32>
  rt.kernel apply_mask(%r, %m) -> (%d) floats [1.000000e-01] : memref<2x16xf32>, memref<2x16xi8> -> memref<2x16xf32>
  %z = rt.alloc : memref<2x16xf32>
  rt.kernel add(%x, %d) -> (%z) : memref<2x16xf32>, memref<2x16xf32> -> memref<2x16xf32>
  %y = rt.alloc : memref<2x16xf32>
  rt.kernel layer_norm(%z, %w, %b) -> (%y) floats [1.000000e-05] : memref<2x16xf32>, memref<16xf32>, memref<16xf32> -> memref<2x16xf32>
  rt.output "z" %z : memref<2x16xf32>
  rt.output "y" %y : memref<2x16xf32>
  rt.output "r" %r : memref<2x16xf32>
}

// -----

// A collective runs on a stream of its own (the CUDA device) until the
// first kernel reading its result waits for it: its operand a, which dies
// at the gather (k1), is freed only before that reader (k4), so that the
// kernels between (k2, k3) do not write over bytes the gather still reads.
// x [0, 128); k0: a at 128; k1: g (256) at 256; k2: b at 512, not on a's
// bytes; k3: c at 640; k4: d (256) at 768 (a's 128 bytes too few), the
// arena 1024. The lifetimes are unchanged: the peak is at k4, x + g + c +
// d = 768.
// CHECK-LABEL: module attributes {rt.arena_bytes = 1024 : i64, rt.planned_peak_bytes = 768 : i64}
// CHECK: rt.alloc offset 128 : memref<2x16xf32>
// CHECK: rt.alloc offset 256 : memref<4x16xf32>
// CHECK: rt.alloc offset 512 : memref<2x16xf32>
// CHECK: rt.alloc offset 640 : memref<2x16xf32>
// CHECK: rt.alloc offset 768 : memref<4x16xf32>
rt.program @train_step mesh [tp = 2] {
  %x = rt.input "x" : memref<2x16xf32>
  %a = rt.alloc : memref<2x16xf32>
  rt.kernel silu(%x) -> (%a) : memref<2x16xf32> -> memref<2x16xf32>
  %g = rt.alloc : memref<4x16xf32>
  rt.kernel all_gather(%a) -> (%g) ints [0, 0] : memref<2x16xf32> -> memref<4x16xf32>
  %b = rt.alloc : memref<2x16xf32>
  rt.kernel silu(%x) -> (%b) : memref<2x16xf32> -> memref<2x16xf32>
  %c = rt.alloc : memref<2x16xf32>
  rt.kernel silu(%b) -> (%c) : memref<2x16xf32> -> memref<2x16xf32>
  %d = rt.alloc : memref<4x16xf32>
  rt.kernel add(%g, %g) -> (%d) : memref<4x16xf32>, memref<4x16xf32> -> memref<4x16xf32>
  rt.output "c" %c : memref<2x16xf32>
  rt.output "d" %d : memref<4x16xf32>
}
