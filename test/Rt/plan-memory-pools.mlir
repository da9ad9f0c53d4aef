// rt-plan-memory on programs run by action lists (`stage_actions`): pools
// laid out slot by slot, lifetimes that hold in any action order, and the
// planned peak over the runs of each stage's actions, as the runtime
// measures it (runtime/src/Lifetimes.cpp).
// RUN: tpc-opt %s --split-input-file --rt-plan-memory=check | FileCheck %s
// The plan passes its own check-only (printed generic: a kernel without
// results, send, does not read back in the custom form).
// RUN: tpc-opt %s --split-input-file --rt-plan-memory --mlir-print-op-generic \
// RUN:   | tpc-opt --split-input-file --rt-plan-memory=check-only -o /dev/null

// Two stages, three microbatches, the stash in two slots (slot = microbatch
// % 2). Stage 0 runs P (k0-k1), F (k2-k5), S (k6, send) and B (k7-k10);
// stage 1 R (k11, recv) and B1 (k12-k13). Sizes: x 16 bytes a microbatch,
// t and s2 32, every other buffer 16.
//
// Offsets. Stage 0's kernels are k0..k10, stage 1's k11..k13.
//   Pool 0 holds s2 and s (program order): s2 at 0, s at 64 in a slot,
//   stride 128, region 2 x 128 = 256 live over k0..k10. Pool 1 holds r:
//   stride 64, region 128 over k11..k13. c (P's, read by F) and acc (P's,
//   B's, an output) cross functions: live over k0..k10. x and w0 as today
//   (stage 0), w1 over stage 1.
//   k0: x (3 slots x 64) at 0, w0 at 192, acc at 256, c at 320, the pool 0
//       region at 384; the arena grows to 640
//   k2: t at 640 (top 704); k4: e at 704 (top 768)
//   k7: t and e are dead: g takes [640, 704); k8: u at 704; k9: v at 768
//       (top 832). Had c died after its last read in file order (k5), g
//       would have taken its bytes, which F reads again for microbatch 2
//       after B has run for microbatch 0.
//   k11: stage 0's buffers are dead: w1 at 0, the pool 1 region at 64
//   k12: h at 192
// So s2 = 384, s = 384 + 64 = 448, r = 64.
//
// Stage 0's peak. Runs: P t0-t1, F(mb 0, slot 0) t2-t5, S t6, F(1, 1)
// t7-t10, S t11, B(0, 0) t12-t15, F(2, 0) t16-t19, S t20, B(1, 1) t21-t24,
// B(2, 0) t25-t28. x (3 x 16) and w0 (16) are live throughout: 64. Live
// intervals (a write by an action that has not touched the buffer starts
// one): acc [t0, end], c [t1, t19], t [t2, t4] [t7, t9] [t16, t18], s2 of
// slot 0 [t3, t13] [t17, t26], e [t4, t5] [t9, t10] [t18, t19], s2 of
// slot 1 [t8, t22], ... At t9: acc 16 + c 16 + s2 slot 0 32 + t 32 + s2
// slot 1 32 + e 16 = 144, the most (t18 ties): 64 + 144 = 208.
// Stage 1's peak. Runs: R(0, 0) t0, R(1, 1) t1, B1(0, 0) t2-t3, R(2, 0)
// t4, B1(1, 1) t5-t6, B1(2, 0) t7-t8. w1 16 throughout; r of slot 0
// [t0, t2] [t4, t7], of slot 1 [t1, t5], h [t2, t3] [t5, t6] [t7, t8]: at
// t2 and t5 three of them, 48: 16 + 48 = 64.
// CHECK-LABEL: module attributes {rt.arena_bytes = 832 : i64, rt.planned_peak_bytes = 208 : i64, rt.stage_planned_peak_bytes = array<i64: 208, 64>}
// CHECK-NEXT: rt.program @two_stages
// CHECK-SAME: pools = [{slots = 2 : i64, stride = 128 : i64}, {slots = 2 : i64, stride = 64 : i64}]
// CHECK-NEXT: rt.input "x" microbatches 3 offset 0 :
// CHECK-NEXT: rt.param "w0" {{.*}} offset 192 :
// CHECK-NEXT: rt.param "w1" {{.*}} offset 0 :
// CHECK-NEXT: rt.alloc offset 256 :
// CHECK-NEXT: rt.kernel zeros
// CHECK-NEXT: rt.alloc offset 320 :
// CHECK-NEXT: rt.kernel silu
// CHECK-NEXT: rt.alloc offset 640 : memref<8xf32>
// CHECK-NEXT: rt.kernel repeat
// CHECK-NEXT: rt.alloc pool 0 offset 384 : memref<8xf32>
// CHECK-NEXT: rt.kernel silu
// CHECK-NEXT: rt.alloc offset 704 :
// CHECK-NEXT: rt.kernel slice
// CHECK-NEXT: rt.alloc pool 0 offset 448 : memref<4xf32>
// CHECK-NEXT: rt.kernel mul
// CHECK-NEXT: rt.kernel send
// CHECK-NEXT: rt.alloc offset 640 :
// CHECK-NEXT: rt.kernel recv
// CHECK-NEXT: rt.alloc offset 704 :
// CHECK-NEXT: rt.kernel slice
// CHECK-NEXT: rt.alloc offset 768 :
// CHECK-NEXT: rt.kernel mul
// CHECK-NEXT: rt.kernel add
// CHECK-NEXT: rt.alloc pool 1 offset 64 :
// CHECK-NEXT: rt.kernel recv
// CHECK-NEXT: rt.alloc offset 192 :
rt.program @two_stages mesh [pp = 2] attributes {
    functions = [{name = "P", first = 0, count = 2},
                 {name = "F", first = 2, count = 4},
                 {name = "S", first = 6, count = 1},
                 {name = "B", first = 7, count = 4},
                 {name = "R", first = 11, count = 1},
                 {name = "B1", first = 12, count = 2}],
    pools = [{slots = 2}, {slots = 2}],
    stage_actions = [
      array<i64: 0, 0, 0, 1, 0, 0, 2, 0, 0, 1, 1, 1, 2, 1, 1, 3, 0, 0, 1, 2, 0, 2, 2, 0, 3, 1, 1, 3, 2, 0>,
      array<i64: 4, 0, 0, 4, 1, 1, 5, 0, 0, 4, 2, 0, 5, 1, 1, 5, 2, 0>]} {
  %x = rt.input "x" microbatches 3 : memref<4xf32>
  %w0 = rt.param "w0" hf_shape [4] init normal : memref<4xf32>
  %w1 = rt.param "w1" hf_shape [4] init normal : memref<4xf32>
  // P
  %acc = rt.alloc : memref<4xf32>
  rt.kernel zeros() -> (%acc) {stage = 0 : ui32} : -> memref<4xf32>
  %c = rt.alloc : memref<4xf32>
  rt.kernel silu(%w0) -> (%c) {stage = 0 : ui32} : memref<4xf32> -> memref<4xf32>
  // F
  %t = rt.alloc : memref<8xf32>
  rt.kernel repeat(%x) -> (%t) ints [0, 2] {stage = 0 : ui32} : memref<4xf32> -> memref<8xf32>
  %s2 = rt.alloc pool 0 : memref<8xf32>
  rt.kernel silu(%t) -> (%s2) {stage = 0 : ui32} : memref<8xf32> -> memref<8xf32>
  %e = rt.alloc : memref<4xf32>
  rt.kernel slice(%t) -> (%e) ints [0, 0, 4] {stage = 0 : ui32} : memref<8xf32> -> memref<4xf32>
  %s = rt.alloc pool 0 : memref<4xf32>
  rt.kernel mul(%e, %c) -> (%s) {stage = 0 : ui32} : memref<4xf32>, memref<4xf32> -> memref<4xf32>
  // S
  "rt.kernel"(%s) <{flags = 0 : ui32, floats = array<f64>, ints = array<i64: 1, 0>, opcode = #rt<opcode send>, operandSegmentSizes = array<i32: 1, 0>, stage = 0 : ui32}> : (memref<4xf32>) -> ()
  // B
  %g = rt.alloc : memref<4xf32>
  rt.kernel recv() -> (%g) ints [1, 0] {stage = 0 : ui32} : -> memref<4xf32>
  %u = rt.alloc : memref<4xf32>
  rt.kernel slice(%s2) -> (%u) ints [0, 4, 4] {stage = 0 : ui32} : memref<8xf32> -> memref<4xf32>
  %v = rt.alloc : memref<4xf32>
  rt.kernel mul(%g, %u) -> (%v) {stage = 0 : ui32} : memref<4xf32>, memref<4xf32> -> memref<4xf32>
  rt.kernel add(%acc, %v) -> (%acc) {stage = 0 : ui32} : memref<4xf32>, memref<4xf32> -> memref<4xf32>
  // R
  %r = rt.alloc pool 1 : memref<4xf32>
  rt.kernel recv() -> (%r) ints [0, 0] {stage = 1 : ui32} : -> memref<4xf32>
  // B1
  %h = rt.alloc : memref<4xf32>
  rt.kernel mul(%r, %w1) -> (%h) {stage = 1 : ui32} : memref<4xf32>, memref<4xf32> -> memref<4xf32>
  "rt.kernel"(%h) <{flags = 0 : ui32, floats = array<f64>, ints = array<i64: 0, 0>, opcode = #rt<opcode send>, operandSegmentSizes = array<i32: 1, 0>, stage = 1 : ui32}> : (memref<4xf32>) -> ()
  rt.output "sum" %acc : memref<4xf32>
}

// -----

// One stage, without a mesh or stages: F (k0-k1) runs for microbatches 0
// and 1 in slots 0 and 1, then B (k2) for each.
// Offsets: x (2 slots x 64) first at 0, then at k0 t at 128, o (an output,
// written by B for each microbatch: live over every kernel) at 192 and the
// pool's region (2 x 64) at 256, so s = 256.
// Peak: x 32 throughout. Runs F(0, 0) t0-t1, F(1, 1) t2-t3, B(0, 0) t4,
// B(1, 1) t5: t [t0, t1] [t2, t3], s of slot 0 [t1, t4], of slot 1
// [t3, t5], o [t4] [t5, end]. At t3 t and both slots of s are live, 96: the
// peak is 32 + 96 = 128 (over kernels in file order one slot of s would
// count: 96).
// CHECK-LABEL: module attributes {rt.arena_bytes = 384 : i64, rt.planned_peak_bytes = 128 : i64}
// CHECK-NEXT: rt.program @one_stage
// CHECK-SAME: pools = [{slots = 2 : i64, stride = 64 : i64}]
// CHECK-NEXT: rt.input "x" microbatches 2 offset 0 :
// CHECK-NEXT: rt.alloc offset 128 :
// CHECK-NEXT: rt.kernel repeat
// CHECK-NEXT: rt.alloc pool 0 offset 256 :
// CHECK-NEXT: rt.kernel silu
// CHECK-NEXT: rt.alloc offset 192 :
rt.program @one_stage attributes {
    functions = [{name = "F", first = 0, count = 2},
                 {name = "B", first = 2, count = 1}],
    pools = [{slots = 2}],
    stage_actions = [array<i64: 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1>]} {
  %x = rt.input "x" microbatches 2 : memref<4xf32>
  %t = rt.alloc : memref<8xf32>
  rt.kernel repeat(%x) -> (%t) ints [0, 2] : memref<4xf32> -> memref<8xf32>
  %s = rt.alloc pool 0 : memref<8xf32>
  rt.kernel silu(%t) -> (%s) : memref<8xf32> -> memref<8xf32>
  %o = rt.alloc : memref<8xf32>
  rt.kernel silu(%s) -> (%o) : memref<8xf32> -> memref<8xf32>
  rt.output "o" %o : memref<8xf32>
}
