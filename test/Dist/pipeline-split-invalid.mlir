// dist-pipeline-split refuses what it cannot split, at the place that is
// wrong.
// RUN: tpc-opt %s --split-input-file --dist-pipeline-split=stages=2 -verify-diagnostics

// expected-error @+1 {{dist-pipeline-split: @forward has no transformer layers ('tpc.layer') to split}}
func.func @forward(%x: tensor<2xf32> {tpc.input = "x"}) -> tensor<2xf32> {
  %y = tpc.silu %x : tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

func.func @forward(%x: tensor<2xf32> {tpc.input = "x"}) -> tensor<2xf32> {
  %a = tpc.silu %x {tpc.layer = 0 : i64} : tensor<2xf32>
  // expected-error @+1 {{dist-pipeline-split: layer 2 follows layer 0: the layers must come one after another, from 0, each contiguous}}
  %b = tpc.silu %a {tpc.layer = 2 : i64} : tensor<2xf32>
  return %b : tensor<2xf32>
}

// -----

// expected-error @+1 {{dist-pipeline-split: no func.func @forward with a body}}
module {
}
