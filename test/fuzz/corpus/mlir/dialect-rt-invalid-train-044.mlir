rt.program @p {
  %step = rt.input "step" : memref<i64>
  %lr = rt.alloc : memref<f32>
  rt.kernel lr_schedule(%step) -> (%lr) ints [0, 0] floats [1.0e-3, 0.0] flags 2 : memref<i64> -> memref<f32>
}
