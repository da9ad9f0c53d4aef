rt.program @p mesh [dp = 2, tp = 2] {
  %m = rt.alloc : memref<2x4xi8>
  rt.kernel dropout_mask() -> (%m) ints [1, 0] floats [0.1] splits [[dp], [], [tp]] : -> memref<2x4xi8>
}
