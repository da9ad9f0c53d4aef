rt.program @p {
  %m = rt.alloc : memref<2x4xi8>
  rt.kernel dropout_mask() -> (%m) ints [1] floats [0.1] splits [[], []] : -> memref<2x4xi8>
}
