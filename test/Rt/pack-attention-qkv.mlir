// rt-pack-attention-qkv: q, k and v cut out of one [b, s, 3, heads, d]
// tensor (a slice of dim 2 and a reshaping copy each) for sequence-major
// attention kernels whose gradients are put together again (a reshaping
// copy each and a concat) become attention_qkv of the tensor and
// attention_qkv_grad into the concat's result; the slices, copies, concats
// and their buffers go. Anything else reading q, k or v, or gradients that
// do not end in such a concat, leave the kernels as they are.
// RUN: tpc-opt %s --split-input-file --rt-pack-attention-qkv | FileCheck %s

// GPT-2's pattern (the forward, a recomputation of it, the gradient with
// the concat's buffer declared after it); the attributes but the
// sequence-major flag are kept.
// CHECK-LABEL: rt.program @train_step
// CHECK: %[[X:.*]] = rt.alloc : memref<2x5x3x4x8xf32>
// CHECK-NEXT: rt.kernel linear(%{{.*}}, %{{.*}}) -> (%[[X]])
// CHECK-NEXT: %[[O:.*]] = rt.alloc : memref<2x5x4x8xf32>
// CHECK-NEXT: rt.kernel attention_qkv(%[[X]]) -> (%[[O]]) ints [7, 0] floats [2.500000e-01, 1.000000e-01] flags 1 {phase = "F"} : memref<2x5x3x4x8xf32> -> memref<2x5x4x8xf32>
// CHECK-NEXT: %[[O2:.*]] = rt.alloc : memref<2x5x4x8xf32>
// CHECK-NEXT: rt.kernel attention_qkv(%[[X]]) -> (%[[O2]]) ints [7, 0]
// CHECK-NEXT: %[[DX:.*]] = rt.alloc : memref<2x5x3x4x8xf32>
// CHECK-NEXT: rt.kernel attention_qkv_grad(%[[DO:.*]], %[[X]]) -> (%[[DX]]) ints [7, 0] floats [2.500000e-01, 1.000000e-01] flags 1 : memref<2x5x4x8xf32>, memref<2x5x3x4x8xf32> -> memref<2x5x3x4x8xf32>
// CHECK-NEXT: rt.output "dx" %[[DX]]
// CHECK-NOT: slice
// CHECK-NOT: copy
// CHECK-NOT: concat
rt.program @train_step {
  %in = rt.input "in" : memref<2x5x16xf32>
  %w = rt.param "w" hf_shape [16, 96] init normal : memref<16x3x4x8xf32>
  %dO = rt.input "dO" : memref<2x5x4x8xf32>
  %x = rt.alloc : memref<2x5x3x4x8xf32>
  rt.kernel linear(%in, %w) -> (%x) : memref<2x5x16xf32>, memref<16x3x4x8xf32> -> memref<2x5x3x4x8xf32>
  %q1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel slice(%x) -> (%q1) ints [2, 0, 1] : memref<2x5x3x4x8xf32> -> memref<2x5x1x4x8xf32>
  %q = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel copy(%q1) -> (%q) : memref<2x5x1x4x8xf32> -> memref<2x5x4x8xf32>
  %k1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel slice(%x) -> (%k1) ints [2, 1, 1] : memref<2x5x3x4x8xf32> -> memref<2x5x1x4x8xf32>
  %k = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel copy(%k1) -> (%k) : memref<2x5x1x4x8xf32> -> memref<2x5x4x8xf32>
  %v1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel slice(%x) -> (%v1) ints [2, 2, 1] : memref<2x5x3x4x8xf32> -> memref<2x5x1x4x8xf32>
  %v = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel copy(%v1) -> (%v) : memref<2x5x1x4x8xf32> -> memref<2x5x4x8xf32>
  %o = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel attention(%q, %k, %v) -> (%o) ints [7, 0] floats [0.25, 0.1] flags 3 {phase = "F"} : memref<2x5x4x8xf32>, memref<2x5x4x8xf32>, memref<2x5x4x8xf32> -> memref<2x5x4x8xf32>
  %o2 = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel attention(%q, %k, %v) -> (%o2) ints [7, 0] floats [0.25, 0.1] flags 3 : memref<2x5x4x8xf32>, memref<2x5x4x8xf32>, memref<2x5x4x8xf32> -> memref<2x5x4x8xf32>
  %dq = rt.alloc : memref<2x5x4x8xf32>
  %dk = rt.alloc : memref<2x5x4x8xf32>
  %dv = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel attention_grad(%dO, %q, %k, %v) -> (%dq, %dk, %dv) ints [7, 0] floats [0.25, 0.1] flags 3 : memref<2x5x4x8xf32>, memref<2x5x4x8xf32>, memref<2x5x4x8xf32>, memref<2x5x4x8xf32> -> memref<2x5x4x8xf32>, memref<2x5x4x8xf32>, memref<2x5x4x8xf32>
  %dv1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel copy(%dv) -> (%dv1) : memref<2x5x4x8xf32> -> memref<2x5x1x4x8xf32>
  %dk1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel copy(%dk) -> (%dk1) : memref<2x5x4x8xf32> -> memref<2x5x1x4x8xf32>
  %dq1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel copy(%dq) -> (%dq1) : memref<2x5x4x8xf32> -> memref<2x5x1x4x8xf32>
  %dx = rt.alloc : memref<2x5x3x4x8xf32>
  rt.kernel concat(%dq1, %dk1, %dv1) -> (%dx) ints [2] : memref<2x5x1x4x8xf32>, memref<2x5x1x4x8xf32>, memref<2x5x1x4x8xf32> -> memref<2x5x3x4x8xf32>
  rt.output "dx" %dx : memref<2x5x3x4x8xf32>
  rt.output "o" %o : memref<2x5x4x8xf32>
  rt.output "o2" %o2 : memref<2x5x4x8xf32>
}

// -----

// On a mesh: the gradient's splits gain the whole parts' dimension.
// CHECK-LABEL: rt.program @train_step mesh [tp = 2]
// CHECK: rt.kernel attention_qkv(%{{.*}}) -> (%{{.*}}) ints [3] floats [5.000000e-01, 0.000000e+00] flags 1 splits {{\[}}[], [], [tp], []]
// CHECK: rt.kernel attention_qkv_grad(%{{.*}}, %{{.*}}) -> (%{{.*}}) ints [3] floats [5.000000e-01, 0.000000e+00] flags 1 splits {{\[}}[], [], [], [tp], []]
rt.program @train_step mesh [tp = 2] {
  %in = rt.input "x" : memref<2x5x3x4x8xbf16>
  %x = rt.alloc : memref<2x5x3x4x8xbf16>
  rt.kernel copy(%in) -> (%x) : memref<2x5x3x4x8xbf16> -> memref<2x5x3x4x8xbf16>
  %dO = rt.input "dO" : memref<2x5x4x8xbf16>
  %q1 = rt.alloc : memref<2x5x1x4x8xbf16>
  rt.kernel slice(%x) -> (%q1) ints [2, 0, 1] : memref<2x5x3x4x8xbf16> -> memref<2x5x1x4x8xbf16>
  %q = rt.alloc : memref<2x5x4x8xbf16>
  rt.kernel copy(%q1) -> (%q) : memref<2x5x1x4x8xbf16> -> memref<2x5x4x8xbf16>
  %k1 = rt.alloc : memref<2x5x1x4x8xbf16>
  rt.kernel slice(%x) -> (%k1) ints [2, 1, 1] : memref<2x5x3x4x8xbf16> -> memref<2x5x1x4x8xbf16>
  %k = rt.alloc : memref<2x5x4x8xbf16>
  rt.kernel copy(%k1) -> (%k) : memref<2x5x1x4x8xbf16> -> memref<2x5x4x8xbf16>
  %v1 = rt.alloc : memref<2x5x1x4x8xbf16>
  rt.kernel slice(%x) -> (%v1) ints [2, 2, 1] : memref<2x5x3x4x8xbf16> -> memref<2x5x1x4x8xbf16>
  %v = rt.alloc : memref<2x5x4x8xbf16>
  rt.kernel copy(%v1) -> (%v) : memref<2x5x1x4x8xbf16> -> memref<2x5x4x8xbf16>
  %o = rt.alloc : memref<2x5x4x8xbf16>
  rt.kernel attention(%q, %k, %v) -> (%o) ints [3] floats [0.5, 0.0] flags 3 splits [[], [], [tp], []] : memref<2x5x4x8xbf16>, memref<2x5x4x8xbf16>, memref<2x5x4x8xbf16> -> memref<2x5x4x8xbf16>
  %dq = rt.alloc : memref<2x5x4x8xbf16>
  %dk = rt.alloc : memref<2x5x4x8xbf16>
  %dv = rt.alloc : memref<2x5x4x8xbf16>
  rt.kernel attention_grad(%dO, %q, %k, %v) -> (%dq, %dk, %dv) ints [3] floats [0.5, 0.0] flags 3 splits [[], [], [tp], []] : memref<2x5x4x8xbf16>, memref<2x5x4x8xbf16>, memref<2x5x4x8xbf16>, memref<2x5x4x8xbf16> -> memref<2x5x4x8xbf16>, memref<2x5x4x8xbf16>, memref<2x5x4x8xbf16>
  %dq1 = rt.alloc : memref<2x5x1x4x8xbf16>
  rt.kernel copy(%dq) -> (%dq1) : memref<2x5x4x8xbf16> -> memref<2x5x1x4x8xbf16>
  %dk1 = rt.alloc : memref<2x5x1x4x8xbf16>
  rt.kernel copy(%dk) -> (%dk1) : memref<2x5x4x8xbf16> -> memref<2x5x1x4x8xbf16>
  %dv1 = rt.alloc : memref<2x5x1x4x8xbf16>
  rt.kernel copy(%dv) -> (%dv1) : memref<2x5x4x8xbf16> -> memref<2x5x1x4x8xbf16>
  %dx = rt.alloc : memref<2x5x3x4x8xbf16>
  rt.kernel concat(%dq1, %dk1, %dv1) -> (%dx) ints [2] : memref<2x5x1x4x8xbf16>, memref<2x5x1x4x8xbf16>, memref<2x5x1x4x8xbf16> -> memref<2x5x3x4x8xbf16>
  rt.output "dx" %dx : memref<2x5x3x4x8xbf16>
  rt.output "o" %o : memref<2x5x4x8xbf16>
}

// -----

// Left alone: q also read by another kernel; k and v swapped in the
// concat; a head-major attention ([b, heads, s, d] operands are no reshaped
// part); parts of two tensors.
// CHECK-LABEL: rt.program @train_step
// CHECK-NOT: attention_qkv
rt.program @train_step {
  %xin = rt.input "x" : memref<2x5x3x4x8xf32>
  %x = rt.alloc : memref<2x5x3x4x8xf32>
  rt.kernel copy(%xin) -> (%x) : memref<2x5x3x4x8xf32> -> memref<2x5x3x4x8xf32>
  %yin = rt.input "y" : memref<2x5x3x4x8xf32>
  %y = rt.alloc : memref<2x5x3x4x8xf32>
  rt.kernel copy(%yin) -> (%y) : memref<2x5x3x4x8xf32> -> memref<2x5x3x4x8xf32>
  %dO = rt.input "dO" : memref<2x5x4x8xf32>
  // q read by a copy too.
  %q1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel slice(%x) -> (%q1) ints [2, 0, 1] : memref<2x5x3x4x8xf32> -> memref<2x5x1x4x8xf32>
  %q = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel copy(%q1) -> (%q) : memref<2x5x1x4x8xf32> -> memref<2x5x4x8xf32>
  %k1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel slice(%x) -> (%k1) ints [2, 1, 1] : memref<2x5x3x4x8xf32> -> memref<2x5x1x4x8xf32>
  %k = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel copy(%k1) -> (%k) : memref<2x5x1x4x8xf32> -> memref<2x5x4x8xf32>
  %v1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel slice(%x) -> (%v1) ints [2, 2, 1] : memref<2x5x3x4x8xf32> -> memref<2x5x1x4x8xf32>
  %v = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel copy(%v1) -> (%v) : memref<2x5x1x4x8xf32> -> memref<2x5x4x8xf32>
  %o = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel attention(%q, %k, %v) -> (%o) ints [7] floats [0.25, 0.0] flags 3 : memref<2x5x4x8xf32>, memref<2x5x4x8xf32>, memref<2x5x4x8xf32> -> memref<2x5x4x8xf32>
  %qc = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel copy(%q) -> (%qc) : memref<2x5x4x8xf32> -> memref<2x5x4x8xf32>
  // Gradients concatenated as q, v, k.
  %a1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel slice(%y) -> (%a1) ints [2, 0, 1] : memref<2x5x3x4x8xf32> -> memref<2x5x1x4x8xf32>
  %a = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel copy(%a1) -> (%a) : memref<2x5x1x4x8xf32> -> memref<2x5x4x8xf32>
  %b1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel slice(%y) -> (%b1) ints [2, 1, 1] : memref<2x5x3x4x8xf32> -> memref<2x5x1x4x8xf32>
  %b = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel copy(%b1) -> (%b) : memref<2x5x1x4x8xf32> -> memref<2x5x4x8xf32>
  %c1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel slice(%y) -> (%c1) ints [2, 2, 1] : memref<2x5x3x4x8xf32> -> memref<2x5x1x4x8xf32>
  %c = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel copy(%c1) -> (%c) : memref<2x5x1x4x8xf32> -> memref<2x5x4x8xf32>
  %o2 = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel attention(%a, %b, %c) -> (%o2) ints [7] floats [0.25, 0.0] flags 3 : memref<2x5x4x8xf32>, memref<2x5x4x8xf32>, memref<2x5x4x8xf32> -> memref<2x5x4x8xf32>
  %da = rt.alloc : memref<2x5x4x8xf32>
  %db = rt.alloc : memref<2x5x4x8xf32>
  %dc = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel attention_grad(%dO, %a, %b, %c) -> (%da, %db, %dc) ints [7] floats [0.25, 0.0] flags 3 : memref<2x5x4x8xf32>, memref<2x5x4x8xf32>, memref<2x5x4x8xf32>, memref<2x5x4x8xf32> -> memref<2x5x4x8xf32>, memref<2x5x4x8xf32>, memref<2x5x4x8xf32>
  %da1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel copy(%da) -> (%da1) : memref<2x5x4x8xf32> -> memref<2x5x1x4x8xf32>
  %db1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel copy(%db) -> (%db1) : memref<2x5x4x8xf32> -> memref<2x5x1x4x8xf32>
  %dc1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel copy(%dc) -> (%dc1) : memref<2x5x4x8xf32> -> memref<2x5x1x4x8xf32>
  %dy = rt.alloc : memref<2x5x3x4x8xf32>
  rt.kernel concat(%da1, %dc1, %db1) -> (%dy) ints [2] : memref<2x5x1x4x8xf32>, memref<2x5x1x4x8xf32>, memref<2x5x1x4x8xf32> -> memref<2x5x3x4x8xf32>
  // Head-major.
  %e = rt.input "e" : memref<2x4x5x8xf32>
  %oe = rt.alloc : memref<2x4x5x8xf32>
  rt.kernel attention(%e, %e, %e) -> (%oe) ints [7] floats [0.25, 0.0] flags 1 : memref<2x4x5x8xf32>, memref<2x4x5x8xf32>, memref<2x4x5x8xf32> -> memref<2x4x5x8xf32>
  // Parts of x and y.
  %o3 = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel attention(%q, %b, %c) -> (%o3) ints [7] floats [0.25, 0.0] flags 3 : memref<2x5x4x8xf32>, memref<2x5x4x8xf32>, memref<2x5x4x8xf32> -> memref<2x5x4x8xf32>
  rt.output "o" %o : memref<2x5x4x8xf32>
  rt.output "o2" %o2 : memref<2x5x4x8xf32>
  rt.output "o3" %o3 : memref<2x5x4x8xf32>
  rt.output "qc" %qc : memref<2x5x4x8xf32>
  rt.output "dy" %dy : memref<2x5x3x4x8xf32>
  rt.output "oe" %oe : memref<2x4x5x8xf32>
}

// -----

// A program of actions: q, k and v are the stash (pool 0) from F to B; the
// tensor takes their pool, and the functions shrink to the kernels left.
// CHECK-LABEL: rt.program @stash
// CHECK-SAME: functions = [{count = 2 : i64, first = 0 : i64, name = "F"}, {count = 1 : i64, first = 2 : i64, name = "B"}]
// CHECK: %[[X:.*]] = rt.alloc pool 0 : memref<2x5x3x4x8xf32>
// CHECK: rt.kernel attention_qkv(%[[X]])
// CHECK: rt.kernel attention_qkv_grad(%{{.*}}, %[[X]])
rt.program @stash attributes {
    functions = [{name = "F", first = 0, count = 8}, {name = "B", first = 8, count = 5}],
    pools = [{slots = 2}, {slots = 2}],
    actions = array<i64: 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1>} {
  %in = rt.input "in" microbatches 2 : memref<2x5x16xf32>
  %w = rt.param "w" hf_shape [16, 96] init normal : memref<16x3x4x8xf32>
  %dO = rt.input "dO" microbatches 2 : memref<2x5x4x8xf32>
  %x = rt.alloc : memref<2x5x3x4x8xf32>
  rt.kernel linear(%in, %w) -> (%x) : memref<2x5x16xf32>, memref<16x3x4x8xf32> -> memref<2x5x3x4x8xf32>
  %q1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel slice(%x) -> (%q1) ints [2, 0, 1] : memref<2x5x3x4x8xf32> -> memref<2x5x1x4x8xf32>
  %q = rt.alloc pool 0 : memref<2x5x4x8xf32>
  rt.kernel copy(%q1) -> (%q) : memref<2x5x1x4x8xf32> -> memref<2x5x4x8xf32>
  %k1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel slice(%x) -> (%k1) ints [2, 1, 1] : memref<2x5x3x4x8xf32> -> memref<2x5x1x4x8xf32>
  %k = rt.alloc pool 0 : memref<2x5x4x8xf32>
  rt.kernel copy(%k1) -> (%k) : memref<2x5x1x4x8xf32> -> memref<2x5x4x8xf32>
  %v1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel slice(%x) -> (%v1) ints [2, 2, 1] : memref<2x5x3x4x8xf32> -> memref<2x5x1x4x8xf32>
  %v = rt.alloc pool 0 : memref<2x5x4x8xf32>
  rt.kernel copy(%v1) -> (%v) : memref<2x5x1x4x8xf32> -> memref<2x5x4x8xf32>
  %o = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel attention(%q, %k, %v) -> (%o) ints [7, 0] floats [0.25, 0.1] flags 3 : memref<2x5x4x8xf32>, memref<2x5x4x8xf32>, memref<2x5x4x8xf32> -> memref<2x5x4x8xf32>
  %dq = rt.alloc : memref<2x5x4x8xf32>
  %dk = rt.alloc : memref<2x5x4x8xf32>
  %dv = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel attention_grad(%dO, %q, %k, %v) -> (%dq, %dk, %dv) ints [7, 0] floats [0.25, 0.1] flags 3 : memref<2x5x4x8xf32>, memref<2x5x4x8xf32>, memref<2x5x4x8xf32>, memref<2x5x4x8xf32> -> memref<2x5x4x8xf32>, memref<2x5x4x8xf32>, memref<2x5x4x8xf32>
  %dq1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel copy(%dq) -> (%dq1) : memref<2x5x4x8xf32> -> memref<2x5x1x4x8xf32>
  %dk1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel copy(%dk) -> (%dk1) : memref<2x5x4x8xf32> -> memref<2x5x1x4x8xf32>
  %dv1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel copy(%dv) -> (%dv1) : memref<2x5x4x8xf32> -> memref<2x5x1x4x8xf32>
  %dx = rt.alloc : memref<2x5x3x4x8xf32>
  rt.kernel concat(%dq1, %dk1, %dv1) -> (%dx) ints [2] : memref<2x5x1x4x8xf32>, memref<2x5x1x4x8xf32>, memref<2x5x1x4x8xf32> -> memref<2x5x3x4x8xf32>
  rt.output "dx" %dx : memref<2x5x3x4x8xf32>
  rt.output "o" %o : memref<2x5x4x8xf32>
}

// -----

// The tensor already in another pool than q, k and v: left alone.
// CHECK-LABEL: rt.program @other_pool
// CHECK-NOT: attention_qkv
rt.program @other_pool attributes {
    functions = [{name = "F", first = 0, count = 8}, {name = "B", first = 8, count = 5}],
    pools = [{slots = 2}, {slots = 2}],
    actions = array<i64: 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1>} {
  %in = rt.input "in" microbatches 2 : memref<2x5x16xf32>
  %w = rt.param "w" hf_shape [16, 96] init normal : memref<16x3x4x8xf32>
  %dO = rt.input "dO" microbatches 2 : memref<2x5x4x8xf32>
  %x = rt.alloc pool 1 : memref<2x5x3x4x8xf32>
  rt.kernel linear(%in, %w) -> (%x) : memref<2x5x16xf32>, memref<16x3x4x8xf32> -> memref<2x5x3x4x8xf32>
  %q1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel slice(%x) -> (%q1) ints [2, 0, 1] : memref<2x5x3x4x8xf32> -> memref<2x5x1x4x8xf32>
  %q = rt.alloc pool 0 : memref<2x5x4x8xf32>
  rt.kernel copy(%q1) -> (%q) : memref<2x5x1x4x8xf32> -> memref<2x5x4x8xf32>
  %k1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel slice(%x) -> (%k1) ints [2, 1, 1] : memref<2x5x3x4x8xf32> -> memref<2x5x1x4x8xf32>
  %k = rt.alloc pool 0 : memref<2x5x4x8xf32>
  rt.kernel copy(%k1) -> (%k) : memref<2x5x1x4x8xf32> -> memref<2x5x4x8xf32>
  %v1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel slice(%x) -> (%v1) ints [2, 2, 1] : memref<2x5x3x4x8xf32> -> memref<2x5x1x4x8xf32>
  %v = rt.alloc pool 0 : memref<2x5x4x8xf32>
  rt.kernel copy(%v1) -> (%v) : memref<2x5x1x4x8xf32> -> memref<2x5x4x8xf32>
  %o = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel attention(%q, %k, %v) -> (%o) ints [7, 0] floats [0.25, 0.1] flags 3 : memref<2x5x4x8xf32>, memref<2x5x4x8xf32>, memref<2x5x4x8xf32> -> memref<2x5x4x8xf32>
  %dq = rt.alloc : memref<2x5x4x8xf32>
  %dk = rt.alloc : memref<2x5x4x8xf32>
  %dv = rt.alloc : memref<2x5x4x8xf32>
  rt.kernel attention_grad(%dO, %q, %k, %v) -> (%dq, %dk, %dv) ints [7, 0] floats [0.25, 0.1] flags 3 : memref<2x5x4x8xf32>, memref<2x5x4x8xf32>, memref<2x5x4x8xf32>, memref<2x5x4x8xf32> -> memref<2x5x4x8xf32>, memref<2x5x4x8xf32>, memref<2x5x4x8xf32>
  %dq1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel copy(%dq) -> (%dq1) : memref<2x5x4x8xf32> -> memref<2x5x1x4x8xf32>
  %dk1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel copy(%dk) -> (%dk1) : memref<2x5x4x8xf32> -> memref<2x5x1x4x8xf32>
  %dv1 = rt.alloc : memref<2x5x1x4x8xf32>
  rt.kernel copy(%dv) -> (%dv1) : memref<2x5x4x8xf32> -> memref<2x5x1x4x8xf32>
  %dx = rt.alloc : memref<2x5x3x4x8xf32>
  rt.kernel concat(%dq1, %dk1, %dv1) -> (%dx) ints [2] : memref<2x5x1x4x8xf32>, memref<2x5x1x4x8xf32>, memref<2x5x1x4x8xf32> -> memref<2x5x3x4x8xf32>
  rt.output "dx" %dx : memref<2x5x3x4x8xf32>
  rt.output "o" %o : memref<2x5x4x8xf32>
}
