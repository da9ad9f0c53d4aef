rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %m = rt.state "momentum" of "w" : memref<8xf32>
  %lr = rt.input "lr" : memref<f32>
  rt.kernel sgd_update(%w, %w, %m, %lr) -> (%w, %m) floats [0.9, 0.0] : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32> -> memref<8xf32>, memref<8xf32>
}
