// rt-plan-memory refuses a program of actions whose functions, actions or
// pools break the contract of rt.program, naming the bad value.
// RUN: tpc-opt %s --split-input-file --rt-plan-memory \
// RUN:   -verify-diagnostics -o /dev/null

// A pool belongs to one stage: its slots are in that stage's arena.
rt.program @pool_on_two_stages mesh [pp = 2] attributes {
    functions = [{name = "F", first = 0, count = 1},
                 {name = "G", first = 1, count = 1}],
    pools = [{slots = 2}],
    stage_actions = [array<i64: 0, 0, 0>, array<i64: 1, 0, 0>]} {
  %x = rt.input "x" : memref<4xf32>
  // expected-note @+1 {{the pooled buffer}}
  %s = rt.alloc pool 0 : memref<4xf32>
  // expected-note @+1 {{a kernel of stage 0}}
  rt.kernel silu(%x) -> (%s) {stage = 0 : ui32} : memref<4xf32> -> memref<4xf32>
  %y = rt.alloc : memref<4xf32>
  // expected-error @+1 {{rt-plan-memory: a kernel of stage 1 uses a buffer of pool 0, which kernels of stage 0 use too (a pool's buffers are all of one stage)}}
  rt.kernel silu(%s) -> (%y) {stage = 1 : ui32} : memref<4xf32> -> memref<4xf32>
  rt.output "y" %y : memref<4xf32>
}

// -----

// expected-error @+1 {{rt-plan-memory: pool 1 is {stride = 64 : i64}, not a dictionary with an integer 'slots'}}
rt.program @no_slots attributes {
    functions = [{name = "F", first = 0, count = 1}],
    pools = [{slots = 2}, {stride = 64}],
    stage_actions = [array<i64: 0, 0, 0>]} {
  %x = rt.input "x" : memref<4xf32>
  %s = rt.alloc pool 1 : memref<4xf32>
  rt.kernel silu(%x) -> (%s) : memref<4xf32> -> memref<4xf32>
}

// -----

// expected-error @+1 {{rt-plan-memory: pool 0 has 0 slots (from 1 to 2^26)}}
rt.program @zero_slots attributes {
    functions = [{name = "F", first = 0, count = 1}],
    pools = [{slots = 0}],
    stage_actions = [array<i64: 0, 0, 0>]} {
  %x = rt.input "x" : memref<4xf32>
  %s = rt.alloc pool 0 : memref<4xf32>
  rt.kernel silu(%x) -> (%s) : memref<4xf32> -> memref<4xf32>
}

// -----

// Without actions nothing addresses a slot.
rt.program @no_actions attributes {pools = [{slots = 2}]} {
  %x = rt.input "x" : memref<4xf32>
  // expected-error @+1 {{rt-plan-memory: a buffer of pool 0 in a program without 'stage_actions' (only actions address pool slots)}}
  %s = rt.alloc pool 0 : memref<4xf32>
  rt.kernel silu(%x) -> (%s) : memref<4xf32> -> memref<4xf32>
}

// -----

// An action takes slot (its slot mod the pool's slots): slot 2 of a pool
// of 2 is slot 0, which microbatch 0 holds until its B.
// expected-error @+1 {{rt-plan-memory: stage 0: action 1 (function 0 ('F'), microbatch 1, slot 2): slot 0 of pool 0 still holds microbatch 0, whose last action on it is action 2 (a slot is reused only after its microbatch's last action)}}
rt.program @slot_still_held attributes {
    functions = [{name = "F", first = 0, count = 1},
                 {name = "B", first = 1, count = 1}],
    pools = [{slots = 2}],
    stage_actions = [array<i64: 0, 0, 0, 0, 1, 2, 1, 0, 0, 1, 1, 2>]} {
  %x = rt.input "x" : memref<4xf32>
  %s = rt.alloc pool 0 : memref<4xf32>
  %y = rt.alloc : memref<4xf32>
  rt.kernel silu(%x) -> (%s) : memref<4xf32> -> memref<4xf32>
  rt.kernel silu(%s) -> (%y) : memref<4xf32> -> memref<4xf32>
}

// -----

// expected-error @+1 {{rt-plan-memory: stage 0: action 2 (function 0 ('F'), microbatch 2, slot 0): its kernels read an input pooled by microbatch, which holds 2 microbatches}}
rt.program @microbatch_outside attributes {
    functions = [{name = "F", first = 0, count = 1}],
    stage_actions = [array<i64: 0, 0, 0, 0, 1, 0, 0, 2, 0>]} {
  %x = rt.input "x" microbatches 2 : memref<4xf32>
  %s = rt.alloc : memref<4xf32>
  rt.kernel silu(%x) -> (%s) : memref<4xf32> -> memref<4xf32>
}

// -----

rt.program @pooled_output attributes {
    functions = [{name = "F", first = 0, count = 1}],
    pools = [{slots = 1}],
    stage_actions = [array<i64: 0, 0, 0>]} {
  %x = rt.input "x" : memref<4xf32>
  %s = rt.alloc pool 0 : memref<4xf32>
  rt.kernel silu(%x) -> (%s) : memref<4xf32> -> memref<4xf32>
  // expected-error @+1 {{rt-plan-memory: binds a buffer of pool 0 (outputs and gradients are never pooled: one value each)}}
  rt.output "s" %s : memref<4xf32>
}

// -----

rt.program @kernel_in_no_function attributes {
    functions = [{name = "F", first = 0, count = 1}],
    stage_actions = [array<i64: 0, 0, 0>]} {
  %x = rt.input "x" : memref<4xf32>
  %a = rt.alloc : memref<4xf32>
  rt.kernel silu(%x) -> (%a) : memref<4xf32> -> memref<4xf32>
  %b = rt.alloc : memref<4xf32>
  // expected-error @+1 {{rt-plan-memory: kernel 1 is in no function (with 'stage_actions' every kernel is in one)}}
  rt.kernel silu(%a) -> (%b) : memref<4xf32> -> memref<4xf32>
}

// -----

rt.program @function_on_two_stages mesh [pp = 2] attributes {
    functions = [{name = "F", first = 0, count = 2}],
    stage_actions = [array<i64: 0, 0, 0>, array<i64>]} {
  %x = rt.input "x" : memref<4xf32>
  %a = rt.alloc : memref<4xf32>
  rt.kernel silu(%x) -> (%a) {stage = 0 : ui32} : memref<4xf32> -> memref<4xf32>
  %b = rt.alloc : memref<4xf32>
  // expected-error @+1 {{rt-plan-memory: function 0 ('F'): kernel 1 is on stage 1, kernel 0 on stage 0 (a function's kernels are all of one stage)}}
  rt.kernel silu(%x) -> (%b) {stage = 1 : ui32} : memref<4xf32> -> memref<4xf32>
}

// -----

// expected-error @+1 {{rt-plan-memory: stage 0: action 0 (function 1 ('G'), microbatch 0, slot 0): the function's kernels are on stage 1 (an action runs a function of its own stage)}}
rt.program @action_on_another_stage mesh [pp = 2] attributes {
    functions = [{name = "F", first = 0, count = 1},
                 {name = "G", first = 1, count = 1}],
    stage_actions = [array<i64: 1, 0, 0>, array<i64: 0, 0, 0>]} {
  %x = rt.input "x" : memref<4xf32>
  %a = rt.alloc : memref<4xf32>
  rt.kernel silu(%x) -> (%a) {stage = 0 : ui32} : memref<4xf32> -> memref<4xf32>
  %b = rt.alloc : memref<4xf32>
  rt.kernel silu(%x) -> (%b) {stage = 1 : ui32} : memref<4xf32> -> memref<4xf32>
}

// -----

// expected-error @+1 {{rt-plan-memory: expected one action list per stage in 'stage_actions' (2 stages), found 1}}
rt.program @one_list_two_stages mesh [pp = 2] attributes {
    functions = [{name = "F", first = 0, count = 1}],
    stage_actions = [array<i64: 0, 0, 0>]} {
  %x = rt.input "x" : memref<4xf32>
  %a = rt.alloc : memref<4xf32>
  rt.kernel silu(%x) -> (%a) {stage = 0 : ui32} : memref<4xf32> -> memref<4xf32>
}

// -----

// expected-error @+1 {{rt-plan-memory: 'stage_actions' entry 0 is array<i64: 0, 0>, not an array<i64: function, microbatch, slot, ...> (three integers per action)}}
rt.program @short_action attributes {
    functions = [{name = "F", first = 0, count = 1}],
    stage_actions = [array<i64: 0, 0>]} {
  %x = rt.input "x" : memref<4xf32>
  %a = rt.alloc : memref<4xf32>
  rt.kernel silu(%x) -> (%a) : memref<4xf32> -> memref<4xf32>
}
