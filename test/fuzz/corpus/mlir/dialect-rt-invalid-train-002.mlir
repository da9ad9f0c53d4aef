rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<2x4xf32>
  %m = rt.state "momentum" of "w" : memref<8xf32>
}
