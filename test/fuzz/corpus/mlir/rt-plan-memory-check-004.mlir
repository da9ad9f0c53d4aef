module attributes {rt.arena_bytes = 100 : i64} {
  rt.program @outside {
    %x = rt.input "x" offset 0 : memref<16xf32>
    %a = rt.alloc offset 64 : memref<16xf32>
    rt.kernel silu(%x) -> (%a) : memref<16xf32> -> memref<16xf32>
    rt.output "a" %a : memref<16xf32>
  }
}
