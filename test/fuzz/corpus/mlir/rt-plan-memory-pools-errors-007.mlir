rt.program @kernel_in_no_function attributes {
    functions = [{name = "F", first = 0, count = 1}],
    stage_actions = [array<i64: 0, 0, 0>]} {
  %x = rt.input "x" : memref<4xf32>
  %a = rt.alloc : memref<4xf32>
  rt.kernel silu(%x) -> (%a) : memref<4xf32> -> memref<4xf32>
  %b = rt.alloc : memref<4xf32>
  rt.kernel silu(%a) -> (%b) : memref<4xf32> -> memref<4xf32>
}
