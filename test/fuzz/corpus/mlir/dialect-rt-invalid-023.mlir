rt.program @p {
  %x = rt.input "x" : memref<8xf32>
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  rt.kernel silu(%x) -> (%w) : memref<8xf32> -> memref<8xf32>
}
