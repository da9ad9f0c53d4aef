// One chunk per diagnostic of the dist dialect: meshes, shardings and the
// mesh, axis, shape and peer checks of every collective.
// RUN: tpc-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{mesh @m names axis 'tp' twice}}
dist.mesh @m axes [tp = 2, tp = 4]

// -----

// expected-error @+1 {{mesh @m axis 'tp' has size 0, must be positive}}
dist.mesh @m axes [dp = 2, tp = 0]

// -----

// expected-error @+1 {{mesh @m has no axes}}
dist.mesh @m axes []

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{mesh axis 'tp' is used twice in the sharding}}
  %0 = dist.shard %x to <@m, [[tp], [tp]]> : tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{mesh axis 'tp' is used twice in the sharding}}
  %0 = dist.shard %x to <@m, [[], [tp]], partial [tp]> : tensor<8x16xf32>
  return
}

// -----

func.func @f(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{unknown mesh @nomesh}}
  %0 = dist.shard %x to <@nomesh, [[], []]> : tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{mesh @m has no axis 'pp'}}
  %0 = dist.shard %x to <@m, [[pp], []]> : tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{mesh @m has no axis 'sp'}}
  %0 = dist.shard %x to <@m, [[], []], partial [sp]> : tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{sharding has 3 dimensions but the value 'tensor<8x16xf32>' has rank 2}}
  %0 = dist.shard %x to <@m, [[], [], []]> : tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{dimension 1 of 'tensor<8x6xf32>' (size 6) is not divisible by 8, the product of the sizes of its mesh axes}}
  %0 = dist.shard %x to <@m, [[], [dp, tp]]> : tensor<8x6xf32>
  return
}

// -----

func.func @f(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{unknown mesh @m}}
  %0 = dist.all_reduce %x on @m axes [tp] : tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{mesh @m has no axis 'pp'}}
  %0 = dist.all_reduce %x on @m axes [pp] : tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{mesh axis 'tp' is named twice}}
  %0 = dist.all_reduce %x on @m axes [tp, dp, tp] : tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{needs at least one mesh axis}}
  %0 = dist.all_reduce %x on @m axes [] : tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<?x16xf32>) {
  // expected-error @+1 {{must be statically shaped tensor}}
  %0 = dist.all_reduce %x on @m axes [tp] : tensor<?x16xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{result type 'tensor<8x8xf32>' has the wrong shape: expected 'tensor<8x16xf32>'}}
  %0 = dist.all_gather %x on @m axes [tp] dim 1 : tensor<8x4xf32> -> tensor<8x8xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{dim 2 is not a dimension of 'tensor<8x4xf32>'}}
  %0 = dist.all_gather %x on @m axes [tp] dim 2 : tensor<8x4xf32> -> tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{dim -1 is not a dimension of 'tensor<8x4xf32>'}}
  %0 = dist.all_gather %x on @m axes [tp] dim -1 : tensor<8x4xf32> -> tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{all of {input, result} have same element type}}
  %0 = dist.all_gather %x on @m axes [tp] dim 1 : tensor<8x4xf32> -> tensor<8x16xbf16>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{dimension 1 of 'tensor<8x6xf32>' (size 6) is not divisible by the group size 4}}
  %0 = dist.reduce_scatter %x on @m axes [tp] dim 1 : tensor<8x6xf32> -> tensor<8x1xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{result type 'tensor<8x16xf32>' has the wrong shape: expected 'tensor<8x4xf32>'}}
  %0 = dist.reduce_scatter %x on @m axes [tp] dim 1 : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{dimension 1 of 'tensor<8x6xf32>' (size 6) is not divisible by the group size 4}}
  %0 = dist.shard_slice %x on @m axes [tp] dim 1 : tensor<8x6xf32> -> tensor<8x1xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{result type 'tensor<8x16xf32>' has the wrong shape: expected 'tensor<8x8xf32>'}}
  %0 = dist.shard_slice %x on @m axes [dp] dim 1 : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{result type 'tensor<8x8xf32>' has the wrong shape: expected 'tensor<8x16xf32>'}}
  %0 = dist.shard_pad %x on @m axes [tp] dim 1 : tensor<8x4xf32> -> tensor<8x8xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{result type 'tensor<8x4xf32>' has the wrong shape: expected 'tensor<32x4xf32>'}}
  %0 = dist.all_to_all %x on @m axes [tp] split 1 concat 0 : tensor<8x16xf32> -> tensor<8x4xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{dimension 1 of 'tensor<8x6xf32>' (size 6) is not divisible by the group size 4}}
  %0 = dist.all_to_all %x on @m axes [tp] split 1 concat 0 : tensor<8x6xf32> -> tensor<32x1xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{concat dim 5 is not a dimension of 'tensor<8x16xf32>'}}
  %0 = dist.all_to_all %x on @m axes [tp] split 1 concat 5 : tensor<8x16xf32> -> tensor<8x4xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{root 4 is not an index in the group of size 4}}
  %0 = dist.broadcast %x on @m axes [tp] root 4 : tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [pp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{peer 4 is not an index in the group of size 4}}
  dist.send %x on @m axes [pp] pairs [3 -> 4] channel 0 : tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [pp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{device 2 sends to itself}}
  dist.send %x on @m axes [pp] pairs [2 -> 2] channel 0 : tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [pp = 4]
func.func @f(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{device 0 is the source of two pairs}}
  dist.send %x on @m axes [pp] pairs [0 -> 1, 0 -> 2] channel 0 : tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [pp = 4]
func.func @f() {
  // expected-error @+1 {{device 3 is the target of two pairs}}
  %0 = dist.recv on @m axes [pp] pairs [1 -> 3, 2 -> 3] channel 0 : tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [pp = 4]
func.func @f() {
  // expected-error @+1 {{needs at least one 'source -> target' pair}}
  %0 = dist.recv on @m axes [pp] pairs [] channel 0 : tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [pp = 4]
func.func @f() {
  // expected-error @+1 {{peer -1 is not an index in the group of size 4}}
  %0 = dist.recv on @m axes [pp] pairs [-1 -> 0] channel 0 : tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [pp = 2]
func.func @f(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{is async, but its input has no 'dist.wait'}}
  dist.send async %x on @m axes [pp] pairs [0 -> 1] channel 0 : tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [pp = 2]
func.func @f() {
  // expected-error @+1 {{is async, so its result needs one 'dist.wait', not 2}}
  %0 = dist.recv async on @m axes [pp] pairs [0 -> 1] channel 0 : tensor<8x16xf32>
  dist.wait %0 : tensor<8x16xf32>
  dist.wait %0 : tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [pp = 2]
func.func @f(%x: tensor<8x16xf32>) {
  dist.send %x on @m axes [pp] pairs [0 -> 1] channel 0 : tensor<8x16xf32>
  // expected-error @+1 {{waits on a value that no 'dist.send async' sends and no 'dist.recv async' receives}}
  dist.wait %x : tensor<8x16xf32>
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
// expected-error @+1 {{dimension 1 of 'tensor<64x6xf32>' (size 6) is not divisible by 4, the product of the sizes of its mesh axes}}
func.func @f(%w: tensor<64x6xf32> {dist.sharding = #dist.sharding<@m, [[], [tp]]>}) {
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
// expected-error @+1 {{mesh @m has no axis 'pp'}}
func.func @f(%w: tensor<64x8xf32> {dist.sharding = #dist.sharding<@m, [[pp], []]>}) {
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
// expected-error @+1 {{'dist.sharding' of argument 0 must be a #dist.sharding but is 3 : i64}}
func.func @f(%w: tensor<64x8xf32> {dist.sharding = 3}) {
  return
}

// -----

dist.mesh @m axes [dp = 2, tp = 4]
// expected-error @+1 {{unknown dist argument attribute 'dist.shardin'}}
func.func @f(%w: tensor<64x8xf32> {dist.shardin = #dist.sharding<@m, [[], []]>}) {
  return
}
