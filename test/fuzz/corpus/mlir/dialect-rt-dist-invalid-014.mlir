rt.program @p mesh [dp = 4611686018427387904] {
  %w = rt.param "w" hf_shape [8] splits [[dp]] init normal : memref<8xf32>
}
