// RUN: tpc-opt %s --dist-propagate --dist-partition | FileCheck %s

// Why example-shard-mlp moves a row-parallel linear's bias into its own add
// (docs/tutorials/sharding-pass.md): the same weight annotation, with the
// bias inside the linear and after it.
dist.mesh @mesh axes [tp = 2]

// The bias would be added once per partial sum, so the rule of a linear with
// a bias keeps the contracted dim whole: the weight is gathered, every device
// computes the whole product.
// CHECK-LABEL: func.func @bias_inside(
// CHECK-SAME: %[[X:.+]]: tensor<2x8x256xf32>, %[[W:.+]]: tensor<128x64xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}tp], []]>}, %[[B:.+]]: tensor<64xf32>)
// CHECK-NEXT: %[[WHOLE:.+]] = dist.all_gather %[[W]] on @mesh axes [tp] dim 0 : tensor<128x64xf32> -> tensor<256x64xf32>
// CHECK-NEXT: tpc.linear %[[X]], %[[WHOLE]], %[[B]] layout in_out{{.*}} : tensor<2x8x256xf32>, tensor<256x64xf32>, tensor<64xf32>
func.func @bias_inside(%x: tensor<2x8x256xf32>,
                       %w: tensor<256x64xf32> {dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
                       %b: tensor<64xf32>) -> tensor<2x8x64xf32> {
  %y = tpc.linear %x, %w, %b layout in_out : tensor<2x8x256xf32>, tensor<256x64xf32>, tensor<64xf32>
  return %y : tensor<2x8x64xf32>
}

// Row-parallel: each device contracts its half of the input features (the
// input is sliced locally), the partial sums are all-reduced, then the bias
// is added once.
// CHECK-LABEL: func.func @bias_after(
// CHECK-SAME: %[[X:.+]]: tensor<2x8x256xf32>, %[[W:.+]]: tensor<128x64xf32> {dist.sharding = #dist.sharding<@mesh, {{\[\[}}tp], []]>}, %[[B:.+]]: tensor<64xf32>)
// CHECK-NEXT: %[[XS:.+]] = dist.shard_slice %[[X]] on @mesh axes [tp] dim 2 : tensor<2x8x256xf32> -> tensor<2x8x128xf32>
// CHECK-NEXT: %[[P:.+]] = tpc.linear %[[XS]], %[[W]] layout in_out{{.*}} : tensor<2x8x128xf32>, tensor<128x64xf32>
// CHECK-NEXT: %[[S:.+]] = dist.all_reduce %[[P]] on @mesh axes [tp] : tensor<2x8x64xf32>
// CHECK-NEXT: tpc.add %[[S]], %[[B]]
func.func @bias_after(%x: tensor<2x8x256xf32>,
                      %w: tensor<256x64xf32> {dist.sharding = #dist.sharding<@mesh, [[tp], []]>},
                      %b: tensor<64xf32>) -> tensor<2x8x64xf32> {
  %p = tpc.linear %x, %w layout in_out : tensor<2x8x256xf32>, tensor<256x64xf32>
  %y = tpc.add %p, %b : tensor<2x8x64xf32>, tensor<64xf32>
  return %y : tensor<2x8x64xf32>
}
