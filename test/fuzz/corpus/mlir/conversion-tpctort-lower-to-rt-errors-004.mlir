func.func @forward(%w: tensor<2xf64> {tpc.param = "w"}) {
  return
}
