rt.program @p {
  %x = rt.input "x" bound 3 : memref<2x4xf32>
}
