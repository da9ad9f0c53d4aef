rt.program @profiles attributes {
    functions = [{name = "P", first = 0, count = 1},
                 {name = "F", first = 1, count = 4},
                 {name = "B", first = 5, count = 4}],
    pools = [{slots = 2}],
    stage_actions = [array<i64: 0, 0, 0, 1, 0, 0, 1, 1, 1, 2, 0, 0, 2, 1, 1>]} {
  %x = rt.input "x" microbatches 2 : memref<4xf32>
  %acc = rt.alloc : memref<4xf32>
  rt.kernel zeros() -> (%acc) : -> memref<4xf32>
  %t = rt.alloc : memref<16xf32>
  rt.kernel repeat(%x) -> (%t) ints [0, 4] : memref<4xf32> -> memref<16xf32>
  %s = rt.alloc pool 0 : memref<16xf32>
  rt.kernel silu(%t) -> (%s) : memref<16xf32> -> memref<16xf32>
  %q = rt.alloc : memref<4xf32>
  rt.kernel zeros() -> (%q) : -> memref<4xf32>
  %p = rt.alloc pool 0 : memref<4xf32>
  rt.kernel silu(%q) -> (%p) : memref<4xf32> -> memref<4xf32>
  rt.kernel zeros() -> (%q) : -> memref<4xf32>
  %u = rt.alloc : memref<4xf32>
  rt.kernel slice(%s) -> (%u) ints [0, 0, 4] : memref<16xf32> -> memref<4xf32>
  rt.kernel add(%acc, %u) -> (%acc) : memref<4xf32>, memref<4xf32> -> memref<4xf32>
  %o = rt.alloc : memref<4xf32>
  rt.kernel silu(%u) -> (%o) : memref<4xf32> -> memref<4xf32>
  rt.output "acc" %acc : memref<4xf32>
  rt.output "o" %o : memref<4xf32>
}
