module {
  rt.program @no_arena {
    %x = rt.input "x" offset 0 : memref<16xf32>
  }
}
