func.func @dropout_stream_negative(%x: tensor<4x64xf32>) {
  %0 = tpc.dropout %x rate 0.1 stream -1 : tensor<4x64xf32>
  return
}
