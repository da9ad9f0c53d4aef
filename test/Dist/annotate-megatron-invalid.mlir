// dist-annotate-megatron refuses splits that do not divide, at the matmul.
// RUN: tpc-opt %s --dist-annotate-megatron -split-input-file -verify-diagnostics

dist.mesh @mesh axes [tp = 4]
func.func @ffn(%x: tensor<2x4x8xf32>, %w1: tensor<8x6xf32> {tpc.param = "fc"},
               %w2: tensor<6x8xf32> {tpc.param = "proj"}) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{cannot split over mesh axis 'tp' (4 devices): the FFN size (6) is not divisible by 4}}
  %h = tpc.linear %x, %w1 layout in_out : tensor<2x4x8xf32>, tensor<8x6xf32>
  %a = tpc.gelu %h tanh : tensor<2x4x6xf32>
  %y = tpc.linear %a, %w2 layout in_out : tensor<2x4x6xf32>, tensor<6x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

dist.mesh @mesh axes [dp = 4]
// expected-error @+1 {{cannot split over mesh axis 'dp' (4 devices): the batch of an input (6) is not divisible by 4}}
func.func @batch(%ids: tensor<6x8xi64> {tpc.input = "input_ids"}) -> tensor<6x8xi64> {
  return %ids : tensor<6x8xi64>
}
