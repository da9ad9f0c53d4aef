rt.program @p {
  %w = rt.input "w" : memref<8xf32>
  %m = rt.alloc : memref<8xf32>
  %g = rt.input "g" : memref<8xf32>
  %lr = rt.input "lr" : memref<f32>
  rt.kernel silu(%g) -> (%m) : memref<8xf32> -> memref<8xf32>
  rt.kernel sgd_update(%w, %g, %m, %lr) -> (%w, %m) floats [0.9, 0.0] : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32> -> memref<8xf32>, memref<8xf32>
}
