// tpc-lower-to-rt refuses a training step it cannot lower, at the place that
// is wrong: an update whose old value is read later or that is no argument,
// a dropout block that is not constant, a loop or call left in place,
// results the updates did not compute, constants no kernel folds.
// RUN: tpc-opt %s --split-input-file --tpc-lower-to-rt=function=train_step -verify-diagnostics

// expected-error @+1 {{tpc-lower-to-rt: no func.func @train_step}}
module {
  func.func @forward() {
    return
  }
}

// -----

func.func @train_step(%w: tensor<8xf32> {tpc.param = "w"},
                      %g: tensor<8xf32> {tpc.input = "g"},
                      %lr: tensor<f32> {tpc.input = "lr"})
    -> (tensor<8xf32> {tpc.output = "y"}) {
  // expected-error @+1 {{cannot lower 'tpc.sgd_update' to rt: it updates operand 0 in place, but 'tpc.add' reads the old value after it}}
  %w1 = tpc.sgd_update %w, %g lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 : tensor<8xf32>, tensor<8xf32>
  // expected-note @+1 {{the later reader}}
  %y = tpc.add %w, %g : tensor<8xf32>, tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @train_step(%w: tensor<8xf32> {tpc.param = "w"},
                      %g: tensor<8xf32> {tpc.input = "g"},
                      %lr: tensor<f32> {tpc.input = "lr"})
    -> (tensor<8xf32> {tpc.update = "w"}) {
  %ws = tpc.silu %w : tensor<8xf32>
  // expected-error @+1 {{cannot lower 'tpc.sgd_update' to rt: operand 0 must be a 'tpc.param' argument, which the kernel updates in place}}
  %w1 = tpc.sgd_update %ws, %g lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 : tensor<8xf32>, tensor<8xf32>
  return %w1 : tensor<8xf32>
}

// -----

func.func @train_step(%w: tensor<8xf32> {tpc.param = "w"},
                      %g: tensor<8xf32> {tpc.input = "g"},
                      %m: tensor<8xf32> {tpc.input = "m"},
                      %lr: tensor<f32> {tpc.input = "lr"})
    -> (tensor<8xf32> {tpc.update = "w"}) {
  // expected-error @+1 {{cannot lower 'tpc.sgd_update' to rt: operand 2 must be a 'tpc.state' argument, which the kernel updates in place}}
  %w1, %m1 = tpc.sgd_update %w, %g momentum_buffer %m lr %lr momentum 9.000000e-01 weight_decay 0.000000e+00 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  return %w1 : tensor<8xf32>
}

// -----

func.func @train_step(%w: tensor<8xf32> {tpc.param = "w"},
                      %v: tensor<8xf32> {tpc.param = "v"},
                      %g: tensor<8xf32> {tpc.input = "g"},
                      %lr: tensor<f32> {tpc.input = "lr"})
    -> (tensor<8xf32> {tpc.update = "v"}) {
  %w1 = tpc.sgd_update %w, %g lr %lr momentum 0.000000e+00 weight_decay 0.000000e+00 : tensor<8xf32>, tensor<8xf32>
  // expected-error @+1 {{result 0 of @train_step ('tpc.param' = "v") is not the value an optimizer update computes for that argument; only those are written back}}
  return %w1 : tensor<8xf32>
}

// -----

func.func @train_step(%w: tensor<8xf32> {tpc.param = "w"},
                      %m: tensor<8xf32> {tpc.state = {name = "momentum", param = "w"}},
                      %g: tensor<8xf32> {tpc.input = "g"},
                      %lr: tensor<f32> {tpc.input = "lr"})
    -> (tensor<8xf32> {tpc.state = {name = "momentum", param = "w"}}) {
  // expected-error @+1 {{result 0 of @train_step ('tpc.state' = {name = "momentum", param = "w"}) is not the value an optimizer update computes for that argument}}
  return %g : tensor<8xf32>
}

// -----

// expected-error @+1 {{argument 1: 'tpc.state' must hold the strings 'name' and 'param' but is {name = "momentum"}}}
func.func @train_step(%w: tensor<8xf32> {tpc.param = "w"},
                      %m: tensor<8xf32> {tpc.state = {name = "momentum"}})
    -> (tensor<8xf32> {tpc.output = "y"}) {
  return %w : tensor<8xf32>
}

// -----

func.func @train_step(%mb: tensor<i64> {tpc.input = "mb"})
    -> (tensor<2x8xi8> {tpc.output = "mask"}) {
  // expected-error @+1 {{cannot lower 'tpc.dropout_mask' to rt: its dropout block must be a non-negative constant (unroll the microbatch loop first: tpc-unroll-train-step)}}
  %m = tpc.dropout_mask rate 1.000000e-01 stream 0 block %mb : tensor<2x8xi8>
  return %m : tensor<2x8xi8>
}

// -----

func.func @train_step(%x: tensor<2x8xf32> {tpc.input = "x"})
    -> (tensor<2x8xf32> {tpc.output = "y"}) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{cannot lower 'scf.for' to rt: inline the calls and unroll the microbatch loop first (tpc-unroll-train-step)}}
  %y = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %x) -> (tensor<2x8xf32>) {
    %s = tpc.silu %acc : tensor<2x8xf32>
    scf.yield %s : tensor<2x8xf32>
  }
  return %y : tensor<2x8xf32>
}

// -----

func.func @train_step(%x: tensor<2x8xf32> {tpc.input = "x"})
    -> (tensor<2x8xf32> {tpc.output = "y"}) {
  %one = arith.constant dense<1.000000e+00> : tensor<2x8xf32>
  // expected-error @+1 {{cannot lower 'tpc.add' to rt: an operand has no buffer (it is the result of 'arith.constant'; no kernel computes constants)}}
  %y = tpc.add %x, %one : tensor<2x8xf32>, tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @train_step(%x: tensor<4x8xi64> {tpc.input = "x"})
    -> (tensor<2x4xi64> {tpc.output = "y"}) {
  // expected-error @+1 {{cannot lower 'tensor.extract_slice' to rt: only a slice with constant offsets and unit strides along one dimension, of the same rank, has a kernel}}
  %y = tensor.extract_slice %x[2, 4] [2, 4] [1, 1] : tensor<4x8xi64> to tensor<2x4xi64>
  return %y : tensor<2x4xi64>
}
