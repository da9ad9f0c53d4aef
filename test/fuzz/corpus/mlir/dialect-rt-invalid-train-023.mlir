rt.program @p {
  %dy = rt.input "dy" : memref<2x4x16xf32>
  %w = rt.param "w" hf_shape [16, 8] init normal : memref<16x8xf32>
  %dx = rt.alloc : memref<2x4x8xf32>
  rt.kernel linear_input_grad(%dy, %w) -> (%dx) : memref<2x4x16xf32>, memref<16x8xf32> -> memref<2x4x8xf32>
}
