rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %m = rt.state "exp_avg" of "w" : memref<8xf32>
  %v = rt.state "exp_avg_sq" of "w" : memref<8xf32>
  %g = rt.input "g" : memref<8xf32>
  %lr = rt.input "lr" : memref<f32>
  rt.kernel adamw_update(%w, %g, %m, %v, %lr, %lr) -> (%w, %m, %v) floats [0.9, 0.999, 1.0e-8, 0.0] : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32>, memref<f32> -> memref<8xf32>, memref<8xf32>, memref<8xf32>
}
