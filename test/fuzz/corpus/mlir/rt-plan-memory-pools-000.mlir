rt.program @two_stages mesh [pp = 2] attributes {
    functions = [{name = "P", first = 0, count = 2},
                 {name = "F", first = 2, count = 4},
                 {name = "S", first = 6, count = 1},
                 {name = "B", first = 7, count = 4},
                 {name = "R", first = 11, count = 1},
                 {name = "B1", first = 12, count = 2}],
    pools = [{slots = 2}, {slots = 2}],
    stage_actions = [
      array<i64: 0, 0, 0, 1, 0, 0, 2, 0, 0, 1, 1, 1, 2, 1, 1, 3, 0, 0, 1, 2, 0, 2, 2, 0, 3, 1, 1, 3, 2, 0>,
      array<i64: 4, 0, 0, 4, 1, 1, 5, 0, 0, 4, 2, 0, 5, 1, 1, 5, 2, 0>]} {
  %x = rt.input "x" microbatches 3 : memref<4xf32>
  %w0 = rt.param "w0" hf_shape [4] init normal : memref<4xf32>
  %w1 = rt.param "w1" hf_shape [4] init normal : memref<4xf32>
  %acc = rt.alloc : memref<4xf32>
  rt.kernel zeros() -> (%acc) {stage = 0 : ui32} : -> memref<4xf32>
  %c = rt.alloc : memref<4xf32>
  rt.kernel silu(%w0) -> (%c) {stage = 0 : ui32} : memref<4xf32> -> memref<4xf32>
  %t = rt.alloc : memref<8xf32>
  rt.kernel repeat(%x) -> (%t) ints [0, 2] {stage = 0 : ui32} : memref<4xf32> -> memref<8xf32>
  %s2 = rt.alloc pool 0 : memref<8xf32>
  rt.kernel silu(%t) -> (%s2) {stage = 0 : ui32} : memref<8xf32> -> memref<8xf32>
  %e = rt.alloc : memref<4xf32>
  rt.kernel slice(%t) -> (%e) ints [0, 0, 4] {stage = 0 : ui32} : memref<8xf32> -> memref<4xf32>
  %s = rt.alloc pool 0 : memref<4xf32>
  rt.kernel mul(%e, %c) -> (%s) {stage = 0 : ui32} : memref<4xf32>, memref<4xf32> -> memref<4xf32>
  "rt.kernel"(%s) <{flags = 0 : ui32, floats = array<f64>, ints = array<i64: 1, 0>, opcode = #rt<opcode send>, operandSegmentSizes = array<i32: 1, 0>, stage = 0 : ui32}> : (memref<4xf32>) -> ()
  %g = rt.alloc : memref<4xf32>
  rt.kernel recv() -> (%g) ints [1, 0] {stage = 0 : ui32} : -> memref<4xf32>
  %u = rt.alloc : memref<4xf32>
  rt.kernel slice(%s2) -> (%u) ints [0, 4, 4] {stage = 0 : ui32} : memref<8xf32> -> memref<4xf32>
  %v = rt.alloc : memref<4xf32>
  rt.kernel mul(%g, %u) -> (%v) {stage = 0 : ui32} : memref<4xf32>, memref<4xf32> -> memref<4xf32>
  rt.kernel add(%acc, %v) -> (%acc) {stage = 0 : ui32} : memref<4xf32>, memref<4xf32> -> memref<4xf32>
  %r = rt.alloc pool 1 : memref<4xf32>
  rt.kernel recv() -> (%r) ints [0, 0] {stage = 1 : ui32} : -> memref<4xf32>
  %h = rt.alloc : memref<4xf32>
  rt.kernel mul(%r, %w1) -> (%h) {stage = 1 : ui32} : memref<4xf32>, memref<4xf32> -> memref<4xf32>
  "rt.kernel"(%h) <{flags = 0 : ui32, floats = array<f64>, ints = array<i64: 0, 0>, opcode = #rt<opcode send>, operandSegmentSizes = array<i32: 1, 0>, stage = 1 : ui32}> : (memref<4xf32>) -> ()
  rt.output "sum" %acc : memref<4xf32>
}
