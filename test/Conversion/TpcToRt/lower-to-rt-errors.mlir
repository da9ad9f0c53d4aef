// tpc-lower-to-rt refuses what it cannot lower, at the place that is wrong.
// RUN: tpc-opt %s --split-input-file --tpc-lower-to-rt -verify-diagnostics

// expected-error @+1 {{tpc-lower-to-rt: no func.func @forward}}
module {
  func.func @main() {
    return
  }
}

// -----

// expected-error @+1 {{tpc-lower-to-rt: @forward has no body}}
func.func private @forward(tensor<2xf32>)

// -----

// expected-error @+1 {{argument 1 must have exactly one of 'tpc.param', 'tpc.input' (a string) and 'tpc.state' (a dictionary)}}
func.func @forward(%w: tensor<2xf32> {tpc.param = "w"}, %x: tensor<2xf32>)
    -> (tensor<2xf32> {tpc.output = "y"}) {
  %y = tpc.add %x, %w : tensor<2xf32>, tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

// expected-error @+1 {{argument 0 must have exactly one of 'tpc.param', 'tpc.input' (a string) and 'tpc.state' (a dictionary)}}
func.func @forward(%w: tensor<2xf32> {tpc.param = "w", tpc.input = "w"})
    -> (tensor<2xf32> {tpc.output = "y"}) {
  %y = tpc.silu %w : tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

// expected-error @+1 {{argument 0 ('w') has type 'tensor<2xf64>', not a static tensor of f32, bf16, f16, i32, i64 or i8 of fewer than 2^63 bytes}}
func.func @forward(%w: tensor<2xf64> {tpc.param = "w"}) {
  return
}

// -----

// 2^80 elements: the executable's sizes are 64-bit.
// expected-error @+1 {{argument 0 ('w') has type 'tensor<1099511627776x1099511627776xf32>', not a static tensor}}
func.func @forward(%w: tensor<1099511627776x1099511627776xf32> {tpc.param = "w"}) {
  return
}

// -----

// expected-error @+1 {{argument 0 ('w'): 'tpc.hf_shape' must be an array<i64>}}
func.func @forward(%w: tensor<2xf32> {tpc.param = "w", tpc.hf_shape = [2]}) {
  return
}

// -----

func.func @forward(%x: tensor<2xf32> {tpc.input = "x"})
    -> (tensor<2xf32> {tpc.output = "y"}) {
  // expected-error @+1 {{cannot lower 'arith.addf' to rt: no runtime kernel implements it}}
  %y = arith.addf %x, %x : tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

func.func @forward(%x: tensor<2xf32> {tpc.input = "x"}) -> tensor<2xf32> {
  %y = tpc.silu %x : tensor<2xf32>
  // expected-error @+1 {{result 0 of @forward has no 'tpc.output' name, 'tpc.grad', 'tpc.update' or 'tpc.state'; tpc-import and tpc-optimizer tag every result}}
  return %y : tensor<2xf32>
}

// -----

func.func @forward(%x: tensor<2xf32> {tpc.input = "x"})
    -> (tensor<2xf32> {tpc.output = "y"}, tensor<2xf32>) {
  %y = tpc.silu %x : tensor<2xf32>
  // expected-error @+1 {{result 1 of @forward has no 'tpc.output' name}}
  return %y, %y : tensor<2xf32>, tensor<2xf32>
}

// -----

// The names must still be unique once lowered: the rt verifier says so.
func.func @forward(%x: tensor<2xf32> {tpc.input = "x"})
    -> (tensor<2xf32> {tpc.output = "y"}, tensor<2xf32> {tpc.output = "y"}) {
  %y = tpc.silu %x : tensor<2xf32>
  // expected-error @+1 {{'rt.output' op duplicate output 'y'}}
  return %y, %y : tensor<2xf32>, tensor<2xf32>
}

// -----

// The runtime's kernels read i64 token ids and labels (docs/runtime/
// opcodes.md): the tpc dialect's i32 ones are refused where they are read,
// by the rt.kernel verifier, which is the loader's decoder.
func.func @forward(%t: tensor<16x8xf32> {tpc.param = "t"},
                   %ids: tensor<2xi32> {tpc.input = "ids"})
    -> (tensor<2x8xf32> {tpc.output = "y"}) {
  // expected-error @+1 {{'rt.kernel' op embedding: ids is i32, expected i64}}
  %y = tpc.embedding %t[%ids] : tensor<16x8xf32>, tensor<2xi32>
  return %y : tensor<2x8xf32>
}
