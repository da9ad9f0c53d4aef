rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  rt.output "" %x : memref<2x4xf32>
}
