rt.program @p mesh [dp = 2, tp = 2] {
  %w = rt.param "w" hf_shape [8, 8] splits [[tp], [tp]] init normal : memref<4x4xf32>
}
