func.func @cross_entropy_result_type(%l: tensor<4x256xf32>, %y: tensor<4xi64>) {
  %0:2 = "tpc.cross_entropy"(%l, %y) <{ignore_index = -100 : i64}>
      : (tensor<4x256xf32>, tensor<4xi64>) -> (tensor<bf16>, tensor<i64>)
  return
}
