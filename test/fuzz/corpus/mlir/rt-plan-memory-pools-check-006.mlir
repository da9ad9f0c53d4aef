module attributes {rt.arena_bytes = 256 : i64, rt.planned_peak_bytes = 64 : i64, rt.stage_planned_peak_bytes = array<i64: 32, 32>} {
  rt.program @stage_peaks mesh [pp = 2] attributes {
      functions = [{name = "F", first = 0, count = 1},
                   {name = "G", first = 1, count = 1}],
      stage_actions = [array<i64: 0, 0, 0>, array<i64: 1, 0, 0>]} {
    %x = rt.input "x" offset 0 : memref<4xf32>
    %y = rt.input "y" offset 64 : memref<8xf32>
    %a = rt.alloc offset 128 : memref<4xf32>
    rt.kernel silu(%x) -> (%a) {stage = 0 : ui32} : memref<4xf32> -> memref<4xf32>
    %b = rt.alloc offset 192 : memref<8xf32>
    rt.kernel silu(%y) -> (%b) {stage = 1 : ui32} : memref<8xf32> -> memref<8xf32>
  }
}
