module attributes {rt.arena_bytes = 64 : i64} {
  rt.program @no_offset {
    %x = rt.input "x" : memref<16xf32>
  }
}
