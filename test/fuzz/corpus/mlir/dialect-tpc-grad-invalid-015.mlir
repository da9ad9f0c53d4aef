func.func @gelu_grad_types(%dy: tensor<4x64xf32>, %x: tensor<4x32xf32>) {
  %0 = "tpc.gelu_grad"(%dy, %x) {approximation = #tpc<gelu tanh>} : (tensor<4x64xf32>, tensor<4x32xf32>) -> tensor<4x64xf32>
  return
}
