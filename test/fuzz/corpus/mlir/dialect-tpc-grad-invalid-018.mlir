func.func @dropout_mask_stream() {
  %0 = tpc.dropout_mask rate 0.1 stream -2 : tensor<4x8xi8>
  return
}
