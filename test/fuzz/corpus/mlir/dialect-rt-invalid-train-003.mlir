rt.program @p {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %m = rt.state "exp_avg" of "w" : memref<8xf32>
  %n = rt.state "exp_avg" of "w" : memref<8xf32>
}
