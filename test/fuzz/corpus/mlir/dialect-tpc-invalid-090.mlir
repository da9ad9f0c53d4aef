func.func @cross_entropy_float_labels(%l: tensor<4x256xf32>,
                                      %y: tensor<4xf32>) {
  %0:2 = tpc.cross_entropy %l, %y : tensor<4x256xf32>, tensor<4xf32>
  return
}
