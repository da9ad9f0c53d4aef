rt.program @p {
  %x = rt.input "x" : memref<8xf32>
  rt.output "y" %x : memref<8xf32>
  rt.output "y" %x : memref<8xf32>
}
