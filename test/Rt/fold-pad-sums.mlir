// rt-fold-pad-sums: pads that tile a dimension, added up, become one concat
// of the pieces in offset order; sums that do not tile, or whose pads or
// adds are read elsewhere, stay.
// RUN: tpc-opt %s --split-input-file --rt-fold-pad-sums | FileCheck %s

// Three pieces of dimension 1 (sizes 1, 2, 1 at offsets 2, 0, 3), padded
// and summed by two adds: one concat writes the sum.
// CHECK-LABEL: rt.program @train_step
// CHECK: %[[Q:.*]] = rt.alloc : memref<2x2x4xf32>
// CHECK: %[[K:.*]] = rt.alloc : memref<2x1x4xf32>
// CHECK: %[[V:.*]] = rt.alloc : memref<2x1x4xf32>
// CHECK-NOT: rt.kernel pad
// CHECK-NOT: rt.kernel add
// CHECK: %[[S:.*]] = rt.alloc : memref<2x4x4xf32>
// CHECK-NEXT: rt.kernel concat(%[[Q]], %[[K]], %[[V]]) -> (%[[S]]) ints [1] : memref<2x2x4xf32>, memref<2x1x4xf32>, memref<2x1x4xf32> -> memref<2x4x4xf32>
// CHECK-NEXT: rt.output "s" %[[S]]
rt.program @train_step {
  %x = rt.input "x" : memref<2x4x4xf32>
  %q = rt.alloc : memref<2x2x4xf32>
  rt.kernel slice(%x) -> (%q) ints [1, 0, 2] : memref<2x4x4xf32> -> memref<2x2x4xf32>
  %k = rt.alloc : memref<2x1x4xf32>
  rt.kernel slice(%x) -> (%k) ints [1, 2, 1] : memref<2x4x4xf32> -> memref<2x1x4xf32>
  %v = rt.alloc : memref<2x1x4xf32>
  rt.kernel slice(%x) -> (%v) ints [1, 3, 1] : memref<2x4x4xf32> -> memref<2x1x4xf32>
  %pk = rt.alloc : memref<2x4x4xf32>
  rt.kernel pad(%k) -> (%pk) ints [1, 2] : memref<2x1x4xf32> -> memref<2x4x4xf32>
  %pq = rt.alloc : memref<2x4x4xf32>
  rt.kernel pad(%q) -> (%pq) ints [1, 0] : memref<2x2x4xf32> -> memref<2x4x4xf32>
  %t = rt.alloc : memref<2x4x4xf32>
  rt.kernel add(%pk, %pq) -> (%t) : memref<2x4x4xf32>, memref<2x4x4xf32> -> memref<2x4x4xf32>
  %pv = rt.alloc : memref<2x4x4xf32>
  rt.kernel pad(%v) -> (%pv) ints [1, 3] : memref<2x1x4xf32> -> memref<2x4x4xf32>
  %s = rt.alloc : memref<2x4x4xf32>
  rt.kernel add(%t, %pv) -> (%s) : memref<2x4x4xf32>, memref<2x4x4xf32> -> memref<2x4x4xf32>
  rt.output "s" %s : memref<2x4x4xf32>
}

// -----

// A gap (offsets 0 and 2 of 4, sizes 1): the zeros between are the sum's;
// a pad read again; an add of something else than a pad: all stay.
// CHECK-LABEL: rt.program @train_step
// CHECK-NOT: rt.kernel concat
rt.program @train_step {
  %a = rt.input "a" : memref<2x1x4xf32>
  %b = rt.input "b" : memref<2x1x4xf32>
  %x = rt.input "x" : memref<2x4x4xf32>
  %pa = rt.alloc : memref<2x4x4xf32>
  rt.kernel pad(%a) -> (%pa) ints [1, 0] : memref<2x1x4xf32> -> memref<2x4x4xf32>
  %pb = rt.alloc : memref<2x4x4xf32>
  rt.kernel pad(%b) -> (%pb) ints [1, 2] : memref<2x1x4xf32> -> memref<2x4x4xf32>
  %gap = rt.alloc : memref<2x4x4xf32>
  rt.kernel add(%pa, %pb) -> (%gap) : memref<2x4x4xf32>, memref<2x4x4xf32> -> memref<2x4x4xf32>
  %pc = rt.alloc : memref<2x4x4xf32>
  rt.kernel pad(%a) -> (%pc) ints [1, 1] : memref<2x1x4xf32> -> memref<2x4x4xf32>
  %mixed = rt.alloc : memref<2x4x4xf32>
  rt.kernel add(%pc, %x) -> (%mixed) : memref<2x4x4xf32>, memref<2x4x4xf32> -> memref<2x4x4xf32>
  rt.output "gap" %gap : memref<2x4x4xf32>
  rt.output "mixed" %mixed : memref<2x4x4xf32>
  rt.output "pa" %pa : memref<2x4x4xf32>
}

// -----

// In a program of functions the concat takes the root's function, whose
// range shrinks; the other functions move up.
// CHECK-LABEL: rt.program @train_step
// CHECK-SAME: functions = [{count = 2 : i64, first = 0 : i64, name = "pieces"}, {count = 1 : i64, first = 2 : i64, name = "sum"}, {count = 1 : i64, first = 3 : i64, name = "after"}]
// CHECK: rt.kernel concat
rt.program @train_step attributes {actions = array<i64: 0, 0, 0, 1, 0, 0, 2, 0, 0>, functions = [{count = 2 : i64, first = 0 : i64, name = "pieces"}, {count = 3 : i64, first = 2 : i64, name = "sum"}, {count = 1 : i64, first = 5 : i64, name = "after"}]} {
  %x = rt.input "x" : memref<2x2x4xf32>
  %a = rt.alloc : memref<2x1x4xf32>
  rt.kernel slice(%x) -> (%a) ints [1, 0, 1] : memref<2x2x4xf32> -> memref<2x1x4xf32>
  %b = rt.alloc : memref<2x1x4xf32>
  rt.kernel slice(%x) -> (%b) ints [1, 1, 1] : memref<2x2x4xf32> -> memref<2x1x4xf32>
  %pa = rt.alloc : memref<2x2x4xf32>
  rt.kernel pad(%a) -> (%pa) ints [1, 0] : memref<2x1x4xf32> -> memref<2x2x4xf32>
  %pb = rt.alloc : memref<2x2x4xf32>
  rt.kernel pad(%b) -> (%pb) ints [1, 1] : memref<2x1x4xf32> -> memref<2x2x4xf32>
  %s = rt.alloc : memref<2x2x4xf32>
  rt.kernel add(%pa, %pb) -> (%s) : memref<2x2x4xf32>, memref<2x2x4xf32> -> memref<2x2x4xf32>
  %t = rt.alloc : memref<2x2x4xf32>
  rt.kernel silu(%s) -> (%t) : memref<2x2x4xf32> -> memref<2x2x4xf32>
  rt.output "t" %t : memref<2x2x4xf32>
}
