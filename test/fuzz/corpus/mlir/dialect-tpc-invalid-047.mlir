func.func @dropout_int(%x: tensor<4x64xi64>) {
  %0 = tpc.dropout %x rate 0.1 stream 0 : tensor<4x64xi64>
  return
}
