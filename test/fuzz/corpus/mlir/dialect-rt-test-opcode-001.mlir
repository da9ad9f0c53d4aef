rt.program @p {
  %x = rt.input "x" : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  rt.kernel test_copy(%x, %x) -> (%y) : memref<2x4xf32>, memref<2x4xf32> -> memref<2x4xf32>
  rt.output "y" %y : memref<2x4xf32>
}
