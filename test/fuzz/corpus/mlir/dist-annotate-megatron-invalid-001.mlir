dist.mesh @mesh axes [dp = 4]
func.func @batch(%ids: tensor<6x8xi64> {tpc.input = "input_ids"}) -> tensor<6x8xi64> {
  return %ids : tensor<6x8xi64>
}
