func.func @reshape_overflow(%x: tensor<4611686018427387904x4xf32>) {
  %0 = tpc.reshape %x : tensor<4611686018427387904x4xf32> -> tensor<8xf32>
  return
}
