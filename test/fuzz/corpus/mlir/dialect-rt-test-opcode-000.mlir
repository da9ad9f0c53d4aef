rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<8xf32>
  rt.kernel test_copy(%x) -> (%y) : memref<2x4xf32> -> memref<8xf32>
  rt.output "y" %y : memref<8xf32>
}
