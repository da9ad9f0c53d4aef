rt.program @p {
  %do = rt.input "do" : memref<1x2x4x4xf32>
  %q = rt.input "q" : memref<1x2x4x8xf32>
  %k = rt.input "k" : memref<1x1x4x8xf32>
  %dq = rt.alloc : memref<1x2x4x8xf32>
  %dk = rt.alloc : memref<1x1x4x8xf32>
  %dv = rt.alloc : memref<1x1x4x8xf32>
  rt.kernel attention_grad(%do, %q, %k, %k) -> (%dq, %dk, %dv) ints [0] floats [0.5, 0.0] : memref<1x2x4x4xf32>, memref<1x2x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32> -> memref<1x2x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>
}
