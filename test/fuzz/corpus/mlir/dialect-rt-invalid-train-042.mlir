rt.program @p {
  %ss = rt.alloc : memref<f32>
  rt.kernel sum_squares() -> (%ss) : -> memref<f32>
}
