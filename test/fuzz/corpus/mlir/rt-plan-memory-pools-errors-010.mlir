rt.program @one_list_two_stages mesh [pp = 2] attributes {
    functions = [{name = "F", first = 0, count = 1}],
    stage_actions = [array<i64: 0, 0, 0>]} {
  %x = rt.input "x" : memref<4xf32>
  %a = rt.alloc : memref<4xf32>
  rt.kernel silu(%x) -> (%a) {stage = 0 : ui32} : memref<4xf32> -> memref<4xf32>
}
