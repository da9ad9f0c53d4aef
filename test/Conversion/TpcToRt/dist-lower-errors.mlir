// tpc-lower-to-rt refuses what a partitioned module cannot lower to, at the
// op or argument at fault.
// RUN: tpc-opt %s --split-input-file --tpc-lower-to-rt -verify-diagnostics

dist.mesh @mesh axes [dp = 2]
// expected-error @+1 {{tpc-lower-to-rt: a program runs on one mesh, but the module has @mesh and @other}}
dist.mesh @other axes [tp = 2]
func.func @forward(%x: tensor<2xf32> {tpc.input = "x"})
    -> (tensor<2xf32> {tpc.output = "y"}) attributes {dist.partitioned} {
  %y = tpc.silu %x : tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

// A function on a mesh that dist-partition did not rewrite has global types.
dist.mesh @mesh axes [dp = 2]
// expected-error @+1 {{tpc-lower-to-rt: @forward runs on @mesh but is not partitioned (no 'dist.partitioned'): run dist-partition first}}
func.func @forward(%x: tensor<4xf32> {tpc.input = "x",
                   dist.sharding = #dist.sharding<@mesh, [[dp]]>})
    -> (tensor<4xf32> {tpc.output = "y"}) {
  %y = tpc.silu %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

dist.mesh @mesh axes [dp = 2]
func.func @forward(%x: tensor<4xf32> {tpc.input = "x"})
    -> (tensor<4xf32> {tpc.output = "y"}) attributes {dist.partitioned} {
  // expected-error @+1 {{cannot lower 'dist.shard' to rt: it annotates a global value; run dist-partition first}}
  %s = dist.shard %x to <@mesh, [[dp]]> : tensor<4xf32>
  %y = tpc.silu %s : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

dist.mesh @mesh axes [dp = 2, tp = 2]
// expected-error @+1 {{argument 0 ('x') is a partial sum over [tp]; only whole and split values lower to rt (run dist-partition first)}}
func.func @forward(%x: tensor<4xf32> {tpc.input = "x",
    dist.sharding = #dist.sharding<@mesh, [[dp]], partial [tp]>})
    -> (tensor<4xf32> {tpc.output = "y"}) attributes {dist.partitioned} {
  %y = dist.all_reduce %x on @mesh axes [tp] : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// The dropout's layout is not checked by dist (a discardable attribute).
dist.mesh @mesh axes [dp = 2, tp = 2]
func.func @forward(%x: tensor<2x4xf32> {tpc.input = "x"})
    -> (tensor<2x4xf32> {tpc.output = "y"}) attributes {dist.partitioned} {
  // expected-error @+1 {{'tpc.dropout': 'sp' (dimension 1) is not an axis of @mesh}}
  %d = tpc.dropout %x rate 1.000000e-01 stream 1
      {dist.sharding = #dist.sharding<@mesh, [[dp], [sp]]>} : tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}

// -----

dist.mesh @mesh axes [dp = 2, tp = 2]
func.func @forward(%x: tensor<2x4xf32> {tpc.input = "x"})
    -> (tensor<2x4xf32> {tpc.output = "y"}) attributes {dist.partitioned} {
  // expected-error @+1 {{'tpc.dropout' has a layout of 1 dimensions but rank 2}}
  %d = tpc.dropout %x rate 1.000000e-01 stream 1
      {dist.sharding = #dist.sharding<@mesh, [[dp]]>} : tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}

// -----

dist.mesh @mesh axes [dp = 2, tp = 2]
func.func @forward(%x: tensor<2x4xf32> {tpc.input = "x"})
    -> (tensor<2x4xf32> {tpc.output = "y"}) attributes {dist.partitioned} {
  // expected-error @+1 {{'tpc.dropout': 'dist.sharding' must be a #dist.sharding but is "dp"}}
  %d = tpc.dropout %x rate 1.000000e-01 stream 1 {dist.sharding = "dp"}
      : tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}

// -----

dist.mesh @mesh axes [dp = 2, tp = 2]
func.func @forward(%x: tensor<2x4xf32> {tpc.input = "x"})
    -> (tensor<2x4xf32> {tpc.output = "y"}) attributes {dist.partitioned} {
  // expected-error @+1 {{'tpc.dropout' has a layout on @elsewhere, not on the module's mesh @mesh}}
  %d = tpc.dropout %x rate 1.000000e-01 stream 1
      {dist.sharding = #dist.sharding<@elsewhere, [[dp], []]>}
      : tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}

// -----

// A layout without a mesh.
func.func @forward(%x: tensor<2x4xf32> {tpc.input = "x"})
    -> (tensor<2x4xf32> {tpc.output = "y"}) attributes {dist.partitioned} {
  // expected-error @+1 {{'tpc.dropout' has a layout on @mesh but the module has no dist.mesh}}
  %d = tpc.dropout %x rate 1.000000e-01 stream 1
      {dist.sharding = #dist.sharding<@mesh, [[dp], []]>} : tensor<2x4xf32>
  return %d : tensor<2x4xf32>
}

// -----

dist.mesh @mesh axes [dp = 2, tp = 2]
func.func @forward(%x: tensor<2x4xf32> {tpc.input = "x"})
    -> (tensor<2x2xf32> {tpc.output = "y"}) attributes {dist.partitioned} {
  // expected-error @+1 {{cannot lower 'dist.reduce_scatter' to rt: the kernel only sums, not 'max'}}
  %y = dist.reduce_scatter %x on @mesh axes [tp] dim 1 reduce max
      : tensor<2x4xf32> -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

dist.mesh @mesh axes [dp = 2, tp = 2]
func.func @forward(%x: tensor<2x4xf32> {tpc.input = "x"})
    -> (tensor<2x4xf32> {tpc.output = "y"}) attributes {dist.partitioned} {
  // expected-error @+1 {{cannot lower 'dist.all_reduce' to rt: the kernel only sums, not 'min'}}
  %y = dist.all_reduce %x on @mesh axes [tp] reduce min : tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

dist.mesh @mesh axes [dp = 2, tp = 2]
func.func @forward(%x: tensor<2x4xf32> {tpc.input = "x"})
    -> (tensor<2x4xf32> {tpc.output = "y"}) attributes {dist.partitioned} {
  // expected-error @+1 {{cannot lower 'dist.broadcast' to rt: no runtime kernel implements it}}
  %y = dist.broadcast %x on @mesh axes [tp] root 0 : tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// An optimizer state is laid out like its parameter.
dist.mesh @mesh axes [dp = 2, tp = 2]
// expected-error @+1 {{argument 1 (a state of 'w') must have its parameter's layout ('dist.sharding' and 'dist.unpadded_shape')}}
func.func @forward(
    %w: tensor<4x4xf32> {tpc.param = "w",
                         dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
    %m: tensor<4x4xf32> {tpc.state = {name = "momentum", param = "w"},
                         dist.sharding = #dist.sharding<@mesh, [[], [tp]]>},
    %dw: tensor<4x4xf32> {tpc.input = "dw"}, %lr: tensor<f32> {tpc.input = "lr"})
    -> (tensor<4x4xf32> {tpc.update = "w"},
        tensor<4x4xf32> {tpc.state = {name = "momentum", param = "w"}}) attributes {dist.partitioned} {
  %nw, %nm = tpc.sgd_update %w, %dw momentum_buffer %m lr %lr
      momentum 9.000000e-01 weight_decay 0.000000e+00
      : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  return %nw, %nm : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Outputs are whole: a split argument is gathered first.
dist.mesh @mesh axes [dp = 2, tp = 2]
func.func @forward(%x: tensor<2x4xf32> {tpc.input = "x",
                   dist.sharding = #dist.sharding<@mesh, [[dp], []]>})
    -> (tensor<2x4xf32> {tpc.output = "x"}) attributes {dist.partitioned} {
  // expected-error @+1 {{result 0 of @forward ('x') is a split argument; outputs must be whole (all_gather it first)}}
  return %x : tensor<2x4xf32>
}
