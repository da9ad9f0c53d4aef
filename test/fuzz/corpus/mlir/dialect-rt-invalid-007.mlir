rt.program @p {
  %w = rt.param "" hf_shape [8] init normal : memref<8xf32>
}
