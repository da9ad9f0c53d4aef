rt.program @p {
  %w = rt.param "w" hf_shape [8] init uniform : memref<8xf32>
}
