func.func @min_lr_above_lr(%s: tensor<i64>) {
  %0 = tpc.lr_schedule %s cosine lr 1.0e-3 min_lr 1.0e-2 total 10
  return
}
