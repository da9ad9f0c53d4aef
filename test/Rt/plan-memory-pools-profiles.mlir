// The planned peak of a program run by actions, with buffers of every kind
// the peak tells apart (ActionPeak.cpp): private to a function's runs (each
// run starts a new interval, so they add up the same way in every run, once
// per function), and crossing runs (pooled hand-overs, accumulators, outputs)
// replayed at their touches. The peak falls inside a function, where a
// private buffer and crossing ones are live together.
// RUN: tpc-opt %s --rt-plan-memory=check | FileCheck %s
// RUN: tpc-opt %s --rt-plan-memory --mlir-print-op-generic \
// RUN:   | tpc-opt --rt-plan-memory=check-only -o %t.mlir

// One stage: P (k0), then F (k1-k4) for microbatches 0 and 1 in slots 0 and
// 1, then B (k5-k8) for each. Runs: P t0, F(0, 0) t1-t4, F(1, 1) t5-t8,
// B(0, 0) t9-t12, B(1, 1) t13-t16. x persists: 2 x 16 = 32.
// Private to runs: t (64) [t1, t2] [t5, t6]; q (16), written first by F
// and by B, [t3, t4] [t7, t8] [t9] [t13]; p (16 a slot), pooled but only
// F's, [t4] in slot 0, [t8] in slot 1; u (16) [t10, t12] [t14, t16].
// Crossing runs: acc (16), zeroed by P and added to in place by B, an
// output: [t0, end]; s (64 a slot), F's hand-over to B: slot 0 [t2, t10],
// slot 1 [t6, t14]; o (16), an output written by each B: [t12] [t16, end].
// At t6: acc 16 + t 64 + s of both slots 128 = 208, the most (t8: 176,
// t10: 160): 32 + 208 = 240.
// CHECK: module attributes {{{.*}}rt.planned_peak_bytes = 240 : i64}
rt.program @profiles attributes {
    functions = [{name = "P", first = 0, count = 1},
                 {name = "F", first = 1, count = 4},
                 {name = "B", first = 5, count = 4}],
    pools = [{slots = 2}],
    stage_actions = [array<i64: 0, 0, 0, 1, 0, 0, 1, 1, 1, 2, 0, 0, 2, 1, 1>]} {
  %x = rt.input "x" microbatches 2 : memref<4xf32>
  // P
  %acc = rt.alloc : memref<4xf32>
  rt.kernel zeros() -> (%acc) : -> memref<4xf32>
  // F
  %t = rt.alloc : memref<16xf32>
  rt.kernel repeat(%x) -> (%t) ints [0, 4] : memref<4xf32> -> memref<16xf32>
  %s = rt.alloc pool 0 : memref<16xf32>
  rt.kernel silu(%t) -> (%s) : memref<16xf32> -> memref<16xf32>
  %q = rt.alloc : memref<4xf32>
  rt.kernel zeros() -> (%q) : -> memref<4xf32>
  %p = rt.alloc pool 0 : memref<4xf32>
  rt.kernel silu(%q) -> (%p) : memref<4xf32> -> memref<4xf32>
  // B
  rt.kernel zeros() -> (%q) : -> memref<4xf32>
  %u = rt.alloc : memref<4xf32>
  rt.kernel slice(%s) -> (%u) ints [0, 0, 4] : memref<16xf32> -> memref<4xf32>
  rt.kernel add(%acc, %u) -> (%acc) : memref<4xf32>, memref<4xf32> -> memref<4xf32>
  %o = rt.alloc : memref<4xf32>
  rt.kernel silu(%u) -> (%o) : memref<4xf32> -> memref<4xf32>
  rt.output "acc" %acc : memref<4xf32>
  rt.output "o" %o : memref<4xf32>
}
