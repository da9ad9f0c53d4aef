rt.program @p {
  %a = rt.alloc : memref<8xf32>
  %b = rt.alloc : memref<8xf32>
  rt.kernel silu(%a) -> (%b) : memref<8xf32> -> memref<8xf32>
}
