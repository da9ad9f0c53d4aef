module attributes {rt.arena_bytes = 1048576 : i64, rt.planned_peak_bytes = 4096 : i64, rt.seed = -1 : i64} {
  rt.program @every_opcode {
    %table = rt.param "table" hf_shape [16, 8] init normal std 1.0 : memref<16x8xf32>
    %gamma = rt.param "gamma" hf_shape [8] init ones : memref<8xf32>
    %beta = rt.param "beta" hf_shape [8] init zeros : memref<8xf32>
    %w = rt.param "w" hf_shape [32, 8] init normal : memref<2x16x8xf32>
    %ids = rt.input "ids" : memref<2x4xi64>
    %labels = rt.input "labels" bound 16 : memref<2x4xi64>

    %x = rt.alloc : memref<2x4x8xf32>
    rt.kernel embedding(%table, %ids) -> (%x) : memref<16x8xf32>, memref<2x4xi64> -> memref<2x4x8xf32>
    %y = rt.alloc : memref<2x4x2x16xf32>
    rt.kernel linear(%x, %w) -> (%y) flags 1 : memref<2x4x8xf32>, memref<2x16x8xf32> -> memref<2x4x2x16xf32>
    %ln = rt.alloc : memref<2x4x8xf32>
    rt.kernel layer_norm(%x, %gamma, %beta) -> (%ln) floats [1.0e-5] : memref<2x4x8xf32>, memref<8xf32>, memref<8xf32> -> memref<2x4x8xf32>
    %rms = rt.alloc : memref<2x4x8xf32>
    rt.kernel rms_norm(%ln, %gamma) -> (%rms) floats [1.0e-6] : memref<2x4x8xf32>, memref<8xf32> -> memref<2x4x8xf32>
    %g = rt.alloc : memref<2x4x8xf32>
    rt.kernel gelu(%rms) -> (%g) flags 1 : memref<2x4x8xf32> -> memref<2x4x8xf32>
    %s = rt.alloc : memref<2x4x8xf32>
    rt.kernel silu(%g) -> (%s) : memref<2x4x8xf32> -> memref<2x4x8xf32>
    %a = rt.alloc : memref<2x4x8xf32>
    rt.kernel add(%s, %ln) -> (%a) : memref<2x4x8xf32>, memref<2x4x8xf32> -> memref<2x4x8xf32>
    %m = rt.alloc : memref<2x4x8xf32>
    rt.kernel mul(%a, %gamma) -> (%m) : memref<2x4x8xf32>, memref<8xf32> -> memref<2x4x8xf32>
    %d = rt.alloc : memref<2x4x8xf32>
    rt.kernel dropout(%m) -> (%d) ints [7] floats [0.1] : memref<2x4x8xf32> -> memref<2x4x8xf32>
    %q = rt.alloc : memref<2x4x4x2xf32>
    rt.kernel copy(%d) -> (%q) : memref<2x4x8xf32> -> memref<2x4x4x2xf32>
    %qt = rt.alloc : memref<2x4x4x2xf32>
    rt.kernel transpose(%q) -> (%qt) ints [0, 2, 1, 3] : memref<2x4x4x2xf32> -> memref<2x4x4x2xf32>
    %qr = rt.alloc : memref<2x4x4x2xf32>
    rt.kernel rotary(%qt) -> (%qr) ints [3] floats [1.0e4] : memref<2x4x4x2xf32> -> memref<2x4x4x2xf32>
    %k = rt.alloc : memref<2x2x4x2xf32>
    rt.kernel slice(%qr) -> (%k) ints [1, 2, 2] : memref<2x4x4x2xf32> -> memref<2x2x4x2xf32>
    %kr = rt.alloc : memref<2x4x4x2xf32>
    rt.kernel repeat(%k) -> (%kr) ints [1, 2] : memref<2x2x4x2xf32> -> memref<2x4x4x2xf32>
    %o = rt.alloc : memref<2x4x4x2xf32>
    rt.kernel attention(%qr, %k, %k) -> (%o) ints [0] floats [0.5, 0.0] flags 1 : memref<2x4x4x2xf32>, memref<2x2x4x2xf32>, memref<2x2x4x2xf32> -> memref<2x4x4x2xf32>
    %sc = rt.alloc : memref<2x4x4x4xf32>
    rt.kernel batch_matmul(%qr, %kr) -> (%sc) floats [0.5] flags 2 : memref<2x4x4x2xf32>, memref<2x4x4x2xf32> -> memref<2x4x4x4xf32>
    %p = rt.alloc : memref<2x4x4x4xf32>
    rt.kernel softmax(%sc) -> (%p) flags 1 : memref<2x4x4x4xf32> -> memref<2x4x4x4xf32>
    %h = rt.alloc : memref<2x4x4x4xbf16>
    rt.kernel cast(%p) -> (%h) : memref<2x4x4x4xf32> -> memref<2x4x4x4xbf16>
    %logits = rt.alloc : memref<2x4x16xf32>
    rt.kernel linear(%x, %table) -> (%logits) flags 1 : memref<2x4x8xf32>, memref<16x8xf32> -> memref<2x4x16xf32>
    %sum = rt.alloc : memref<f32>
    %count = rt.alloc : memref<i64>
    rt.kernel cross_entropy(%logits, %labels) -> (%sum, %count) ints [-100] : memref<2x4x16xf32>, memref<2x4xi64> -> memref<f32>, memref<i64>
    %loss = rt.alloc : memref<f32>
    rt.kernel loss_mean(%sum, %count) -> (%loss) : memref<f32>, memref<i64> -> memref<f32>
    rt.output "loss" %loss : memref<f32>
    rt.output "probs" %h : memref<2x4x4x4xbf16>
  }
}
