rt.program @p {
  %x = rt.input "ids" bound -3 : memref<2x4xi64>
}
