rt.program @p {
  %a = rt.alloc : memref<?x4xf32>
}
