rt.program @p {
  %m = rt.alloc : memref<2x8xf32>
  rt.kernel dropout_mask() -> (%m) ints [0] floats [0.1] : -> memref<2x8xf32>
}
