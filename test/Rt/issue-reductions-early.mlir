// rt-issue-reductions-early: each all_reduce goes up to just after the last
// kernel that writes its operand, its result's alloc with it; an in-place
// one, or one already there, stays; programs run by actions are untouched.
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
// input (written by nothing) goes right after the input.
// CHECK-LABEL: rt.program @train_step mesh [dp = 2]
// CHECK-NEXT: %[[X:.*]] = rt.input "x"
// CHECK-NEXT: %[[RX:.*]] = rt.alloc : memref<16xf32>
// CHECK-NEXT: rt.kernel all_reduce(%[[X]]) -> (%[[RX]])
// CHECK-NEXT: %[[A:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel silu(%[[X]]) -> (%[[A]])
// CHECK-NEXT: %[[B:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel all_reduce(%[[A]]) -> (%[[B]])
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
