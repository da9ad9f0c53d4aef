rt.program @p {
  %s = rt.input "s" : memref<1xf32>
  %c = rt.input "c" : memref<i64>
  %y = rt.alloc : memref<f32>
  rt.kernel loss_mean(%s, %c) -> (%y) : memref<1xf32>, memref<i64> -> memref<f32>
}
