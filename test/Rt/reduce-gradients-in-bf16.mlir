// rt-reduce-gradients-in-bf16: an all_reduce of an f32 gradient (bound by
// rt.grad, or read by an optimizer update, also through an add) becomes
// cast, all_reduce in bf16, cast back; other reductions (a loss sum, an i64
// count, an activation) stay; in a program of functions the casts join their
// reduction's function.
// RUN: tpc-opt %s --split-input-file --rt-reduce-gradients-in-bf16 | FileCheck %s

// CHECK-LABEL: rt.program @train_step mesh [dp = 2]
// CHECK: %[[G:.*]] = rt.alloc : memref<16xf32>
// CHECK: %[[R:.*]] = rt.alloc : memref<16xf32>
// CHECK-NEXT: %[[GB:.*]] = rt.alloc : memref<16xbf16>
// CHECK-NEXT: rt.kernel cast(%[[G]]) -> (%[[GB]]) : memref<16xf32> -> memref<16xbf16>
// CHECK-NEXT: %[[RB:.*]] = rt.alloc : memref<16xbf16>
// CHECK-NEXT: rt.kernel all_reduce(%[[GB]]) -> (%[[RB]]) ints [0] : memref<16xbf16> -> memref<16xbf16>
// CHECK-NEXT: rt.kernel cast(%[[RB]]) -> (%[[R]]) : memref<16xbf16> -> memref<16xf32>
// The activation's reduction and the loss sum's stay f32.
// CHECK: rt.kernel all_reduce(%{{.*}}) -> (%{{.*}}) ints [0] : memref<16xf32> -> memref<16xf32>
// CHECK: rt.kernel sum_to
// CHECK-NEXT: %{{.*}} = rt.alloc : memref<f32>
// CHECK-NEXT: rt.kernel all_reduce(%{{.*}}) -> (%{{.*}}) ints [0] : memref<f32> -> memref<f32>
// CHECK: rt.grad "w" %[[R]]
rt.program @train_step mesh [dp = 2] {
  %w = rt.param "w" hf_shape [16] init normal : memref<16xf32>
  %x = rt.input "x" : memref<16xf32>
  %g = rt.alloc : memref<16xf32>
  rt.kernel silu(%x) -> (%g) : memref<16xf32> -> memref<16xf32>
  %r = rt.alloc : memref<16xf32>
  rt.kernel all_reduce(%g) -> (%r) ints [0] : memref<16xf32> -> memref<16xf32>
  %a = rt.alloc : memref<16xf32>
  rt.kernel all_reduce(%x) -> (%a) ints [0] : memref<16xf32> -> memref<16xf32>
  %l = rt.alloc : memref<f32>
  rt.kernel sum_to(%a) -> (%l) : memref<16xf32> -> memref<f32>
  %ls = rt.alloc : memref<f32>
  rt.kernel all_reduce(%l) -> (%ls) ints [0] : memref<f32> -> memref<f32>
  rt.output "loss" %ls : memref<f32>
  rt.grad "w" %r : memref<16xf32>
}

// -----

// A gradient read by adamw_update through an add, in a program of
// functions: the epilogue grows by the two casts.
// CHECK-LABEL: rt.program @train_step
// CHECK-SAME: {count = 1 : i64, first = 0 : i64, name = "prologue"}, {count = 6 : i64, first = 1 : i64, name = "epilogue"}
// CHECK: rt.kernel cast
// CHECK-NEXT: rt.alloc : memref<16xbf16>
// CHECK-NEXT: rt.kernel all_reduce({{.*}}) ints [0] : memref<16xbf16> -> memref<16xbf16>
// CHECK-NEXT: rt.kernel cast
// CHECK: rt.kernel adamw_update
rt.program @train_step mesh [dp = 2] attributes {actions = array<i64: 0, 0, 0, 1, 0, 0>, functions = [{count = 1 : i64, first = 0 : i64, name = "prologue"}, {count = 4 : i64, first = 1 : i64, name = "epilogue"}]} {
  %w = rt.param "w" hf_shape [16] init normal : memref<16xf32>
  %m = rt.state "exp_avg" of "w" : memref<16xf32>
  %v = rt.state "exp_avg_sq" of "w" : memref<16xf32>
  %x = rt.input "x" : memref<16xf32>
  %step = rt.input "step" : memref<i64>
  %lr = rt.alloc : memref<f32>
  rt.kernel lr_schedule(%step) -> (%lr) ints [0, 0] floats [1.000000e-03, 0.000000e+00] : memref<i64> -> memref<f32>
  %g = rt.alloc : memref<16xf32>
  rt.kernel silu(%x) -> (%g) : memref<16xf32> -> memref<16xf32>
  %r = rt.alloc : memref<16xf32>
  rt.kernel all_reduce(%g) -> (%r) ints [0] : memref<16xf32> -> memref<16xf32>
  %s = rt.alloc : memref<16xf32>
  rt.kernel add(%r, %x) -> (%s) : memref<16xf32>, memref<16xf32> -> memref<16xf32>
  rt.kernel adamw_update(%w, %s, %m, %v, %lr, %step) -> (%w, %m, %v) floats [9.000000e-01, 9.990000e-01, 1.000000e-08, 1.000000e-02] : memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<f32>, memref<i64> -> memref<16xf32>, memref<16xf32>, memref<16xf32>
}

// -----

// A run of consecutive all_reduces (rt-bucket-reductions) stays one: both
// casts to bf16 go before its first member and both casts back after its
// last, in the members' order; the loss sum inside the run stays f32.
// CHECK-LABEL: rt.program @train_step mesh [dp = 2]
// CHECK: rt.kernel silu(%{{.*}}) -> (%[[G1:.*]]) :
// CHECK: rt.kernel sum_to
// CHECK: rt.kernel silu(%{{.*}}) -> (%[[G2:.*]]) :
// CHECK-NEXT: %[[G1B:.*]] = rt.alloc : memref<16xbf16>
// CHECK-NEXT: rt.kernel cast(%[[G1]]) -> (%[[G1B]])
// CHECK-NEXT: %[[R1B:.*]] = rt.alloc : memref<16xbf16>
// CHECK-NEXT: %[[G2B:.*]] = rt.alloc : memref<8xbf16>
// CHECK-NEXT: rt.kernel cast(%[[G2]]) -> (%[[G2B]])
// CHECK-NEXT: %[[R2B:.*]] = rt.alloc : memref<8xbf16>
// CHECK-NEXT: rt.kernel all_reduce(%[[G1B]]) -> (%[[R1B]]) ints [0]
// CHECK-NEXT: rt.kernel all_reduce(%{{.*}}) -> (%{{.*}}) ints [0] : memref<f32> -> memref<f32>
// CHECK-NEXT: rt.kernel all_reduce(%[[G2B]]) -> (%[[R2B]]) ints [0]
// CHECK-NEXT: rt.kernel cast(%[[R1B]]) -> (%[[G1]])
// CHECK-NEXT: rt.kernel cast(%[[R2B]]) -> (%[[G2]])
// CHECK-NEXT: rt.output
rt.program @train_step mesh [dp = 2] {
  %w = rt.param "w" hf_shape [16] init normal : memref<16xf32>
  %v = rt.param "v" hf_shape [8] init normal : memref<8xf32>
  %x = rt.input "x" : memref<16xf32>
  %y = rt.input "y" : memref<8xf32>
  %g1 = rt.alloc : memref<16xf32>
  rt.kernel silu(%x) -> (%g1) : memref<16xf32> -> memref<16xf32>
  %l = rt.alloc : memref<f32>
  rt.kernel sum_to(%x) -> (%l) : memref<16xf32> -> memref<f32>
  %g2 = rt.alloc : memref<8xf32>
  rt.kernel silu(%y) -> (%g2) : memref<8xf32> -> memref<8xf32>
  rt.kernel all_reduce(%g1) -> (%g1) ints [0] : memref<16xf32> -> memref<16xf32>
  rt.kernel all_reduce(%l) -> (%l) ints [0] : memref<f32> -> memref<f32>
  rt.kernel all_reduce(%g2) -> (%g2) ints [0] : memref<8xf32> -> memref<8xf32>
  rt.output "loss" %l : memref<f32>
  rt.grad "w" %g1 : memref<16xf32>
  rt.grad "v" %g2 : memref<8xf32>
}
