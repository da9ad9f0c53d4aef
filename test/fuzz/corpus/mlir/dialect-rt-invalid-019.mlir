rt.program @p {
  %x = rt.input "x" : memref<8xf32>
  %y = rt.input "x" : memref<8xf32>
}
