func.func @silu_f64(%x: tensor<4x64xf64>) {
  %0 = tpc.silu %x : tensor<4x64xf64>
  return
}
