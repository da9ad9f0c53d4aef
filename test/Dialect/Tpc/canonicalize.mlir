// tpc.add folds the addition of a zero splat (the training driver's
// accumulators start at zero).
// RUN: tpc-opt %s --canonicalize | FileCheck %s

// CHECK-LABEL: func.func @add_zero_rhs(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[X]]
func.func @add_zero_rhs(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %z = arith.constant dense<0.0> : tensor<4x8xf32>
  %0 = tpc.add %x, %z : tensor<4x8xf32>, tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @add_zero_lhs(
// CHECK-SAME: %[[X:.*]]: tensor<f32>)
// CHECK-NEXT: return %[[X]]
func.func @add_zero_lhs(%x: tensor<f32>) -> tensor<f32> {
  %z = arith.constant dense<-0.0> : tensor<f32>
  %0 = tpc.add %z, %x : tensor<f32>, tensor<f32>
  return %0 : tensor<f32>
}

// A broadcast zero rhs folds too.
// CHECK-LABEL: func.func @add_zero_broadcast(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xbf16>)
// CHECK-NEXT: return %[[X]]
func.func @add_zero_broadcast(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %z = arith.constant dense<0.0> : tensor<8xbf16>
  %0 = tpc.add %x, %z : tensor<4x8xbf16>, tensor<8xbf16>
  return %0 : tensor<4x8xbf16>
}

// Not folded: a zero lhs with a broadcast rhs (the result is not the rhs),
// and a non-zero constant.
// CHECK-LABEL: func.func @add_kept(
// CHECK: tpc.add %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32>
// CHECK: tpc.add %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x8xf32>
func.func @add_kept(%x: tensor<8xf32>, %y: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %z = arith.constant dense<0.0> : tensor<4x8xf32>
  %0 = tpc.add %z, %x : tensor<4x8xf32>, tensor<8xf32>
  %one = arith.constant dense<1.0> : tensor<4x8xf32>
  %1 = tpc.add %y, %one : tensor<4x8xf32>, tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}
