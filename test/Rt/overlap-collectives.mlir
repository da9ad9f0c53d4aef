// rt-overlap-collectives: the kernels between a collective of a buffer
// they compute (or a reduction of one they do not) and the communication
// before it that it does not wait for (nor they for it) move to just
// after it, in their order, fused runs whole: a backward's weight
// gradients then run while the input gradient's reduction does.
// RUN: tpc-opt %s --split-input-file --rt-overlap-collectives | FileCheck %s

// A column-parallel layer's backward (tp = 2): the weight gradient with the
// sum_to of its dY (one fused run) and the bias sum's add do not touch the
// all_reduce's operand chain (the input gradient, the norm's backward, the
// dropout mask): they move past it, before its reader. The norm's
// parameter gradient is fused with its input gradient, which the reduction
// needs: it stays with it, and the add of its result moves.
// The first reduction reduces a buffer no kernel before it writes (an
// earlier function's, as a deferred W's first reduces what B left
// partial): the kernels before it move past it too (the zeros).
// CHECK-LABEL: rt.program @train_step mesh [tp = 2]
// CHECK: rt.kernel all_reduce
// CHECK: rt.kernel zeros()
// CHECK-NEXT: rt.kernel zeros()
// CHECK-NEXT: rt.kernel zeros()
// CHECK-NEXT: rt.kernel linear_input_grad(%[[DY:.*]], %[[W:.*]]) -> (%[[DX:.*]])
// CHECK-NEXT: rt.kernel layer_norm_param_grad(%[[DX]], %[[X:.*]]) -> (%[[DG:.*]], %[[DB:.*]])
// CHECK-NEXT: rt.kernel layer_norm_input_grad(%[[DX]], %[[X]], %{{.*}}) -> (%[[DN:.*]])
// CHECK-NEXT: rt.kernel apply_mask(%[[DN]], %{{.*}}) -> (%[[DM:.*]])
// CHECK-NEXT: rt.kernel all_reduce(%[[DM]]) -> (%[[R:.*]]) ints [0]
// CHECK-NEXT: rt.kernel linear_weight_grad_accumulate(%{{.*}}, %[[DY]], %[[WS:.*]]) -> (%[[WS]])
// CHECK-NEXT: rt.kernel sum_to(%[[DY]]) -> (%[[BT:.*]])
// CHECK-NEXT: rt.kernel add(%[[BS:.*]], %[[BT]]) -> (%[[BS]])
// CHECK-NEXT: rt.kernel add(%[[GS:.*]], %[[DG]]) -> (%[[GS]])
// CHECK-NEXT: rt.kernel silu(%[[R]])
rt.program @train_step mesh [tp = 2] {
  %x = rt.input "x" : memref<4x8xf32>
  %dy = rt.input "dy" : memref<4x6xf32>
  %m = rt.input "m" : memref<4x8xi8>
  %w = rt.input "w" : memref<8x6xf32>
  %g = rt.input "g" : memref<8xf32>
  %ws = rt.alloc : memref<8x6xf32>
  %bs = rt.alloc : memref<6xf32>
  %gs = rt.alloc : memref<8xf32>
  %first = rt.alloc : memref<4x8xf32>
  %bt = rt.alloc : memref<6xf32>
  %dx = rt.alloc : memref<4x8xf32>
  %dg = rt.alloc : memref<8xf32>
  %db = rt.alloc : memref<8xf32>
  %dn = rt.alloc : memref<4x8xf32>
  %dm = rt.alloc : memref<4x8xf32>
  %r = rt.alloc : memref<4x8xf32>
  %s = rt.alloc : memref<4x8xf32>
  rt.kernel zeros() -> (%ws) :  -> memref<8x6xf32>
  rt.kernel zeros() -> (%bs) :  -> memref<6xf32>
  rt.kernel zeros() -> (%gs) :  -> memref<8xf32>
  rt.kernel all_reduce(%x) -> (%first) ints [0] : memref<4x8xf32> -> memref<4x8xf32>
  rt.kernel linear_weight_grad_accumulate(%first, %dy, %ws) -> (%ws) : memref<4x8xf32>, memref<4x6xf32>, memref<8x6xf32> -> memref<8x6xf32>
  rt.kernel sum_to(%dy) -> (%bt) : memref<4x6xf32> -> memref<6xf32>
  rt.kernel add(%bs, %bt) -> (%bs) : memref<6xf32>, memref<6xf32> -> memref<6xf32>
  rt.kernel linear_input_grad(%dy, %w) -> (%dx) : memref<4x6xf32>, memref<8x6xf32> -> memref<4x8xf32>
  rt.kernel layer_norm_param_grad(%dx, %first) -> (%dg, %db) floats [1.0e-5] : memref<4x8xf32>, memref<4x8xf32> -> memref<8xf32>, memref<8xf32>
  rt.kernel layer_norm_input_grad(%dx, %first, %g) -> (%dn) floats [1.0e-5] : memref<4x8xf32>, memref<4x8xf32>, memref<8xf32> -> memref<4x8xf32>
  rt.kernel add(%gs, %dg) -> (%gs) : memref<8xf32>, memref<8xf32> -> memref<8xf32>
  rt.kernel apply_mask(%dn, %m) -> (%dm) floats [0.1] : memref<4x8xf32>, memref<4x8xi8> -> memref<4x8xf32>
  rt.kernel all_reduce(%dm) -> (%r) ints [0] : memref<4x8xf32> -> memref<4x8xf32>
  rt.kernel silu(%r) -> (%s) : memref<4x8xf32> -> memref<4x8xf32>
  rt.output "s" %s : memref<4x8xf32>
  rt.output "ws" %ws : memref<8x6xf32>
  rt.output "bs" %bs : memref<6xf32>
  rt.output "gs" %gs : memref<8xf32>
  rt.output "db" %db : memref<8xf32>
}

// -----

// What stays behind keeps what it needs before it: a kernel that reads a
// buffer before a staying kernel writes it in place, one whose result the
// collective's chain reads, and one that writes a buffer a staying kernel
// writes again stay; the others move. The moved kernels go after a gather
// issued right after the reduction (prefetched) that they do not touch; a
// later gather of what they compute (not issued with the reduction) stays
// after them.
// CHECK-LABEL: rt.program @train_step mesh [tp = 2]
// CHECK: rt.kernel all_reduce(%{{.*}}) -> (%[[A:.*]]) ints [0]
// CHECK-NEXT: %[[B:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel silu(%[[A]]) -> (%[[B]])
// CHECK-NEXT: %[[READ:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel copy(%[[B]]) -> (%[[READ]])
// CHECK-NEXT: %[[USED:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel silu(%[[B]]) -> (%[[USED]])
// CHECK-NEXT: %[[SAME:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel silu(%[[A]]) -> (%[[SAME]])
// CHECK-NEXT: %[[FREE:.*]] = rt.alloc
// CHECK-NEXT: %[[FREE2:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel add(%[[B]], %[[USED]]) -> (%[[B]])
// CHECK-NEXT: rt.kernel copy(%[[B]]) -> (%[[SAME]])
// CHECK-NEXT: %[[R:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel all_reduce(%[[SAME]]) -> (%[[R]]) ints [0]
// CHECK-NEXT: %[[GA:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel all_gather(%[[A]]) -> (%[[GA]]) ints [0, 0]
// CHECK-NEXT: rt.kernel silu(%[[A]]) -> (%[[FREE]])
// CHECK-NEXT: rt.kernel silu(%[[FREE]]) -> (%[[FREE2]])
// CHECK-NEXT: %{{.*}} = rt.alloc
// CHECK-NEXT: rt.kernel silu(%[[R]])
// CHECK-NEXT: %[[GB:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel all_gather(%[[FREE2]]) -> (%[[GB]]) ints [0, 0]
rt.program @train_step mesh [tp = 2] {
  %x = rt.input "x" : memref<4x8xf32>
  %a = rt.alloc : memref<4x8xf32>
  rt.kernel all_reduce(%x) -> (%a) ints [0] : memref<4x8xf32> -> memref<4x8xf32>
  %b = rt.alloc : memref<4x8xf32>
  rt.kernel silu(%a) -> (%b) : memref<4x8xf32> -> memref<4x8xf32>
  %read = rt.alloc : memref<4x8xf32>
  rt.kernel copy(%b) -> (%read) : memref<4x8xf32> -> memref<4x8xf32>
  %used = rt.alloc : memref<4x8xf32>
  rt.kernel silu(%b) -> (%used) : memref<4x8xf32> -> memref<4x8xf32>
  %same = rt.alloc : memref<4x8xf32>
  rt.kernel silu(%a) -> (%same) : memref<4x8xf32> -> memref<4x8xf32>
  %free = rt.alloc : memref<4x8xf32>
  rt.kernel silu(%a) -> (%free) : memref<4x8xf32> -> memref<4x8xf32>
  %free2 = rt.alloc : memref<4x8xf32>
  rt.kernel silu(%free) -> (%free2) : memref<4x8xf32> -> memref<4x8xf32>
  rt.kernel add(%b, %used) -> (%b) : memref<4x8xf32>, memref<4x8xf32> -> memref<4x8xf32>
  rt.kernel copy(%b) -> (%same) : memref<4x8xf32> -> memref<4x8xf32>
  %r = rt.alloc : memref<4x8xf32>
  rt.kernel all_reduce(%same) -> (%r) ints [0] : memref<4x8xf32> -> memref<4x8xf32>
  %ga = rt.alloc : memref<8x8xf32>
  rt.kernel all_gather(%a) -> (%ga) ints [0, 0] : memref<4x8xf32> -> memref<8x8xf32>
  %s = rt.alloc : memref<4x8xf32>
  rt.kernel silu(%r) -> (%s) : memref<4x8xf32> -> memref<4x8xf32>
  %gb = rt.alloc : memref<8x8xf32>
  rt.kernel all_gather(%free2) -> (%gb) ints [0, 0] : memref<4x8xf32> -> memref<8x8xf32>
  rt.output "s" %s : memref<4x8xf32>
  rt.output "read" %read : memref<4x8xf32>
  rt.output "ga" %ga : memref<8x8xf32>
  rt.output "gb" %gb : memref<8x8xf32>
}

// -----

// In a program of functions a window stays in the collective's function:
// the prologue's independent copy stays there; the microbatch's moves,
// within the microbatch (the ranges as they were).
// CHECK-LABEL: rt.program @train_step mesh [tp = 2]
// CHECK-SAME: functions = [{count = 2 : i64, first = 0 : i64, name = "prologue"}, {count = 4 : i64, first = 2 : i64, name = "microbatch"}]
// CHECK: rt.kernel silu(%[[X:.*]]) -> (%[[P:.*]])
// CHECK-NEXT: rt.kernel copy(%[[X]]) -> (%[[Q:.*]])
// CHECK-NEXT: rt.kernel copy(%[[P]]) -> (%[[V:.*]])
// CHECK-NEXT: rt.kernel all_reduce(%[[V]]) -> (%[[R:.*]]) ints [0]
// CHECK-NEXT: rt.kernel silu(%[[X]]) -> (%[[U:.*]])
// CHECK-NEXT: rt.kernel add(%[[R]], %[[U]])
rt.program @train_step mesh [tp = 2] attributes {actions = array<i64: 0, 0, 0, 1, 0, 0>, functions = [{count = 2 : i64, first = 0 : i64, name = "prologue"}, {count = 4 : i64, first = 2 : i64, name = "microbatch"}]} {
  %x = rt.input "x" : memref<4x8xf32>
  %p = rt.alloc : memref<4x8xf32>
  %q = rt.alloc : memref<4x8xf32>
  %u = rt.alloc : memref<4x8xf32>
  %v = rt.alloc : memref<4x8xf32>
  %r = rt.alloc : memref<4x8xf32>
  %s = rt.alloc : memref<4x8xf32>
  rt.kernel silu(%x) -> (%p) : memref<4x8xf32> -> memref<4x8xf32>
  rt.kernel copy(%x) -> (%q) : memref<4x8xf32> -> memref<4x8xf32>
  rt.kernel silu(%x) -> (%u) : memref<4x8xf32> -> memref<4x8xf32>
  rt.kernel copy(%p) -> (%v) : memref<4x8xf32> -> memref<4x8xf32>
  rt.kernel all_reduce(%v) -> (%r) ints [0] : memref<4x8xf32> -> memref<4x8xf32>
  rt.kernel add(%r, %u) -> (%s) : memref<4x8xf32>, memref<4x8xf32> -> memref<4x8xf32>
  rt.output "q" %q : memref<4x8xf32>
  rt.output "s" %s : memref<4x8xf32>
}

// -----

// A gather of a buffer written long before (issued early by
// rt-prefetch-gathers) already runs behind the kernels after it: nothing
// moves past it, which would keep more gathered results live at once.
// CHECK-LABEL: rt.program @train_step mesh [tp = 2]
// CHECK: rt.kernel all_reduce
// CHECK: rt.kernel silu
// CHECK-NEXT: rt.kernel all_gather
rt.program @train_step mesh [tp = 2] {
  %x = rt.input "x" : memref<4x8xf32>
  %y = rt.input "y" : memref<4x8xf32>
  %a = rt.alloc : memref<4x8xf32>
  %b = rt.alloc : memref<4x8xf32>
  %g = rt.alloc : memref<8x8xf32>
  rt.kernel all_reduce(%x) -> (%a) ints [0] : memref<4x8xf32> -> memref<4x8xf32>
  rt.kernel silu(%a) -> (%b) : memref<4x8xf32> -> memref<4x8xf32>
  rt.kernel all_gather(%y) -> (%g) ints [0, 0] : memref<4x8xf32> -> memref<8x8xf32>
  rt.output "b" %b : memref<4x8xf32>
  rt.output "g" %g : memref<8x8xf32>
}

// -----

// A run of reductions issued together (rt-bucket-reductions' runs: a
// norm's parameter gradients with the input gradient) is one: what any of
// them reduces stays before the run, the rest moves past the whole run
// (not between its reductions, which the CUDA device issues as one).
// CHECK-LABEL: rt.program @train_step mesh [tp = 2]
// CHECK: rt.kernel silu(%[[X:.*]]) -> (%[[P:.*]])
// CHECK-NEXT: rt.kernel copy(%[[X]]) -> (%[[Q:.*]])
// CHECK-NEXT: rt.kernel all_reduce(%[[P]]) -> (%[[P]]) ints [0]
// CHECK-NEXT: rt.kernel all_reduce(%[[Q]]) -> (%[[Q]]) ints [0]
// CHECK-NEXT: rt.kernel silu(%[[X]]) -> (%[[U:.*]])
rt.program @train_step mesh [tp = 2] {
  %x = rt.input "x" : memref<4x8xf32>
  %p = rt.alloc : memref<4x8xf32>
  %q = rt.alloc : memref<4x8xf32>
  %u = rt.alloc : memref<4x8xf32>
  rt.kernel silu(%x) -> (%p) : memref<4x8xf32> -> memref<4x8xf32>
  rt.kernel silu(%x) -> (%u) : memref<4x8xf32> -> memref<4x8xf32>
  rt.kernel copy(%x) -> (%q) : memref<4x8xf32> -> memref<4x8xf32>
  rt.kernel all_reduce(%p) -> (%p) ints [0] : memref<4x8xf32> -> memref<4x8xf32>
  rt.kernel all_reduce(%q) -> (%q) ints [0] : memref<4x8xf32> -> memref<4x8xf32>
  rt.output "p" %p : memref<4x8xf32>
  rt.output "q" %q : memref<4x8xf32>
  rt.output "u" %u : memref<4x8xf32>
}

// -----

// A kernel that reads nothing (a dropout mask drawn from the step's
// counter) after the reduction's reader moves up to just after the
// reduction, its result's alloc with it, so that it runs while the
// reduction does; one whose result a kernel before it writes stays.
// CHECK-LABEL: rt.program @train_step mesh [tp = 2]
// CHECK: rt.kernel all_reduce(%{{.*}}) -> (%[[R:.*]]) ints [0]
// CHECK-NEXT: %[[M:.*]] = rt.alloc : memref<4x8xi8>
// CHECK-NEXT: rt.kernel dropout_mask() -> (%[[M]])
// CHECK-NEXT: %[[B:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel silu(%[[R]]) -> (%[[B]])
// CHECK-NEXT: rt.kernel zeros() -> (%[[B]])
// CHECK-NEXT: %{{.*}} = rt.alloc
// CHECK-NEXT: rt.kernel apply_mask(%[[B]], %[[M]])
rt.program @train_step mesh [tp = 2] {
  %x = rt.input "x" : memref<4x8xf32>
  %y = rt.alloc : memref<4x8xf32>
  rt.kernel silu(%x) -> (%y) : memref<4x8xf32> -> memref<4x8xf32>
  %r = rt.alloc : memref<4x8xf32>
  rt.kernel all_reduce(%y) -> (%r) ints [0] : memref<4x8xf32> -> memref<4x8xf32>
  %b = rt.alloc : memref<4x8xf32>
  rt.kernel silu(%r) -> (%b) : memref<4x8xf32> -> memref<4x8xf32>
  %m = rt.alloc : memref<4x8xi8>
  rt.kernel dropout_mask() -> (%m) ints [3, 0] floats [0.1] : -> memref<4x8xi8>
  rt.kernel zeros() -> (%b) : -> memref<4x8xf32>
  %d = rt.alloc : memref<4x8xf32>
  rt.kernel apply_mask(%b, %m) -> (%d) floats [0.1] : memref<4x8xf32>, memref<4x8xi8> -> memref<4x8xf32>
  rt.output "d" %d : memref<4x8xf32>
}

// -----

// The gradients' norm of a split model, only reported (no clipping): the
// updates of the split gradients, then their sum_squares, reduced across
// the ranks. The updates do not wait for the reduction, but they stay
// before the sum_squares: the CUDA device sums its squares in the updates'
// pass (a read of every gradient less), and the third update, whose
// gradient the sum_squares does not read, stays with the run. The second
// program's sum_squares reads none of the updates' gradients: they move
// past its reduction.
// CHECK-LABEL: rt.program @train_step mesh [tp = 2]
// CHECK: rt.kernel adamw_update(%{{[0-9]+}}, %[[G1:[0-9]+]],
// CHECK-NEXT: rt.kernel adamw_update(%{{[0-9]+}}, %[[G2:[0-9]+]],
// CHECK-NEXT: rt.kernel adamw_update
// CHECK-NEXT: %[[S:.*]] = rt.alloc : memref<f32>
// CHECK-NEXT: rt.kernel sum_squares(%[[G1]], %[[G2]]) -> (%[[S]])
// CHECK-NEXT: rt.kernel all_reduce(%[[S]]) -> (%[[S]]) ints [0]
// CHECK: rt.kernel clip_coefficient(%[[S]])
// CHECK-LABEL: rt.program @train_step mesh [tp = 2]
// CHECK: rt.kernel sum_squares
// CHECK-NEXT: rt.kernel all_reduce
// CHECK-NEXT: rt.kernel adamw_update
// CHECK-NEXT: rt.kernel adamw_update
// CHECK: rt.kernel clip_coefficient
rt.program @train_step mesh [tp = 2] {
  %w1 = rt.param "w1" hf_shape [16] init normal : memref<16xf32>
  %w2 = rt.param "w2" hf_shape [8] init normal : memref<8xf32>
  %w3 = rt.param "w3" hf_shape [4] init normal : memref<4xf32>
  %g1 = rt.input "g1" : memref<16xf32>
  %g2 = rt.input "g2" : memref<8xf32>
  %g3 = rt.input "g3" : memref<4xf32>
  %m1 = rt.state "exp_avg" of "w1" : memref<16xf32>
  %v1 = rt.state "exp_avg_sq" of "w1" : memref<16xf32>
  %m2 = rt.state "exp_avg" of "w2" : memref<8xf32>
  %v2 = rt.state "exp_avg_sq" of "w2" : memref<8xf32>
  %m3 = rt.state "exp_avg" of "w3" : memref<4xf32>
  %v3 = rt.state "exp_avg_sq" of "w3" : memref<4xf32>
  %lr = rt.input "lr" : memref<f32>
  %step = rt.input "step" : memref<i64>
  rt.kernel adamw_update(%w1, %g1, %m1, %v1, %lr, %step) -> (%w1, %m1, %v1) floats [9.000000e-01, 9.990000e-01, 1.000000e-08, 1.000000e-02] : memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<f32>, memref<i64> -> memref<16xf32>, memref<16xf32>, memref<16xf32>
  rt.kernel adamw_update(%w2, %g2, %m2, %v2, %lr, %step) -> (%w2, %m2, %v2) floats [9.000000e-01, 9.990000e-01, 1.000000e-08, 1.000000e-02] : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32>, memref<i64> -> memref<8xf32>, memref<8xf32>, memref<8xf32>
  rt.kernel adamw_update(%w3, %g3, %m3, %v3, %lr, %step) -> (%w3, %m3, %v3) floats [9.000000e-01, 9.990000e-01, 1.000000e-08, 1.000000e-02] : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<f32>, memref<i64> -> memref<4xf32>, memref<4xf32>, memref<4xf32>
  %s = rt.alloc : memref<f32>
  rt.kernel sum_squares(%g1, %g2) -> (%s) : memref<16xf32>, memref<8xf32> -> memref<f32>
  rt.kernel all_reduce(%s) -> (%s) ints [0] : memref<f32> -> memref<f32>
  %c = rt.alloc : memref<f32>
  %n = rt.alloc : memref<f32>
  rt.kernel clip_coefficient(%s) -> (%c, %n) floats [0.000000e+00] : memref<f32> -> memref<f32>, memref<f32>
  rt.output "grad_norm" %n : memref<f32>
}

// -----

rt.program @train_step mesh [tp = 2] {
  %w1 = rt.param "w1" hf_shape [16] init normal : memref<16xf32>
  %w2 = rt.param "w2" hf_shape [8] init normal : memref<8xf32>
  %g1 = rt.input "g1" : memref<16xf32>
  %g2 = rt.input "g2" : memref<8xf32>
  %h = rt.input "h" : memref<8xf32>
  %m1 = rt.state "exp_avg" of "w1" : memref<16xf32>
  %v1 = rt.state "exp_avg_sq" of "w1" : memref<16xf32>
  %m2 = rt.state "exp_avg" of "w2" : memref<8xf32>
  %v2 = rt.state "exp_avg_sq" of "w2" : memref<8xf32>
  %lr = rt.input "lr" : memref<f32>
  %step = rt.input "step" : memref<i64>
  rt.kernel adamw_update(%w1, %g1, %m1, %v1, %lr, %step) -> (%w1, %m1, %v1) floats [9.000000e-01, 9.990000e-01, 1.000000e-08, 1.000000e-02] : memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<f32>, memref<i64> -> memref<16xf32>, memref<16xf32>, memref<16xf32>
  rt.kernel adamw_update(%w2, %g2, %m2, %v2, %lr, %step) -> (%w2, %m2, %v2) floats [9.000000e-01, 9.990000e-01, 1.000000e-08, 1.000000e-02] : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32>, memref<i64> -> memref<8xf32>, memref<8xf32>, memref<8xf32>
  %s = rt.alloc : memref<f32>
  rt.kernel sum_squares(%h) -> (%s) : memref<8xf32> -> memref<f32>
  rt.kernel all_reduce(%s) -> (%s) ints [0] : memref<f32> -> memref<f32>
  %c = rt.alloc : memref<f32>
  %n = rt.alloc : memref<f32>
  rt.kernel clip_coefficient(%s) -> (%c, %n) floats [0.000000e+00] : memref<f32> -> memref<f32>, memref<f32>
  rt.output "grad_norm" %n : memref<f32>
}

// -----

// The flow's last run: a reduction left after kernels it does not wait for
// (a recomputed forward's, in one run with the input gradient's before its
// reader) goes up to just after its writer, past no kernel that
// communicates (the gather) and no binding, and runs behind them.
// CHECK-LABEL: rt.program @train_step mesh [tp = 2]
// CHECK: rt.kernel linear(%{{.*}}) -> (%[[P:.*]])
// CHECK-NEXT: rt.kernel all_gather
// CHECK-NEXT: rt.kernel all_reduce(%[[P]]) -> (%[[R:.*]]) ints [0]
// CHECK-NEXT: rt.kernel silu(%{{.*}}) -> (%[[G:.*]])
// CHECK-NEXT: rt.kernel all_reduce(%[[G]]) -> (%[[GR:.*]]) ints [0]
// CHECK-NEXT: rt.kernel add(%[[R]], %[[GR]])
rt.program @train_step mesh [tp = 2] {
  %x = rt.input "x" : memref<4x8xf32>
  %w = rt.input "w" : memref<8x8xf32>
  %d = rt.input "d" : memref<4x8xf32>
  %p = rt.alloc : memref<4x8xf32>
  %a = rt.alloc : memref<8x8xf32>
  %g = rt.alloc : memref<4x8xf32>
  %r = rt.alloc : memref<4x8xf32>
  %gr = rt.alloc : memref<4x8xf32>
  %y = rt.alloc : memref<4x8xf32>
  rt.kernel linear(%x, %w) -> (%p) : memref<4x8xf32>, memref<8x8xf32> -> memref<4x8xf32>
  rt.kernel all_gather(%d) -> (%a) ints [0, 0] : memref<4x8xf32> -> memref<8x8xf32>
  rt.kernel silu(%d) -> (%g) : memref<4x8xf32> -> memref<4x8xf32>
  rt.kernel all_reduce(%p) -> (%r) ints [0] : memref<4x8xf32> -> memref<4x8xf32>
  rt.kernel all_reduce(%g) -> (%gr) ints [0] : memref<4x8xf32> -> memref<4x8xf32>
  rt.kernel add(%r, %gr) -> (%y) : memref<4x8xf32>, memref<4x8xf32> -> memref<4x8xf32>
  rt.output "y" %y : memref<4x8xf32>
  rt.output "a" %a : memref<8x8xf32>
}
