rt.program @top {
  %x = rt.input "x" : memref<16xf32>
  %a = rt.alloc : memref<16xf32>
  rt.kernel silu(%x) -> (%a) : memref<16xf32> -> memref<16xf32>
  %b = rt.alloc : memref<64xf32>
  rt.kernel repeat(%x) -> (%b) ints [0, 4] : memref<16xf32> -> memref<64xf32>
  rt.output "b" %b : memref<64xf32>
}
