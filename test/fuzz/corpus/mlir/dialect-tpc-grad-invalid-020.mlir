func.func @dropout_mask_block_type(%mb: tensor<2xi64>) {
  %0 = "tpc.dropout_mask"(%mb) {rate = 0.1 : f64, stream = 0 : i64} : (tensor<2xi64>) -> tensor<4x8xi8>
  return
}
