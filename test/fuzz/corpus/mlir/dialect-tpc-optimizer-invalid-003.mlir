func.func @lr_negative(%s: tensor<i64>) {
  %0 = tpc.lr_schedule %s constant lr -1.0
  return
}
