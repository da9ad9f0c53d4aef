rt.program @train_step {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %x = rt.input "x" : memref<8xf32>
  %lr = rt.input "lr" : memref<f32>
  %m = rt.state "momentum" of "w" : memref<8xf32>
  %g = rt.alloc : memref<8xf32>
  rt.kernel silu(%x) -> (%g) : memref<8xf32> -> memref<8xf32>
  %t = rt.alloc : memref<8xf32>
  rt.kernel silu(%g) -> (%t) : memref<8xf32> -> memref<8xf32>
  %u = rt.alloc : memref<8xf32>
  rt.kernel add(%t, %g) -> (%u) : memref<8xf32>, memref<8xf32> -> memref<8xf32>
  rt.kernel sgd_update(%w, %g, %m, %lr) -> (%w, %m) floats [0.9, 0.0] : memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<f32> -> memref<8xf32>, memref<8xf32>
  rt.grad "w" %g : memref<8xf32>
}
