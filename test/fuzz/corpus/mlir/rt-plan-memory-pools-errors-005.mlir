rt.program @microbatch_outside attributes {
    functions = [{name = "F", first = 0, count = 1}],
    stage_actions = [array<i64: 0, 0, 0, 0, 1, 0, 0, 2, 0>]} {
  %x = rt.input "x" microbatches 2 : memref<4xf32>
  %s = rt.alloc : memref<4xf32>
  rt.kernel silu(%x) -> (%s) : memref<4xf32> -> memref<4xf32>
}
