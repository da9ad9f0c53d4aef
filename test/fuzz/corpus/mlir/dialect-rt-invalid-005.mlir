rt.program @p {
  %x = rt.input "x" offset 4 : memref<2xi64>
}
