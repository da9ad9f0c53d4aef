// RUN: tpc-opt %s --load-pass-plugin=%tpc_lib_dir/TpcTestPlugin.so \
// RUN:   --pass-pipeline="builtin.module(func.func(tpc-test-layer-stats))" \
// RUN:   -o /dev/null 2>&1 | FileCheck %s

// CHECK: remark: forward: 4 ops, 2 layers; layer 0: 2; layer 1: 1
func.func @forward(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = tpc.gelu %x tanh {tpc.layer = 0 : i64} : tensor<2x8xf32>
  %1 = tpc.silu %0 {tpc.layer = 0 : i64} : tensor<2x8xf32>
  %2 = tpc.add %1, %x {tpc.layer = 1 : i64} : tensor<2x8xf32>, tensor<2x8xf32>
  return %2 : tensor<2x8xf32>
}
