rt.program @p {
  %a = rt.alloc offset -64 : memref<2x4xf32>
}
