func.func @warmup_negative(%s: tensor<i64>) {
  %0 = tpc.lr_schedule %s cosine lr 1.0e-3 warmup -1 total 10
  return
}
