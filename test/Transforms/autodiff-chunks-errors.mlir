// What tpc-autodiff refuses in a @forward of calls (pipeline chunks, from
// dist-pipeline-outline), with the reason and the op or function.
// RUN: tpc-opt %s -split-input-file -verify-diagnostics --tpc-autodiff=microbatches=2

// A chunk that hands on an integer tensor: only activations (float tensors)
// cross chunks; B could not return their gradients.
func.func @forward(%w: tensor<16x8xf32> {tpc.param = "w"},
                   %ids: tensor<2x4xi64> {tpc.input = "input_ids"},
                   %labels: tensor<2x4xi64> {tpc.input = "labels"}) -> tensor<f32> {
  %a:2 = call @forward_chunk0(%w, %ids) : (tensor<16x8xf32>, tensor<2x4xi64>) -> (tensor<2x4x8xf32>, tensor<2x4xi64>)
  %l = call @forward_chunk1(%a#0, %w, %labels) : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
func.func @forward_chunk0(%w: tensor<16x8xf32> {tpc.param = "w"},
                          %ids: tensor<2x4xi64> {tpc.input = "input_ids"})
    -> (tensor<2x4x8xf32>, tensor<2x4xi64>) {
  %x = tpc.embedding %w[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
  // expected-error @+1 {{tpc-autodiff: result 1 of type 'tensor<2x4xi64>' is neither the loss nor an activation (a float tensor with a batch dimension)}}
  return %x, %ids : tensor<2x4x8xf32>, tensor<2x4xi64>
}
func.func @forward_chunk1(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32> {tpc.param = "w"},
                          %labels: tensor<2x4xi64> {tpc.input = "labels"}) -> tensor<f32> {
  %h = tpc.linear %x, %w layout out_in : tensor<2x4x8xf32>, tensor<16x8xf32>
  %s, %c = tpc.cross_entropy %h, %labels : tensor<2x4x16xf32>, tensor<2x4xi64>
  %l = tpc.loss_mean %s, %c
  return %l : tensor<f32>
}

// -----

// The loss is computed by the last chunk only.
// expected-error @+1 {{tpc-autodiff: the last function @forward calls must compute the loss}}
func.func @forward(%w: tensor<16x8xf32> {tpc.param = "w"},
                   %ids: tensor<2x4xi64> {tpc.input = "input_ids"},
                   %labels: tensor<2x4xi64> {tpc.input = "labels"}) -> tensor<2x4x8xf32> {
  %a = call @forward_chunk0(%w, %ids) : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  return %a : tensor<2x4x8xf32>
}
func.func @forward_chunk0(%w: tensor<16x8xf32> {tpc.param = "w"},
                          %ids: tensor<2x4xi64> {tpc.input = "input_ids"}) -> tensor<2x4x8xf32> {
  %x = tpc.embedding %w[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
  return %x : tensor<2x4x8xf32>
}

// -----

// One function per chunk: F, B and W are named after it.
func.func @forward(%w: tensor<16x8xf32> {tpc.param = "w"},
                   %ids: tensor<2x4xi64> {tpc.input = "input_ids"},
                   %labels: tensor<2x4xi64> {tpc.input = "labels"}) -> tensor<f32> {
  %a = call @forward_chunk0(%w, %ids) : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  // expected-error @+1 {{tpc-autodiff: @forward calls @forward_chunk0 twice; each chunk is called once}}
  %b = call @forward_chunk0(%w, %ids) : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %l = call @forward_chunk1(%b, %w, %labels) : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
func.func @forward_chunk0(%w: tensor<16x8xf32> {tpc.param = "w"},
                          %ids: tensor<2x4xi64> {tpc.input = "input_ids"}) -> tensor<2x4x8xf32> {
  %x = tpc.embedding %w[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
  return %x : tensor<2x4x8xf32>
}
func.func @forward_chunk1(%x: tensor<2x4x8xf32>, %w: tensor<16x8xf32> {tpc.param = "w"},
                          %labels: tensor<2x4xi64> {tpc.input = "labels"}) -> tensor<f32> {
  %h = tpc.linear %x, %w layout out_in : tensor<2x4x8xf32>, tensor<16x8xf32>
  %s, %c = tpc.cross_entropy %h, %labels : tensor<2x4x16xf32>, tensor<2x4xi64>
  %l = tpc.loss_mean %s, %c
  return %l : tensor<f32>
}

// -----

// Activations a chunk hands on lead with the batch, as the inputs do.
func.func @forward(%w: tensor<16x8xf32> {tpc.param = "w"},
                   %ids: tensor<2x4xi64> {tpc.input = "input_ids"},
                   %labels: tensor<2x4xi64> {tpc.input = "labels"}) -> tensor<f32> {
  %a = call @forward_chunk0(%w, %ids) : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<4x2x8xf32>
  %l = call @forward_chunk1(%a, %w, %labels) : (tensor<4x2x8xf32>, tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
func.func @forward_chunk0(%w: tensor<16x8xf32> {tpc.param = "w"},
                          %ids: tensor<2x4xi64> {tpc.input = "input_ids"}) -> tensor<4x2x8xf32> {
  %x = tpc.embedding %w[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
  // expected-error @+1 {{tpc-autodiff: cannot split 'tpc.transpose' into microbatches: its result 'tensor<4x2x8xf32>' does not lead with the batch dimension 2}}
  %t = tpc.transpose %x [1, 0, 2] : tensor<2x4x8xf32>
  return %t : tensor<4x2x8xf32>
}
func.func @forward_chunk1(%x: tensor<4x2x8xf32>, %w: tensor<16x8xf32> {tpc.param = "w"},
                          %labels: tensor<2x4xi64> {tpc.input = "labels"}) -> tensor<f32> {
  %t = tpc.transpose %x [1, 0, 2] : tensor<4x2x8xf32>
  %h = tpc.linear %t, %w layout out_in : tensor<2x4x8xf32>, tensor<16x8xf32>
  %s, %c = tpc.cross_entropy %h, %labels : tensor<2x4x16xf32>, tensor<2x4xi64>
  %l = tpc.loss_mean %s, %c
  return %l : tensor<f32>
}
