rt.program @p {
  %a = rt.alloc : memref<2x4xf32, 1>
}
