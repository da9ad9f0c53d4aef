rt.program @p {
  %x = rt.input "x" : memref<8xi64>
  %ss = rt.alloc : memref<f32>
  rt.kernel sum_squares(%x) -> (%ss) : memref<8xi64> -> memref<f32>
}
