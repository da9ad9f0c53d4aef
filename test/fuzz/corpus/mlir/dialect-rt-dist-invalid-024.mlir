rt.program @p mesh [dp = 2, tp = 2] {
  %x = rt.input "x" : memref<i64>
  %y = rt.alloc : memref<i64>
  rt.kernel all_reduce(%x) -> (%y) ints [0] flags 1 : memref<i64> -> memref<i64>
}
