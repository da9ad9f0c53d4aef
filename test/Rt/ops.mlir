// Round trip of every rt op and opcode, in the custom and the generic form.
// RUN: tpc-opt %s -split-input-file | tpc-opt -split-input-file | FileCheck %s
// RUN: tpc-opt %s -split-input-file --mlir-print-op-generic \
// RUN:   | tpc-opt -split-input-file | FileCheck %s

// The dialect documentation's example.
// CHECK-LABEL: module attributes {rt.arena_bytes = 384 : i64, rt.seed = 0 : i64}
module attributes {rt.arena_bytes = 384 : i64, rt.seed = 0 : i64} {
  // CHECK: rt.program @forward {
  rt.program @forward {
    // CHECK-NEXT: %[[W:.*]] = rt.param "w" hf_shape [4, 8] init normal offset 0 : memref<4x8xf32>
    %w = rt.param "w" hf_shape [4, 8] init normal offset 0 : memref<4x8xf32>
    // CHECK-NEXT: %[[IDS:.*]] = rt.input "input_ids" bound 4 offset 128 : memref<2x3xi64>
    %ids = rt.input "input_ids" bound 4 offset 128 : memref<2x3xi64>
    // CHECK-NEXT: %[[X:.*]] = rt.alloc offset 192 : memref<2x3x8xf32>
    %x = rt.alloc offset 192 : memref<2x3x8xf32>
    // CHECK-NEXT: rt.kernel embedding(%[[W]], %[[IDS]]) -> (%[[X]]) : memref<4x8xf32>, memref<2x3xi64> -> memref<2x3x8xf32>
    rt.kernel embedding(%w, %ids) -> (%x)
        : memref<4x8xf32>, memref<2x3xi64> -> memref<2x3x8xf32>
    // CHECK-NEXT: rt.output "x" %[[X]] : memref<2x3x8xf32>
    rt.output "x" %x : memref<2x3x8xf32>
  }
}

// -----
// Every opcode with its attributes; params with every init kind, a custom
// std and no offset; an input without a bound.

// CHECK-LABEL: module attributes {rt.arena_bytes = 1048576 : i64, rt.planned_peak_bytes = 4096 : i64, rt.seed = -1 : i64}
module attributes {rt.arena_bytes = 1048576 : i64, rt.planned_peak_bytes = 4096 : i64, rt.seed = -1 : i64} {
  // CHECK: rt.program @every_opcode
  rt.program @every_opcode {
    // CHECK-NEXT: rt.param "table" hf_shape [16, 8] init normal std 1.000000e+00 : memref<16x8xf32>
    %table = rt.param "table" hf_shape [16, 8] init normal std 1.0 : memref<16x8xf32>
    // CHECK-NEXT: rt.param "gamma" hf_shape [8] init ones : memref<8xf32>
    %gamma = rt.param "gamma" hf_shape [8] init ones : memref<8xf32>
    // CHECK-NEXT: rt.param "beta" hf_shape [8] init zeros : memref<8xf32>
    %beta = rt.param "beta" hf_shape [8] init zeros : memref<8xf32>
    // CHECK-NEXT: rt.param "w" hf_shape [32, 8] init normal : memref<2x16x8xf32>
    %w = rt.param "w" hf_shape [32, 8] init normal : memref<2x16x8xf32>
    // CHECK-NEXT: rt.input "ids" : memref<2x4xi32>
    %ids = rt.input "ids" : memref<2x4xi32>
    // CHECK-NEXT: rt.input "labels" bound 16 : memref<2x4xi64>
    %labels = rt.input "labels" bound 16 : memref<2x4xi64>

    %x = rt.alloc : memref<2x4x8xf32>
    // CHECK: rt.kernel embedding
    rt.kernel embedding(%table, %ids) -> (%x) : memref<16x8xf32>, memref<2x4xi32> -> memref<2x4x8xf32>
    %y = rt.alloc : memref<2x4x2x16xf32>
    // CHECK: rt.kernel linear(%{{.*}}, %{{.*}}) -> (%{{.*}}) flags 1 :
    rt.kernel linear(%x, %w) -> (%y) flags 1 : memref<2x4x8xf32>, memref<2x16x8xf32> -> memref<2x4x2x16xf32>
    %ln = rt.alloc : memref<2x4x8xf32>
    // CHECK: rt.kernel layer_norm({{.*}}) floats [1.000000e-05] :
    rt.kernel layer_norm(%x, %gamma, %beta) -> (%ln) floats [1.0e-5] : memref<2x4x8xf32>, memref<8xf32>, memref<8xf32> -> memref<2x4x8xf32>
    %rms = rt.alloc : memref<2x4x8xf32>
    // CHECK: rt.kernel rms_norm({{.*}}) floats [1.000000e-06] :
    rt.kernel rms_norm(%ln, %gamma) -> (%rms) floats [1.0e-6] : memref<2x4x8xf32>, memref<8xf32> -> memref<2x4x8xf32>
    %g = rt.alloc : memref<2x4x8xf32>
    // CHECK: rt.kernel gelu({{.*}}) flags 1 :
    rt.kernel gelu(%rms) -> (%g) flags 1 : memref<2x4x8xf32> -> memref<2x4x8xf32>
    %s = rt.alloc : memref<2x4x8xf32>
    // CHECK: rt.kernel silu(
    rt.kernel silu(%g) -> (%s) : memref<2x4x8xf32> -> memref<2x4x8xf32>
    %a = rt.alloc : memref<2x4x8xf32>
    // CHECK: rt.kernel add(
    rt.kernel add(%s, %ln) -> (%a) : memref<2x4x8xf32>, memref<2x4x8xf32> -> memref<2x4x8xf32>
    %m = rt.alloc : memref<2x4x8xf32>
    // CHECK: rt.kernel mul(
    rt.kernel mul(%a, %gamma) -> (%m) : memref<2x4x8xf32>, memref<8xf32> -> memref<2x4x8xf32>
    %d = rt.alloc : memref<2x4x8xf32>
    // CHECK: rt.kernel dropout({{.*}}) ints [7] floats [1.000000e-01] :
    rt.kernel dropout(%m) -> (%d) ints [7] floats [0.1] : memref<2x4x8xf32> -> memref<2x4x8xf32>
    %q = rt.alloc : memref<2x4x4x2xf32>
    // CHECK: rt.kernel copy(
    rt.kernel copy(%d) -> (%q) : memref<2x4x8xf32> -> memref<2x4x4x2xf32>
    %qt = rt.alloc : memref<2x4x4x2xf32>
    // CHECK: rt.kernel transpose({{.*}}) ints [0, 2, 1, 3] :
    rt.kernel transpose(%q) -> (%qt) ints [0, 2, 1, 3] : memref<2x4x4x2xf32> -> memref<2x4x4x2xf32>
    %qr = rt.alloc : memref<2x4x4x2xf32>
    // CHECK: rt.kernel rotary({{.*}}) ints [3] floats [1.000000e+04] :
    rt.kernel rotary(%qt) -> (%qr) ints [3] floats [1.0e4] : memref<2x4x4x2xf32> -> memref<2x4x4x2xf32>
    %k = rt.alloc : memref<2x2x4x2xf32>
    // CHECK: rt.kernel slice({{.*}}) ints [1, 2, 2] :
    rt.kernel slice(%qr) -> (%k) ints [1, 2, 2] : memref<2x4x4x2xf32> -> memref<2x2x4x2xf32>
    %kr = rt.alloc : memref<2x4x4x2xf32>
    // CHECK: rt.kernel repeat({{.*}}) ints [1, 2] :
    rt.kernel repeat(%k) -> (%kr) ints [1, 2] : memref<2x2x4x2xf32> -> memref<2x4x4x2xf32>
    %o = rt.alloc : memref<2x4x4x2xf32>
    // CHECK: rt.kernel attention({{.*}}) ints [0] floats [5.000000e-01, 0.000000e+00] flags 1 :
    rt.kernel attention(%qr, %k, %k) -> (%o) ints [0] floats [0.5, 0.0] flags 1 : memref<2x4x4x2xf32>, memref<2x2x4x2xf32>, memref<2x2x4x2xf32> -> memref<2x4x4x2xf32>
    %sc = rt.alloc : memref<2x4x4x4xf32>
    // CHECK: rt.kernel batch_matmul({{.*}}) floats [5.000000e-01] flags 2 :
    rt.kernel batch_matmul(%qr, %kr) -> (%sc) floats [0.5] flags 2 : memref<2x4x4x2xf32>, memref<2x4x4x2xf32> -> memref<2x4x4x4xf32>
    %p = rt.alloc : memref<2x4x4x4xf32>
    // CHECK: rt.kernel softmax({{.*}}) flags 1 :
    rt.kernel softmax(%sc) -> (%p) flags 1 : memref<2x4x4x4xf32> -> memref<2x4x4x4xf32>
    %h = rt.alloc : memref<2x4x4x4xbf16>
    // CHECK: rt.kernel cast({{.*}}) : memref<2x4x4x4xf32> -> memref<2x4x4x4xbf16>
    rt.kernel cast(%p) -> (%h) : memref<2x4x4x4xf32> -> memref<2x4x4x4xbf16>
    %logits = rt.alloc : memref<2x4x16xf32>
    rt.kernel linear(%x, %table) -> (%logits) flags 1 : memref<2x4x8xf32>, memref<16x8xf32> -> memref<2x4x16xf32>
    %sum = rt.alloc : memref<f32>
    %count = rt.alloc : memref<i64>
    // CHECK: rt.kernel cross_entropy({{.*}}) -> (%{{.*}}, %{{.*}}) ints [-100] : memref<2x4x16xf32>, memref<2x4xi64> -> memref<f32>, memref<i64>
    rt.kernel cross_entropy(%logits, %labels) -> (%sum, %count) ints [-100] : memref<2x4x16xf32>, memref<2x4xi64> -> memref<f32>, memref<i64>
    %loss = rt.alloc : memref<f32>
    // CHECK: rt.kernel loss_mean({{.*}}) : memref<f32>, memref<i64> -> memref<f32>
    rt.kernel loss_mean(%sum, %count) -> (%loss) : memref<f32>, memref<i64> -> memref<f32>
    // CHECK: rt.output "loss"
    rt.output "loss" %loss : memref<f32>
    // CHECK-NEXT: rt.output "probs"
    rt.output "probs" %h : memref<2x4x4x4xbf16>
  }
}
