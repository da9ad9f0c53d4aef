func.func @cosine_total(%s: tensor<i64>) {
  %0 = tpc.lr_schedule %s cosine lr 1.0e-3 warmup 10 total 10
  return
}
