func.func @dropout_mask_rate() {
  %0 = tpc.dropout_mask rate 1.0 stream 0 : tensor<4x8xi8>
  return
}
