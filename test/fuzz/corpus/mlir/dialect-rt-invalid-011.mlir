rt.program @p {
  %w = rt.param "w" hf_shape [8] init ones offset -1 : memref<8xf32>
}
