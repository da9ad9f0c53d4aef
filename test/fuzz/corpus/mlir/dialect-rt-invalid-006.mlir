rt.program @p {
  %w = rt.param "w" hf_shape [8] init zeros : memref<8xi32>
}
