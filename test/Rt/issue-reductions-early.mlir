// rt-issue-reductions-early: each all_reduce goes up to just after the last
// kernel that writes its operand, its result's alloc with it; one already
// there stays. In a program run by actions an epilogue's reduction of a sum
// goes into the run of the action that last touches the sum, reducing it in
// place; a function that other actions also run is copied for that one.
// RUN: tpc-opt %s --split-input-file --rt-issue-reductions-early | FileCheck %s

// Two gradients reduced after the whole "backward": dw1's reduction moves up
// to just after dw1's last writer (the second silu), dw2's after its own.
// CHECK-LABEL: rt.program @train_step mesh [dp = 2]
// CHECK: %[[DW1:.*]] = rt.alloc : memref<16xf32>
// CHECK-NEXT: rt.kernel silu(%{{.*}}) -> (%[[DW1]])
// CHECK-NEXT: rt.kernel silu(%{{.*}}) -> (%[[DW1]])
// CHECK-NEXT: %[[R1:.*]] = rt.alloc : memref<16xf32>
// CHECK-NEXT: rt.kernel all_reduce(%[[DW1]]) -> (%[[R1]]) ints [0]
// CHECK-NEXT: %[[DW2:.*]] = rt.alloc : memref<16xf32>
// CHECK-NEXT: rt.kernel silu(%[[DW1]]) -> (%[[DW2]])
// CHECK-NEXT: %[[R2:.*]] = rt.alloc : memref<16xf32>
// CHECK-NEXT: rt.kernel all_reduce(%[[DW2]]) -> (%[[R2]]) ints [0]
// CHECK-NEXT: %[[T:.*]] = rt.alloc : memref<16xf32>
// CHECK-NEXT: rt.kernel silu(%[[DW2]]) -> (%[[T]])
// CHECK-NEXT: %[[S:.*]] = rt.alloc : memref<16xf32>
// CHECK-NEXT: rt.kernel add(%[[R1]], %[[R2]]) -> (%[[S]])
rt.program @train_step mesh [dp = 2] {
  %x = rt.input "x" : memref<16xf32>
  %dw1 = rt.alloc : memref<16xf32>
  rt.kernel silu(%x) -> (%dw1) : memref<16xf32> -> memref<16xf32>
  rt.kernel silu(%x) -> (%dw1) : memref<16xf32> -> memref<16xf32>
  %dw2 = rt.alloc : memref<16xf32>
  rt.kernel silu(%dw1) -> (%dw2) : memref<16xf32> -> memref<16xf32>
  %t = rt.alloc : memref<16xf32>
  rt.kernel silu(%dw2) -> (%t) : memref<16xf32> -> memref<16xf32>
  %r1 = rt.alloc : memref<16xf32>
  rt.kernel all_reduce(%dw1) -> (%r1) ints [0] : memref<16xf32> -> memref<16xf32>
  %r2 = rt.alloc : memref<16xf32>
  rt.kernel all_reduce(%dw2) -> (%r2) ints [0] : memref<16xf32> -> memref<16xf32>
  %s = rt.alloc : memref<16xf32>
  rt.kernel add(%r1, %r2) -> (%s) : memref<16xf32>, memref<16xf32> -> memref<16xf32>
  rt.output "s" %s : memref<16xf32>
}

// -----

// A reduction whose operand's writer is just before it stays; one of an
// input (written by nothing) goes right after the input. A reduction that
// is its operand's last use reduces it in place (the result's buffer goes);
// one of an input, or of a buffer read later, does not.
// CHECK-LABEL: rt.program @train_step mesh [dp = 2]
// CHECK-NEXT: %[[X:.*]] = rt.input "x"
// CHECK-NEXT: %[[RX:.*]] = rt.alloc : memref<16xf32>
// CHECK-NEXT: rt.kernel all_reduce(%[[X]]) -> (%[[RX]])
// CHECK-NEXT: %[[A:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel silu(%[[X]]) -> (%[[A]])
// CHECK-NEXT: rt.kernel all_reduce(%[[A]]) -> (%[[A]])
// CHECK-NEXT: %[[C:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel add(%[[A]], %[[RX]]) -> (%[[C]])
rt.program @train_step mesh [dp = 2] {
  %x = rt.input "x" : memref<16xf32>
  %a = rt.alloc : memref<16xf32>
  rt.kernel silu(%x) -> (%a) : memref<16xf32> -> memref<16xf32>
  %b = rt.alloc : memref<16xf32>
  rt.kernel all_reduce(%a) -> (%b) ints [0] : memref<16xf32> -> memref<16xf32>
  %rx = rt.alloc : memref<16xf32>
  rt.kernel all_reduce(%x) -> (%rx) ints [0] : memref<16xf32> -> memref<16xf32>
  %c = rt.alloc : memref<16xf32>
  rt.kernel add(%b, %rx) -> (%c) : memref<16xf32>, memref<16xf32> -> memref<16xf32>
  rt.output "c" %c : memref<16xf32>
}

// -----

// One device, two microbatches: the sum's reduction leaves the epilogue
// for a copy of the microbatch's function that the last microbatch runs,
// just after the add into the sum, in place; the copy has its own
// temporaries (%t, %share); the epilogue reads the sum.
// CHECK-LABEL: rt.program @train_step mesh [dp = 2]
// CHECK-SAME: actions = array<i64: 0, 0, 0, 1, 0, 0, 2, 1, 1, 3, 0, 0>
// CHECK-SAME: {count = 3 : i64, first = 1 : i64, name = "microbatch"}
// CHECK-SAME: {count = 4 : i64, first = 4 : i64, name = "microbatch + reductions"}
// CHECK-SAME: {count = 1 : i64, first = 8 : i64, name = "epilogue"}
// CHECK: %[[SUM:.*]] = rt.alloc : memref<16xf32>
// CHECK-NEXT: rt.kernel zeros() -> (%[[SUM]])
// CHECK: rt.kernel add(%[[SUM]], %[[SHARE:.*]]) -> (%[[SUM]])
// CHECK-NEXT: %[[T2:.*]] = rt.alloc : memref<16xf32>
// CHECK-NEXT: rt.kernel silu(%{{.*}}) -> (%[[T2]])
// CHECK-NEXT: %[[SHARE2:.*]] = rt.alloc : memref<16xf32>
// CHECK-NEXT: rt.kernel silu(%[[T2]]) -> (%[[SHARE2]])
// CHECK-NEXT: rt.kernel add(%[[SUM]], %[[SHARE2]]) -> (%[[SUM]])
// CHECK-NEXT: rt.kernel all_reduce(%[[SUM]]) -> (%[[SUM]]) ints [0]
// CHECK-NEXT: %[[S:.*]] = rt.alloc : memref<16xf32>
// CHECK-NEXT: rt.kernel silu(%[[SUM]]) -> (%[[S]])
// CHECK-NEXT: rt.output "s" %[[S]]
rt.program @train_step mesh [dp = 2] attributes {actions = array<i64: 0, 0, 0, 1, 0, 0, 1, 1, 1, 2, 0, 0>, functions = [{count = 1 : i64, first = 0 : i64, name = "prologue"}, {count = 3 : i64, first = 1 : i64, name = "microbatch"}, {count = 2 : i64, first = 4 : i64, name = "epilogue"}]} {
  %x = rt.input "x" : memref<16xf32>
  %sum = rt.alloc : memref<16xf32>
  rt.kernel zeros() -> (%sum) :  -> memref<16xf32>
  %t = rt.alloc : memref<16xf32>
  rt.kernel silu(%x) -> (%t) : memref<16xf32> -> memref<16xf32>
  %share = rt.alloc : memref<16xf32>
  rt.kernel silu(%t) -> (%share) : memref<16xf32> -> memref<16xf32>
  rt.kernel add(%sum, %share) -> (%sum) : memref<16xf32>, memref<16xf32> -> memref<16xf32>
  %r = rt.alloc : memref<16xf32>
  rt.kernel all_reduce(%sum) -> (%r) ints [0] : memref<16xf32> -> memref<16xf32>
  %s = rt.alloc : memref<16xf32>
  rt.kernel silu(%r) -> (%s) : memref<16xf32> -> memref<16xf32>
  rt.output "s" %s : memref<16xf32>
}

// -----

// A function run by one action takes the reduction itself. A reduction
// whose sum the epilogue reads before it stays, and so does one of a sum
// bound by an output.
// CHECK-LABEL: rt.program @train_step mesh [dp = 2]
// CHECK-SAME: actions = array<i64: 0, 0, 0, 1, 0, 0, 2, 0, 0>
// CHECK-SAME: {count = 4 : i64, first = 3 : i64, name = "microbatch"}
// CHECK-SAME: {count = 4 : i64, first = 7 : i64, name = "epilogue"}
// CHECK: rt.kernel add(%[[A:.*]], %{{.*}}) -> (%[[A]])
// CHECK-NEXT: rt.kernel all_reduce(%[[A]]) -> (%[[A]]) ints [0]
// CHECK-NEXT: rt.kernel add(%[[B:.*]], %{{.*}}) -> (%[[B]])
// CHECK-NEXT: rt.kernel add(%[[C:.*]], %{{.*}}) -> (%[[C]])
// CHECK-NEXT: %[[TB:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel silu(%[[B]]) -> (%[[TB]])
// CHECK-NEXT: %[[RB:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel all_reduce(%[[B]]) -> (%[[RB]]) ints [0]
// CHECK-NEXT: %[[RC:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel all_reduce(%[[C]]) -> (%[[RC]]) ints [0]
// CHECK: rt.kernel add(%[[A]], %[[RB]])
rt.program @train_step mesh [dp = 2] attributes {actions = array<i64: 0, 0, 0, 1, 0, 0, 2, 0, 0>, functions = [{count = 3 : i64, first = 0 : i64, name = "prologue"}, {count = 3 : i64, first = 3 : i64, name = "microbatch"}, {count = 5 : i64, first = 6 : i64, name = "epilogue"}]} {
  %x = rt.input "x" : memref<16xf32>
  %a = rt.alloc : memref<16xf32>
  rt.kernel zeros() -> (%a) :  -> memref<16xf32>
  %b = rt.alloc : memref<16xf32>
  rt.kernel zeros() -> (%b) :  -> memref<16xf32>
  %c = rt.alloc : memref<16xf32>
  rt.kernel zeros() -> (%c) :  -> memref<16xf32>
  rt.kernel add(%a, %x) -> (%a) : memref<16xf32>, memref<16xf32> -> memref<16xf32>
  rt.kernel add(%b, %x) -> (%b) : memref<16xf32>, memref<16xf32> -> memref<16xf32>
  rt.kernel add(%c, %x) -> (%c) : memref<16xf32>, memref<16xf32> -> memref<16xf32>
  %tb = rt.alloc : memref<16xf32>
  rt.kernel silu(%b) -> (%tb) : memref<16xf32> -> memref<16xf32>
  %ra = rt.alloc : memref<16xf32>
  rt.kernel all_reduce(%a) -> (%ra) ints [0] : memref<16xf32> -> memref<16xf32>
  %rb = rt.alloc : memref<16xf32>
  rt.kernel all_reduce(%b) -> (%rb) ints [0] : memref<16xf32> -> memref<16xf32>
  %rc = rt.alloc : memref<16xf32>
  rt.kernel all_reduce(%c) -> (%rc) ints [0] : memref<16xf32> -> memref<16xf32>
  %s = rt.alloc : memref<16xf32>
  rt.kernel add(%ra, %rb) -> (%s) : memref<16xf32>, memref<16xf32> -> memref<16xf32>
  rt.output "s" %s : memref<16xf32>
  rt.output "c" %c : memref<16xf32>
  rt.output "tb" %tb : memref<16xf32>
}

// -----

// A pipeline: a reduction over "dp" moves into the stage's last run of its
// function; one over a group with "pp" (ranks of other action lists) stays.
// CHECK-LABEL: rt.program @train_step mesh [pp = 2, dp = 2]
// CHECK-SAME: {count = 2 : i64, first = 2 : i64, name = "F chunk 0"}
// CHECK-SAME: {count = 3 : i64, first = 4 : i64, name = "F chunk 0 + reductions"}
// CHECK-SAME: {count = 2 : i64, first = 7 : i64, name = "epilogue"}
// CHECK-SAME: {count = 1 : i64, first = 9 : i64, name = "F chunk 1"}
// CHECK-SAME: stage_actions = [array<i64: 0, 0, 0, 1, 0, 0, 2, 1, 1, 3, 0, 0>, array<i64: 4, 0, 0>]
// CHECK: rt.kernel add(%[[D:.*]], %{{.*}}) -> (%[[D]]) {stage = 0 : ui32}
// CHECK-NEXT: rt.kernel add(%[[P:.*]], %{{.*}}) -> (%[[P]]) {stage = 0 : ui32}
// CHECK-NEXT: rt.kernel add(%[[D]], %{{.*}}) -> (%[[D]]) {stage = 0 : ui32}
// CHECK-NEXT: rt.kernel all_reduce(%[[D]]) -> (%[[D]]) ints [1] {stage = 0 : ui32}
// CHECK-NEXT: rt.kernel add(%[[P]], %{{.*}}) -> (%[[P]]) {stage = 0 : ui32}
// CHECK-NEXT: %[[RP:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel all_reduce(%[[P]]) -> (%[[RP]]) ints [0, 1] {stage = 0 : ui32}
rt.program @train_step mesh [pp = 2, dp = 2] attributes {functions = [{count = 2 : i64, first = 0 : i64, name = "prologue"}, {count = 2 : i64, first = 2 : i64, name = "F chunk 0"}, {count = 3 : i64, first = 4 : i64, name = "epilogue"}, {count = 1 : i64, first = 7 : i64, name = "F chunk 1"}], stage_actions = [array<i64: 0, 0, 0, 1, 0, 0, 1, 1, 1, 2, 0, 0>, array<i64: 3, 0, 0>]} {
  %x = rt.input "x" : memref<16xf32>
  %d = rt.alloc : memref<16xf32>
  rt.kernel zeros() -> (%d) {stage = 0 : ui32} :  -> memref<16xf32>
  %p = rt.alloc : memref<16xf32>
  rt.kernel zeros() -> (%p) {stage = 0 : ui32} :  -> memref<16xf32>
  rt.kernel add(%d, %x) -> (%d) {stage = 0 : ui32} : memref<16xf32>, memref<16xf32> -> memref<16xf32>
  rt.kernel add(%p, %x) -> (%p) {stage = 0 : ui32} : memref<16xf32>, memref<16xf32> -> memref<16xf32>
  %rd = rt.alloc : memref<16xf32>
  rt.kernel all_reduce(%d) -> (%rd) ints [1] {stage = 0 : ui32} : memref<16xf32> -> memref<16xf32>
  %rp = rt.alloc : memref<16xf32>
  rt.kernel all_reduce(%p) -> (%rp) ints [0, 1] {stage = 0 : ui32} : memref<16xf32> -> memref<16xf32>
  %s = rt.alloc : memref<16xf32>
  rt.kernel add(%rd, %rp) -> (%s) {stage = 0 : ui32} : memref<16xf32>, memref<16xf32> -> memref<16xf32>
  %y = rt.alloc : memref<16xf32>
  rt.kernel silu(%x) -> (%y) {stage = 1 : ui32} : memref<16xf32> -> memref<16xf32>
  rt.output "s" %s : memref<16xf32>
  rt.output "y" %y : memref<16xf32>
}

// -----

// A writer that the CUDA device fuses with the kernels right after it (a
// norm's parameter gradient, its input gradient and the add of that;
// runtime/cuda/FusionPlan.h) gets its reductions after those, not between
// (each in place: its gradient's last use).
// CHECK-LABEL: rt.program @train_step mesh [dp = 2]
// CHECK: rt.kernel layer_norm_param_grad(%[[DY:.*]], %[[X:.*]]) -> (%[[DW:.*]], %[[DB:.*]]) floats
// CHECK-NEXT: %[[DX:.*]] = rt.alloc : memref<4x8xf32>
// CHECK-NEXT: rt.kernel layer_norm_input_grad(%[[DY]], %[[X]], %{{.*}}) -> (%[[DX]])
// CHECK-NEXT: %[[Z:.*]] = rt.alloc : memref<4x8xf32>
// CHECK-NEXT: rt.kernel add(%{{.*}}, %[[DX]]) -> (%[[Z]])
// CHECK-NEXT: rt.kernel all_reduce(%[[DB]]) -> (%[[DB]])
// CHECK-NEXT: rt.kernel all_reduce(%[[DW]]) -> (%[[DW]])
// CHECK-NEXT: rt.alloc
// CHECK-NEXT: rt.kernel silu(%[[Z]])
rt.program @train_step mesh [dp = 2] {
  %dy = rt.input "dy" : memref<4x8xf32>
  %x = rt.input "x" : memref<4x8xf32>
  %w = rt.input "w" : memref<8xf32>
  %r = rt.input "r" : memref<4x8xf32>
  %dw = rt.alloc : memref<8xf32>
  %db = rt.alloc : memref<8xf32>
  rt.kernel layer_norm_param_grad(%dy, %x) -> (%dw, %db) floats [1.0e-05] : memref<4x8xf32>, memref<4x8xf32> -> memref<8xf32>, memref<8xf32>
  %dx = rt.alloc : memref<4x8xf32>
  rt.kernel layer_norm_input_grad(%dy, %x, %w) -> (%dx) floats [1.0e-05] : memref<4x8xf32>, memref<4x8xf32>, memref<8xf32> -> memref<4x8xf32>
  %z = rt.alloc : memref<4x8xf32>
  rt.kernel add(%r, %dx) -> (%z) : memref<4x8xf32>, memref<4x8xf32> -> memref<4x8xf32>
  %t = rt.alloc : memref<4x8xf32>
  rt.kernel silu(%z) -> (%t) : memref<4x8xf32> -> memref<4x8xf32>
  %rw = rt.alloc : memref<8xf32>
  rt.kernel all_reduce(%dw) -> (%rw) ints [0] : memref<8xf32> -> memref<8xf32>
  %rb = rt.alloc : memref<8xf32>
  rt.kernel all_reduce(%db) -> (%rb) ints [0] : memref<8xf32> -> memref<8xf32>
  rt.output "t" %t : memref<4x8xf32>
  rt.output "rw" %rw : memref<8xf32>
  rt.output "rb" %rb : memref<8xf32>
}

// -----

// In a program run by actions too: the last microbatch's weight gradient,
// added into its sum, and the bias gradient of the same dY after it (one
// cuBLASLt call on the CUDA device, runtime/cuda/FusionPlan.h) get the
// weight sum's reduction after both, not between (before, it split them
// and the device ran the two apart in the last microbatch).
// CHECK-LABEL: rt.program @train_step mesh [dp = 2]
// CHECK-SAME: {count = 4 : i64, first = 2 : i64, name = "microbatch"}
// CHECK-SAME: {count = 6 : i64, first = 6 : i64, name = "microbatch + reductions"}
// CHECK: rt.kernel linear_weight_grad_accumulate(%[[X:.*]], %[[DY:.*]], %[[W:.*]]) -> (%[[W]])
// CHECK-NEXT: %[[BT:.*]] = rt.alloc : memref<8xf32>
// CHECK-NEXT: rt.kernel sum_to(%[[DY]]) -> (%[[BT]])
// CHECK-NEXT: rt.kernel add(%[[B:.*]], %[[BT]]) -> (%[[B]])
// CHECK: rt.kernel linear_weight_grad_accumulate(%[[X]], %[[DY]], %[[W]]) -> (%[[W]])
// CHECK-NEXT: %[[BT2:.*]] = rt.alloc : memref<8xf32>
// CHECK-NEXT: rt.kernel sum_to(%[[DY]]) -> (%[[BT2]])
// CHECK-NEXT: rt.kernel all_reduce(%[[W]]) -> (%[[W]]) ints [0]
// CHECK-NEXT: rt.kernel add(%[[B]], %[[BT2]]) -> (%[[B]])
// CHECK-NEXT: rt.kernel all_reduce(%[[B]]) -> (%[[B]]) ints [0]
rt.program @train_step mesh [dp = 2] attributes {actions = array<i64: 0, 0, 0, 1, 0, 0, 1, 1, 1, 2, 0, 0>, functions = [{count = 2 : i64, first = 0 : i64, name = "prologue"}, {count = 4 : i64, first = 2 : i64, name = "microbatch"}, {count = 3 : i64, first = 6 : i64, name = "epilogue"}]} {
  %x = rt.input "x" : memref<4x6xf32>
  %dy = rt.input "dy" : memref<4x8xf32>
  %w = rt.alloc : memref<6x8xf32>
  rt.kernel zeros() -> (%w) :  -> memref<6x8xf32>
  %b = rt.alloc : memref<8xf32>
  rt.kernel zeros() -> (%b) :  -> memref<8xf32>
  %t = rt.alloc : memref<4x8xf32>
  rt.kernel silu(%dy) -> (%t) : memref<4x8xf32> -> memref<4x8xf32>
  rt.kernel linear_weight_grad_accumulate(%x, %dy, %w) -> (%w) : memref<4x6xf32>, memref<4x8xf32>, memref<6x8xf32> -> memref<6x8xf32>
  %bt = rt.alloc : memref<8xf32>
  rt.kernel sum_to(%dy) -> (%bt) : memref<4x8xf32> -> memref<8xf32>
  rt.kernel add(%b, %bt) -> (%b) : memref<8xf32>, memref<8xf32> -> memref<8xf32>
  %rw = rt.alloc : memref<6x8xf32>
  rt.kernel all_reduce(%w) -> (%rw) ints [0] : memref<6x8xf32> -> memref<6x8xf32>
  %rb = rt.alloc : memref<8xf32>
  rt.kernel all_reduce(%b) -> (%rb) ints [0] : memref<8xf32> -> memref<8xf32>
  %s = rt.alloc : memref<6x8xf32>
  rt.kernel silu(%rw) -> (%s) : memref<6x8xf32> -> memref<6x8xf32>
  rt.output "s" %s : memref<6x8xf32>
  rt.output "rb" %rb : memref<8xf32>
}
