func.func @train_step(%mb: tensor<i64> {tpc.input = "mb"})
    -> (tensor<2x8xi8> {tpc.output = "mask"}) {
  %m = tpc.dropout_mask rate 1.000000e-01 stream 0 block %mb : tensor<2x8xi8>
  return %m : tensor<2x8xi8>
}
