// rt-prefetch-gathers: each all_gather goes up to just after the
// communicating kernel before it (in the program as it was), or less far:
// not past its operand's writer or definition, a kernel touching its
// result, a binding of its result or another function's kernel, and not
// into a run the CUDA device fuses; its result's alloc comes along.
// RUN: tpc-opt %s --split-input-file --rt-prefetch-gathers | FileCheck %s

// A weight gradient's gather of an input (written long before) goes up to
// just after the gather before it, whose readers it then overlaps; the
// first gather's operand is written just before it: it stays. One
// collective ahead only: the third gather goes up to where the second was
// (its reader then overlaps it), not further with it.
// CHECK-LABEL: rt.program @train_step mesh [tp = 2]
// CHECK: rt.kernel silu(%[[X:.*]]) -> (%[[XS:.*]])
// CHECK-NEXT: %[[A:.*]] = rt.alloc : memref<8x8xf32>
// CHECK-NEXT: rt.kernel all_gather(%[[XS]]) -> (%[[A]]) ints [0, 0]
// CHECK-NEXT: %[[G:.*]] = rt.alloc : memref<8x8xf32>
// CHECK-NEXT: rt.kernel all_gather(%[[Y:.*]]) -> (%[[G]]) ints [0, 0]
// CHECK-NEXT: %[[B:.*]] = rt.alloc : memref<8x8xf32>
// CHECK-NEXT: rt.kernel silu(%[[A]]) -> (%[[B]])
// CHECK-NEXT: %[[C:.*]] = rt.alloc : memref<8x8xf32>
// CHECK-NEXT: rt.kernel silu(%[[B]]) -> (%[[C]])
// CHECK-NEXT: %[[H:.*]] = rt.alloc : memref<8x8xf32>
// CHECK-NEXT: rt.kernel all_gather(%[[XS]]) -> (%[[H]]) ints [0, 0]
// CHECK-NEXT: %[[D:.*]] = rt.alloc : memref<8x8xf32>
// CHECK-NEXT: rt.kernel add(%[[C]], %[[G]]) -> (%[[D]])
// CHECK-NEXT: %[[E:.*]] = rt.alloc : memref<8x8xf32>
// CHECK-NEXT: rt.kernel add(%[[D]], %[[H]]) -> (%[[E]])
rt.program @train_step mesh [tp = 2] {
  %x = rt.input "x" : memref<4x8xf32>
  %y = rt.input "y" : memref<4x8xf32>
  %xs = rt.alloc : memref<4x8xf32>
  rt.kernel silu(%x) -> (%xs) : memref<4x8xf32> -> memref<4x8xf32>
  %a = rt.alloc : memref<8x8xf32>
  rt.kernel all_gather(%xs) -> (%a) ints [0, 0] : memref<4x8xf32> -> memref<8x8xf32>
  %b = rt.alloc : memref<8x8xf32>
  rt.kernel silu(%a) -> (%b) : memref<8x8xf32> -> memref<8x8xf32>
  %c = rt.alloc : memref<8x8xf32>
  rt.kernel silu(%b) -> (%c) : memref<8x8xf32> -> memref<8x8xf32>
  %g = rt.alloc : memref<8x8xf32>
  rt.kernel all_gather(%y) -> (%g) ints [0, 0] : memref<4x8xf32> -> memref<8x8xf32>
  %d = rt.alloc : memref<8x8xf32>
  rt.kernel add(%c, %g) -> (%d) : memref<8x8xf32>, memref<8x8xf32> -> memref<8x8xf32>
  %h = rt.alloc : memref<8x8xf32>
  rt.kernel all_gather(%xs) -> (%h) ints [0, 0] : memref<4x8xf32> -> memref<8x8xf32>
  %e = rt.alloc : memref<8x8xf32>
  rt.kernel add(%d, %h) -> (%e) : memref<8x8xf32>, memref<8x8xf32> -> memref<8x8xf32>
  rt.output "e" %e : memref<8x8xf32>
}

// -----

// No communication before it: a gather goes up to its operand's writer,
// here the head of a fused pair (a weight gradient and the sum_to of its
// dY): past the partner too, not between them. Another stops at a kernel
// that writes its result's buffer first.
// CHECK-LABEL: rt.program @train_step mesh [tp = 2]
// CHECK: rt.kernel silu(%{{.*}}) -> (%[[W:.*]])
// CHECK-NEXT: %[[DW:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel linear_weight_grad(%{{.*}}, %[[DY:.*]]) -> (%[[DW]])
// CHECK-NEXT: %[[DB:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel sum_to(%[[DY]]) -> (%[[DB]])
// CHECK-NEXT: %[[G:.*]] = rt.alloc : memref<16x16xf32>
// CHECK-NEXT: rt.kernel all_gather(%[[DW]]) -> (%[[G]])
// CHECK-NEXT: %[[S:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel silu(%[[DW]]) -> (%[[S]])
// CHECK: rt.kernel zeros() -> (%[[Z:.*]])
// CHECK-NEXT: rt.kernel all_gather(%[[W]]) -> (%[[Z]])
rt.program @train_step mesh [tp = 2] {
  %p = rt.input "p" : memref<4x8xf32>
  %x = rt.input "x" : memref<2x4x8xf32>
  %dy = rt.input "dy" : memref<2x4x16xf32>
  %w = rt.alloc : memref<4x8xf32>
  rt.kernel silu(%p) -> (%w) : memref<4x8xf32> -> memref<4x8xf32>
  %dw = rt.alloc : memref<8x16xf32>
  rt.kernel linear_weight_grad(%x, %dy) -> (%dw) : memref<2x4x8xf32>, memref<2x4x16xf32> -> memref<8x16xf32>
  %db = rt.alloc : memref<16xf32>
  rt.kernel sum_to(%dy) -> (%db) : memref<2x4x16xf32> -> memref<16xf32>
  %s = rt.alloc : memref<8x16xf32>
  rt.kernel silu(%dw) -> (%s) : memref<8x16xf32> -> memref<8x16xf32>
  %g = rt.alloc : memref<16x16xf32>
  rt.kernel all_gather(%dw) -> (%g) ints [0, 0] : memref<8x16xf32> -> memref<16x16xf32>
  %z = rt.alloc : memref<8x8xf32>
  rt.kernel zeros() -> (%z) : -> memref<8x8xf32>
  %t = rt.alloc : memref<8x16xf32>
  rt.kernel silu(%s) -> (%t) : memref<8x16xf32> -> memref<8x16xf32>
  rt.kernel all_gather(%w) -> (%z) ints [0, 0] : memref<4x8xf32> -> memref<8x8xf32>
  rt.output "g" %g : memref<16x16xf32>
  rt.output "z" %z : memref<8x8xf32>
  rt.output "t" %t : memref<8x16xf32>
  rt.output "db" %db : memref<16xf32>
}

// -----

// A program run by actions: a gather stays in its function (here W's
// first kernel, after the last kernel of B), and the ranges hold.
// CHECK-LABEL: rt.program @train_step mesh [tp = 2]
// CHECK-SAME: {count = 1 : i64, first = 0 : i64, name = "B"}
// CHECK-SAME: {count = 3 : i64, first = 1 : i64, name = "W"}
// CHECK: rt.kernel silu(%[[X:.*]]) -> (%[[B:.*]])
// CHECK-NEXT: %[[G:.*]] = rt.alloc : memref<8x8xf32>
// CHECK-NEXT: rt.kernel all_gather(%[[X]]) -> (%[[G]])
// CHECK-NEXT: %[[C:.*]] = rt.alloc
// CHECK-NEXT: rt.kernel silu(%[[B]]) -> (%[[C]])
rt.program @train_step mesh [tp = 2] attributes {actions = array<i64: 0, 0, 0, 1, 0, 0>, functions = [{count = 1 : i64, first = 0 : i64, name = "B"}, {count = 3 : i64, first = 1 : i64, name = "W"}]} {
  %x = rt.input "x" : memref<4x8xf32>
  %b = rt.alloc : memref<4x8xf32>
  rt.kernel silu(%x) -> (%b) : memref<4x8xf32> -> memref<4x8xf32>
  %c = rt.alloc : memref<4x8xf32>
  rt.kernel silu(%b) -> (%c) : memref<4x8xf32> -> memref<4x8xf32>
  %g = rt.alloc : memref<8x8xf32>
  rt.kernel all_gather(%x) -> (%g) ints [0, 0] : memref<4x8xf32> -> memref<8x8xf32>
  %d = rt.alloc : memref<8x8xf32>
  rt.kernel silu(%g) -> (%d) : memref<8x8xf32> -> memref<8x8xf32>
  rt.output "c" %c : memref<4x8xf32>
  rt.output "d" %d : memref<8x8xf32>
}
