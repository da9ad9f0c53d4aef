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

// -----

// The heads of a projection are the output dimension before its head size
// ([..., heads, head_dim], as tpc-import exposes them); a weight whose
// output features are not laid out so is refused, not split by size.
dist.mesh @mesh axes [tp = 2]
func.func @flat_heads(%x: tensor<2x8x64xf32>, %wq: tensor<64x64xf32> {tpc.param = "q"},
                      %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  // expected-error @+1 {{feeds attention as its query, but its weight's output dimensions [64] do not end with its heads and head size [4, 16]}}
  %q = tpc.linear %x, %wq layout in_out : tensor<2x8x64xf32>, tensor<64x64xf32>
  %q4 = tpc.reshape %q : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %qt = tpc.transpose %q4 [0, 2, 1, 3] : tensor<2x8x4x16xf32>
  %o = tpc.attention %qt, %k, %v causal scale 0.25 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// The model's recorded heads (tpc.model, written by tpc-import) must agree
// with what the attention reads.
module attributes {tpc.model = {heads = 8 : i64, kv_heads = 2 : i64, head_dim = 16 : i64}} {
  dist.mesh @mesh axes [tp = 2]
  func.func @kv_mismatch(%x: tensor<2x8x64xf32>, %q: tensor<2x8x8x16xf32>,
                         %wk: tensor<64x4x16xf32> {tpc.param = "k"},
                         %v: tensor<2x4x8x16xf32>) -> tensor<2x8x8x16xf32> {
    // expected-error @+1 {{feeds attention as its key or value with 4 heads, but the model (tpc.model) has 2 kv-heads}}
    %k = tpc.linear %x, %wk layout in_out : tensor<2x8x64xf32>, tensor<64x4x16xf32>
    %kt = tpc.transpose %k [0, 2, 1, 3] : tensor<2x8x4x16xf32>
    %o = tpc.attention %q, %kt, %v causal scale 0.25 : tensor<2x8x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
    return %o : tensor<2x8x8x16xf32>
  }
}
