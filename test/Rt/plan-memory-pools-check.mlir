// rt-plan-memory=check-only on programs run by actions: every slot of a
// pooled buffer is a buffer of its own (at offset + slot * stride), and the
// planned peak is over the actions' runs.
// RUN: tpc-opt %s --split-input-file --rt-plan-memory=check-only \
// RUN:   -verify-diagnostics -o /dev/null

// The plan rt-plan-memory makes (plan-memory-pools.mlir) passes.
module attributes {rt.arena_bytes = 384 : i64, rt.planned_peak_bytes = 128 : i64} {
  rt.program @valid attributes {
      functions = [{name = "F", first = 0, count = 2},
                   {name = "B", first = 2, count = 1}],
      pools = [{slots = 2, stride = 64}],
      stage_actions = [array<i64: 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1>]} {
    %x = rt.input "x" microbatches 2 offset 0 : memref<4xf32>
    %t = rt.alloc offset 128 : memref<8xf32>
    rt.kernel repeat(%x) -> (%t) ints [0, 2] : memref<4xf32> -> memref<8xf32>
    %s = rt.alloc pool 0 offset 256 : memref<8xf32>
    rt.kernel silu(%t) -> (%s) : memref<8xf32> -> memref<8xf32>
    %o = rt.alloc offset 192 : memref<8xf32>
    rt.kernel silu(%s) -> (%o) : memref<8xf32> -> memref<8xf32>
    rt.output "o" %o : memref<8xf32>
  }
}

// -----

// o lies on slot 1 of s, which is live while it is.
module attributes {rt.arena_bytes = 384 : i64} {
  rt.program @on_slot_1 attributes {
      functions = [{name = "F", first = 0, count = 2},
                   {name = "B", first = 2, count = 1}],
      pools = [{slots = 2, stride = 64}],
      stage_actions = [array<i64: 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1>]} {
    %x = rt.input "x" microbatches 2 offset 0 : memref<4xf32>
    %t = rt.alloc offset 128 : memref<8xf32>
    rt.kernel repeat(%x) -> (%t) ints [0, 2] : memref<4xf32> -> memref<8xf32>
    // expected-note @+1 {{the other buffer}}
    %s = rt.alloc pool 0 offset 256 : memref<8xf32>
    rt.kernel silu(%t) -> (%s) : memref<8xf32> -> memref<8xf32>
    // expected-error @+1 {{rt-plan-memory: bytes [320, 352) overlap bytes [320, 352) of a buffer live at the same time}}
    %o = rt.alloc offset 320 : memref<8xf32>
    rt.kernel silu(%s) -> (%o) : memref<8xf32> -> memref<8xf32>
    rt.output "o" %o : memref<8xf32>
  }
}

// -----

// The slots of a 128-byte buffer 64 bytes apart overlap.
module attributes {rt.arena_bytes = 512 : i64} {
  rt.program @stride_too_small attributes {
      functions = [{name = "F", first = 0, count = 1}],
      pools = [{slots = 2, stride = 64}],
      stage_actions = [array<i64: 0, 0, 0, 0, 1, 1>]} {
    %x = rt.input "x" offset 0 : memref<32xf32>
    // expected-error @+2 {{rt-plan-memory: bytes [192, 320) overlap bytes [128, 256) of a buffer live at the same time}}
    // expected-note @+1 {{the other buffer}}
    %s = rt.alloc pool 0 offset 128 : memref<32xf32>
    rt.kernel silu(%x) -> (%s) : memref<32xf32> -> memref<32xf32>
  }
}

// -----

// Slot 1 of s ends past the arena.
module attributes {rt.arena_bytes = 320 : i64} {
  rt.program @last_slot_outside attributes {
      functions = [{name = "F", first = 0, count = 1}],
      pools = [{slots = 2, stride = 64}],
      stage_actions = [array<i64: 0, 0, 0, 0, 1, 1>]} {
    %x = rt.input "x" offset 0 : memref<8xf32>
    // expected-error @+1 {{rt-plan-memory: buffer at offset 256 (32 bytes in each of 2 slots 64 bytes apart) is misaligned or outside the arena of 320 bytes}}
    %s = rt.alloc pool 0 offset 256 : memref<8xf32>
    rt.kernel silu(%x) -> (%s) : memref<8xf32> -> memref<8xf32>
  }
}

// -----

module attributes {rt.arena_bytes = 384 : i64} {
  // expected-error @+1 {{rt-plan-memory: check-only needs a 'stride' on every pool; pool 0 is {slots = 2 : i64}}}
  rt.program @no_stride attributes {
      functions = [{name = "F", first = 0, count = 1}],
      pools = [{slots = 2}],
      stage_actions = [array<i64: 0, 0, 0, 0, 1, 1>]} {
    %x = rt.input "x" offset 0 : memref<8xf32>
    %s = rt.alloc pool 0 offset 64 : memref<8xf32>
    rt.kernel silu(%x) -> (%s) : memref<8xf32> -> memref<8xf32>
  }
}

// -----

// 96 is the peak over the kernels in file order, which counts one slot of
// s; both are live at F's second run.
// expected-error @+1 {{rt-plan-memory: 'rt.planned_peak_bytes' is 96 but the buffers live at one kernel add up to at most 128}}
module attributes {rt.arena_bytes = 384 : i64, rt.planned_peak_bytes = 96 : i64} {
  rt.program @file_order_peak attributes {
      functions = [{name = "F", first = 0, count = 2},
                   {name = "B", first = 2, count = 1}],
      pools = [{slots = 2, stride = 64}],
      stage_actions = [array<i64: 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1>]} {
    %x = rt.input "x" microbatches 2 offset 0 : memref<4xf32>
    %t = rt.alloc offset 128 : memref<8xf32>
    rt.kernel repeat(%x) -> (%t) ints [0, 2] : memref<4xf32> -> memref<8xf32>
    %s = rt.alloc pool 0 offset 256 : memref<8xf32>
    rt.kernel silu(%t) -> (%s) : memref<8xf32> -> memref<8xf32>
    %o = rt.alloc offset 192 : memref<8xf32>
    rt.kernel silu(%s) -> (%o) : memref<8xf32> -> memref<8xf32>
    rt.output "o" %o : memref<8xf32>
  }
}

// -----

// Each stage's planned peak is its own: stage 0's x and a (2 x 16), stage
// 1's y and b (2 x 32).
// expected-error @+1 {{rt-plan-memory: 'rt.stage_planned_peak_bytes' is array<i64: 32, 32> but the stages' peaks are [32, 64]}}
module attributes {rt.arena_bytes = 256 : i64, rt.planned_peak_bytes = 64 : i64, rt.stage_planned_peak_bytes = array<i64: 32, 32>} {
  rt.program @stage_peaks mesh [pp = 2] attributes {
      functions = [{name = "F", first = 0, count = 1},
                   {name = "G", first = 1, count = 1}],
      stage_actions = [array<i64: 0, 0, 0>, array<i64: 1, 0, 0>]} {
    %x = rt.input "x" offset 0 : memref<4xf32>
    %y = rt.input "y" offset 64 : memref<8xf32>
    %a = rt.alloc offset 128 : memref<4xf32>
    rt.kernel silu(%x) -> (%a) {stage = 0 : ui32} : memref<4xf32> -> memref<4xf32>
    %b = rt.alloc offset 192 : memref<8xf32>
    rt.kernel silu(%y) -> (%b) {stage = 1 : ui32} : memref<8xf32> -> memref<8xf32>
  }
}
