// Round trip of a pipeline rt program run by actions: kernels of two
// stages, a send (a kernel without results) and its recv, a pooled
// buffer, the functions, action lists and pools. Printed and parsed back
// in the custom and the generic form.
// RUN: tpc-opt %s | tpc-opt | FileCheck %s
// RUN: tpc-opt %s --mlir-print-op-generic | tpc-opt | FileCheck %s

// CHECK: rt.program @train_step mesh [pp = 2] attributes {
// CHECK-SAME: functions = [{count = 1 : i64, first = 0 : i64, name = "send act chunk 0"}, {count = 2 : i64, first = 1 : i64, name = "F chunk 1"}]
// CHECK-SAME: pools = [{slots = 2 : i64}]
// CHECK-SAME: stage_actions = [array<i64: 0, 0, 0, 0, 1, 1>, array<i64: 1, 0, 0, 1, 1, 1>]
rt.program @train_step mesh [pp = 2] attributes {
    functions = [{name = "send act chunk 0", first = 0, count = 1},
                 {name = "F chunk 1", first = 1, count = 2}],
    pools = [{slots = 2}],
    stage_actions = [array<i64: 0, 0, 0, 0, 1, 1>,
                     array<i64: 1, 0, 0, 1, 1, 1>]} {
  // CHECK: %[[X:.*]] = rt.input "x" microbatches 2 : memref<2x4xf32>
  %x = rt.input "x" microbatches 2 : memref<2x4xf32>
  // CHECK-NEXT: %[[R:.*]] = rt.alloc pool 0 : memref<2x4xf32>
  %r = rt.alloc pool 0 : memref<2x4xf32>
  // CHECK-NEXT: %[[Y:.*]] = rt.alloc : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  // CHECK-NEXT: rt.kernel send(%[[X]]) -> () ints [1, 0] {stage = 0 : ui32} : memref<2x4xf32> ->
  rt.kernel send(%x) -> () ints [1, 0] {stage = 0 : ui32} : memref<2x4xf32> ->
  // CHECK-NEXT: rt.kernel recv() -> (%[[R]]) ints [0, 0] {stage = 1 : ui32} : -> memref<2x4xf32>
  rt.kernel recv() -> (%r) ints [0, 0] {stage = 1 : ui32} : -> memref<2x4xf32>
  // CHECK-NEXT: rt.kernel gelu(%[[R]]) -> (%[[Y]]) {stage = 1 : ui32} : memref<2x4xf32> -> memref<2x4xf32>
  rt.kernel gelu(%r) -> (%y) {stage = 1 : ui32} : memref<2x4xf32> -> memref<2x4xf32>
  // CHECK-NEXT: rt.output "y" %[[Y]] : memref<2x4xf32>
  rt.output "y" %y : memref<2x4xf32>
}
