rt.program @p {
  %w = rt.param "w" hf_shape [2, 3] init normal : memref<8xf32>
}
