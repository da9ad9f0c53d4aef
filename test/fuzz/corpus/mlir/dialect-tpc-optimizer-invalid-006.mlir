func.func @constant_warmup(%s: tensor<i64>) {
  %0 = tpc.lr_schedule %s constant lr 1.0e-3 warmup 5
  return
}
