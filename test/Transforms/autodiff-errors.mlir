// What tpc-autodiff refuses, with the reason and the op or function.
// RUN: tpc-opt %s -split-input-file -verify-diagnostics --tpc-autodiff=microbatches=2
// RUN: tpc-import %S/../Import/Inputs/gpt2-tiny.json --seq 8 --batch 4 --num-layers 1 \
// RUN:   | not tpc-opt --tpc-autodiff=microbatches=0 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: tpc-autodiff: microbatches must be at least 1
// RUN: tpc-import %S/../Import/Inputs/gpt2-tiny.json --seq 8 --batch 4 --num-layers 1 \
// RUN:   | not tpc-opt --tpc-autodiff=microbatches=3 2>&1 | FileCheck %s --check-prefix=DIVIDE
// DIVIDE: error: tpc-autodiff: batch 4 is not divisible by microbatches=3

// An op on the way from a parameter to the loss without a derivative rule.
func.func @forward(%w: tensor<16x8xf32> {tpc.param = "w"},
                   %ids: tensor<2x4xi64> {tpc.input = "input_ids"},
                   %labels: tensor<2x4xi64> {tpc.input = "labels"}) -> tensor<f32> {
  %x = tpc.embedding %w[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
  // expected-error @+1 {{tpc-autodiff: cannot differentiate 'arith.addf': it has no derivative rule (TpcDerivativeOpInterface)}}
  %y = arith.addf %x, %x : tensor<2x4x8xf32>
  %h = tpc.linear %y, %w layout out_in : tensor<2x4x8xf32>, tensor<16x8xf32>
  %s, %c = tpc.cross_entropy %h, %labels : tensor<2x4x16xf32>, tensor<2x4xi64>
  %l = tpc.loss_mean %s, %c
  return %l : tensor<f32>
}

// -----

// The same op off the differentiated path is fine (it only goes into F).
func.func @forward(%w: tensor<16x8xf32> {tpc.param = "w"},
                   %ids: tensor<2x4xi64> {tpc.input = "input_ids"},
                   %labels: tensor<2x4xi64> {tpc.input = "labels"})
    -> (tensor<f32>, tensor<2x4xi64>) {
  %x = tpc.embedding %w[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
  %h = tpc.linear %x, %w layout out_in : tensor<2x4x8xf32>, tensor<16x8xf32>
  %s, %c = tpc.cross_entropy %h, %labels : tensor<2x4x16xf32>, tensor<2x4xi64>
  %l = tpc.loss_mean %s, %c
  %twice = arith.addi %ids, %ids : tensor<2x4xi64>
  return %l, %twice : tensor<f32>, tensor<2x4xi64>
}

// -----

// A reshape that folds the batch into another dimension cannot be split.
func.func @forward(%w: tensor<16x8xf32> {tpc.param = "w"},
                   %ids: tensor<2x4xi64> {tpc.input = "input_ids"},
                   %labels: tensor<2x4xi64> {tpc.input = "labels"}) -> tensor<f32> {
  %x = tpc.embedding %w[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
  // expected-error @+1 {{tpc-autodiff: cannot split 'tpc.reshape' into microbatches: its result 'tensor<8x8xf32>' does not lead with the batch dimension 2}}
  %f = tpc.reshape %x : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %h = tpc.linear %f, %w layout out_in : tensor<8x8xf32>, tensor<16x8xf32>
  %u = tpc.reshape %h : tensor<8x16xf32> -> tensor<2x4x16xf32>
  %s, %c = tpc.cross_entropy %u, %labels : tensor<2x4x16xf32>, tensor<2x4xi64>
  %l = tpc.loss_mean %s, %c
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{tpc-autodiff: input_ids 'tensor<2x4xi64>' and labels 'tensor<8xi64>' must share a leading batch dimension}}
func.func @forward(%w: tensor<16x8xf32> {tpc.param = "w"},
                   %ids: tensor<2x4xi64> {tpc.input = "input_ids"},
                   %labels: tensor<8xi64> {tpc.input = "labels"}) -> tensor<f32> {
  %x = tpc.embedding %w[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
  %f = tpc.reshape %x : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %h = tpc.linear %f, %w layout out_in : tensor<8x8xf32>, tensor<16x8xf32>
  %s, %c = tpc.cross_entropy %h, %labels : tensor<8x16xf32>, tensor<8xi64>
  %l = tpc.loss_mean %s, %c
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{tpc-autodiff: @forward returns no loss: expected a tpc.loss_mean of the sum and count of one tpc.cross_entropy}}
func.func @forward(%w: tensor<16x8xf32> {tpc.param = "w"},
                   %ids: tensor<2x4xi64> {tpc.input = "input_ids"},
                   %labels: tensor<2x4xi64> {tpc.input = "labels"}) -> tensor<f32> {
  %x = tpc.embedding %w[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
  %h = tpc.linear %x, %w layout out_in : tensor<2x4x8xf32>, tensor<16x8xf32>
  %s, %c = tpc.cross_entropy %h, %labels : tensor<2x4x16xf32>, tensor<2x4xi64>
  return %s : tensor<f32>
}

// -----

// expected-error @+1 {{tpc-autodiff: @forward needs the inputs input_ids and labels}}
func.func @forward(%w: tensor<16x8xf32> {tpc.param = "w"},
                   %ids: tensor<2x4xi64> {tpc.input = "input_ids"}) -> tensor<f32> {
  %x = tpc.embedding %w[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
  %h = tpc.linear %x, %w layout out_in : tensor<2x4x8xf32>, tensor<16x8xf32>
  %s, %c = tpc.cross_entropy %h, %ids : tensor<2x4x16xf32>, tensor<2x4xi64>
  %l = tpc.loss_mean %s, %c
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{tpc-autodiff: argument 1 is neither a parameter ('tpc.param') nor input_ids / labels ('tpc.input')}}
func.func @forward(%w: tensor<16x8xf32> {tpc.param = "w"}, %other: tensor<8xf32>,
                   %ids: tensor<2x4xi64> {tpc.input = "input_ids"},
                   %labels: tensor<2x4xi64> {tpc.input = "labels"}) -> tensor<f32> {
  %x = tpc.embedding %w[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
  %h = tpc.linear %x, %w layout out_in : tensor<2x4x8xf32>, tensor<16x8xf32>
  %s, %c = tpc.cross_entropy %h, %labels : tensor<2x4x16xf32>, tensor<2x4xi64>
  %l = tpc.loss_mean %s, %c
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{tpc-autodiff: parameter argument 2 follows an input; parameters come first}}
func.func @forward(%w: tensor<16x8xf32> {tpc.param = "w"},
                   %ids: tensor<2x4xi64> {tpc.input = "input_ids"},
                   %v: tensor<16x8xf32> {tpc.param = "v"},
                   %labels: tensor<2x4xi64> {tpc.input = "labels"}) -> tensor<f32> {
  %x = tpc.embedding %w[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
  %h = tpc.linear %x, %v layout out_in : tensor<2x4x8xf32>, tensor<16x8xf32>
  %s, %c = tpc.cross_entropy %h, %labels : tensor<2x4x16xf32>, tensor<2x4xi64>
  %l = tpc.loss_mean %s, %c
  return %l : tensor<f32>
}

// -----

func.func @forward(%w: tensor<16x8xf32> {tpc.param = "w"},
                   %ids: tensor<2x4xi64> {tpc.input = "input_ids"},
                   %labels: tensor<2x4xi64> {tpc.input = "labels"}) -> tensor<f32> {
  %x = tpc.embedding %w[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
  %h = tpc.linear %x, %w layout out_in : tensor<2x4x8xf32>, tensor<16x8xf32>
  %s, %c = tpc.cross_entropy %h, %labels : tensor<2x4x16xf32>, tensor<2x4xi64>
  %l = tpc.loss_mean %s, %c
  return %l : tensor<f32>
}
// expected-error @+1 {{tpc-autodiff: @train_F already exists (tpc-autodiff ran before?)}}
func.func private @train_F()

// -----

// expected-error @+1 {{tpc-autodiff: no func.func @forward}}
module {
  func.func @model() {
    return
  }
}
