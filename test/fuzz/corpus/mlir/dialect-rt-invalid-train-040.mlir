rt.program @p {
  %ss = rt.input "ss" : memref<f32>
  %n = rt.alloc : memref<f32>
  %c = rt.alloc : memref<f32>
  rt.kernel clip_coefficient(%ss) -> (%n, %c) floats [-1.0] : memref<f32> -> memref<f32>, memref<f32>
}
