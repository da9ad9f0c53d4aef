rt.program @train_step mesh [pp = 2] attributes {
    functions = [{name = "send act chunk 0", first = 0, count = 1},
                 {name = "F chunk 1", first = 1, count = 2}],
    pools = [{slots = 2}],
    stage_actions = [array<i64: 0, 0, 0, 0, 1, 1>,
                     array<i64: 1, 0, 0, 1, 1, 1>]} {
  %x = rt.input "x" microbatches 2 : memref<2x4xf32>
  %r = rt.alloc pool 0 : memref<2x4xf32>
  %y = rt.alloc : memref<2x4xf32>
  rt.kernel send(%x) -> () ints [1, 0] {stage = 0 : ui32} : memref<2x4xf32> ->
  rt.kernel recv() -> (%r) ints [0, 0] {stage = 1 : ui32} : -> memref<2x4xf32>
  rt.kernel gelu(%r) -> (%y) {stage = 1 : ui32} : memref<2x4xf32> -> memref<2x4xf32>
  rt.output "y" %y : memref<2x4xf32>
}
