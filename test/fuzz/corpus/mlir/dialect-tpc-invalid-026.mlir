func.func @layer_norm_scalar(%x: tensor<f32>, %g: tensor<f32>, %b: tensor<f32>) {
  %0 = tpc.layer_norm %x, %g, %b eps 1.0e-05
      : tensor<f32>, tensor<f32>, tensor<f32>
  return
}
