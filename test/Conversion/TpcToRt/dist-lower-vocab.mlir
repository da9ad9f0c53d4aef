// A vocabulary split over tp lowers to the kernels' vocabulary forms
// (tpcx.fbs): the embedding's ints (and its gradient's) are the axes of its
// table's rows; the
// cross-entropy's [ignore, vocab, axes...], vocab counting the real classes
// of the whole (padded) vocabulary.
// RUN: tpc-opt %s --tpc-lower-to-rt -split-input-file | FileCheck %s

dist.mesh @mesh axes [dp = 2, tp = 2]
// CHECK-LABEL: rt.program @forward mesh [dp = 2, tp = 2]
func.func @forward(%wte: tensor<8x8xf32> {tpc.param = "wte", tpc.hf_shape = array<i64: 15, 8>,
                       dist.unpadded_shape = array<i64: 15, 8>,
                       dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
                   %ids: tensor<2x4xi64> {tpc.input = "input_ids"},
                   %labels: tensor<2x4xi64> {tpc.input = "labels"})
    -> (tensor<f32> {tpc.output = "loss"}) attributes {dist.partitioned} {
  // CHECK: rt.kernel embedding({{.*}}) -> ({{.*}}) ints [1] :
  %x = tpc.embedding %wte[%ids] {dist.vocab_axes = ["tp"]}
      : tensor<8x8xf32>, tensor<2x4xi64>
  %r = dist.all_reduce %x on @mesh axes [tp] : tensor<2x4x8xf32>
  %logits = tpc.linear %r, %wte layout out_in : tensor<2x4x8xf32>, tensor<8x8xf32>
  // CHECK: rt.kernel cross_entropy({{.*}}) -> ({{.*}}) ints [-100, 15, 1] :
  %sum, %count = tpc.cross_entropy %logits, %labels vocab 15 blocks 2 {dist.vocab_axes = ["tp"]}
      : tensor<2x4x8xf32>, tensor<2x4xi64>
  %loss = tpc.loss_mean %sum, %count
  return %loss : tensor<f32>
}

// -----

// Without padding, vocab is the whole vocabulary: the local columns times
// the group.
dist.mesh @mesh axes [tp = 4]
// CHECK-LABEL: rt.program @forward
func.func @forward(%logits: tensor<2x4x8xf32> {tpc.input = "logits"},
                   %labels: tensor<2x4xi64> {tpc.input = "labels"},
                   %d: tensor<f32> {tpc.input = "d"})
    -> (tensor<2x4x8xf32> {tpc.output = "g"}) attributes {dist.partitioned} {
  // CHECK: rt.kernel cross_entropy_grad({{.*}}) -> ({{.*}}) ints [-100, 32, 0] :
  %g = tpc.cross_entropy_grad %logits, %labels, %d blocks 4 {dist.vocab_axes = ["tp"]}
      : tensor<2x4x8xf32>, tensor<2x4xi64>
  %w = dist.all_gather %g on @mesh axes [tp] dim 2 : tensor<2x4x8xf32> -> tensor<2x4x32xf32>
  %s = tpc.slice %w dim 2 [0 : 8] : tensor<2x4x32xf32>
  return %s : tensor<2x4x8xf32>
}

// -----

// A padded vocabulary on one device: [ignore, vocab].
// CHECK-LABEL: rt.program @forward
func.func @forward(%logits: tensor<2x4x8xf32> {tpc.input = "logits"},
                   %labels: tensor<2x4xi64> {tpc.input = "labels"})
    -> (tensor<f32> {tpc.output = "loss"}) {
  // CHECK: rt.kernel cross_entropy({{.*}}) -> ({{.*}}) ints [-100, 6] :
  %sum, %count = tpc.cross_entropy %logits, %labels vocab 6
      : tensor<2x4x8xf32>, tensor<2x4xi64>
  %loss = tpc.loss_mean %sum, %count
  return %loss : tensor<f32>
}

// -----

// The gradient of the rank's block of the table: the embedding's ints.
dist.mesh @mesh axes [dp = 2, tp = 2]
// CHECK-LABEL: rt.program @forward
func.func @forward(%dy: tensor<2x4x8xf32> {tpc.input = "dy"},
                   %ids: tensor<2x4xi64> {tpc.input = "input_ids"})
    -> (tensor<4x8xf32> {tpc.output = "g"}) attributes {dist.partitioned} {
  // CHECK: rt.kernel embedding_grad({{.*}}) -> ({{.*}}) ints [1] : memref<2x4x8xf32>, memref<2x4xi64> -> memref<4x8xf32>
  %g = tpc.embedding_grad %dy[%ids] {dist.vocab_axes = ["tp"]}
      : tensor<2x4x8xf32>, tensor<2x4xi64> -> tensor<4x8xf32>
  return %g : tensor<4x8xf32>
}
