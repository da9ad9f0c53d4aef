// dist-propagate{gather-parameters}: a policy that wants a parameter gathered
// where an op needs it whole says so; the split is then undone at that op.
// RUN: tpc-opt %s --dist-propagate=gather-parameters=true | FileCheck %s

dist.mesh @mesh axes [tp = 2]
// CHECK-LABEL: func.func @gathered_parameter
func.func @gathered_parameter(%x: tensor<4x16xf32>,
                              %w: tensor<16x8xf32> {dist.sharding = #dist.sharding<@mesh, [[tp], []]>, tpc.param = "proj.weight"},
                              %b: tensor<8xf32> {tpc.param = "proj.bias"}) -> tensor<4x8xf32> {
  // CHECK: tpc.linear {{.*}}dist.operand_shardings = [#dist.sharding<@mesh, {{\[}}[], []]>, #dist.sharding<@mesh, {{\[}}[], []]>, #dist.sharding<@mesh, {{\[}}[]]>]
  %y = tpc.linear %x, %w, %b layout in_out : tensor<4x16xf32>, tensor<16x8xf32>, tensor<8xf32>
  return %y : tensor<4x8xf32>
}
