rt.program @no_actions attributes {pools = [{slots = 2}]} {
  %x = rt.input "x" : memref<4xf32>
  %s = rt.alloc pool 0 : memref<4xf32>
  rt.kernel silu(%x) -> (%s) : memref<4xf32> -> memref<4xf32>
}
