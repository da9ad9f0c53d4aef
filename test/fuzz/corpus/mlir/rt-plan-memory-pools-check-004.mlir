module attributes {rt.arena_bytes = 384 : i64} {
  rt.program @no_stride attributes {
      functions = [{name = "F", first = 0, count = 1}],
      pools = [{slots = 2}],
      stage_actions = [array<i64: 0, 0, 0, 0, 1, 1>]} {
    %x = rt.input "x" offset 0 : memref<8xf32>
    %s = rt.alloc pool 0 offset 64 : memref<8xf32>
    rt.kernel silu(%x) -> (%s) : memref<8xf32> -> memref<8xf32>
  }
}
