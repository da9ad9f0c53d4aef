func.func @clip_max_norm(%n: tensor<f32>) {
  %0:2 = tpc.clip_coefficient %n max_norm -1.0
  return
}
