func.func @dropout_mask_element() {
  %0 = tpc.dropout_mask rate 0.1 stream 0 : tensor<4x8xi1>
  return
}
