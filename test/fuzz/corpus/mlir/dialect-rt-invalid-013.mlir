rt.program @p {
  %x = rt.input "" : memref<2x4xi64>
}
