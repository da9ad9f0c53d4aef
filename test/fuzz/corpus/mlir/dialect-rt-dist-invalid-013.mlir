rt.program @p mesh [dp = 2, tp = 2] {
  %w = rt.param "w" hf_shape [16, 8] view [15, 8] padded [16, 8] splits [[tp], []] init normal : memref<8x8xf32>
}
