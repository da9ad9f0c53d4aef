func.func @rms_norm_scalar(%x: tensor<bf16>, %g: tensor<1xbf16>) {
  %0 = tpc.rms_norm %x, %g eps 1.0e-05 : tensor<bf16>, tensor<1xbf16>
  return
}
