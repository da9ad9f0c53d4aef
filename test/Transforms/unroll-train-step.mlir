// tpc-unroll-train-step: loops with constant bounds are unrolled iteration
// by iteration, calls are inlined (callees left without uses are erased),
// constants fold and what repeats from the same operands is computed once.
// RUN: tpc-opt %s --split-input-file --tpc-unroll-train-step -verify-diagnostics | FileCheck %s

// CHECK-NOT: func.func @body
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32>
func.func @body(%x: tensor<2x8xf32>, %i: tensor<i64>, %acc: tensor<2x8xf32>)
    -> tensor<2x8xf32> {
  %m = tpc.dropout_mask rate 1.000000e-01 stream 7 block %i : tensor<2x8xi8>
  %y = tpc.apply_mask %x, %m rate 1.000000e-01 : tensor<2x8xf32>, tensor<2x8xi8>
  %s = tpc.add %acc, %y : tensor<2x8xf32>, tensor<2x8xf32>
  return %s : tensor<2x8xf32>
}
func.func @train_step(%x: tensor<4x8xf32> {tpc.input = "x"}) -> tensor<2x8xf32> {
  %zero = arith.constant dense<0.000000e+00> : tensor<2x8xf32>
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  // CHECK-NOT: scf.for
  // CHECK-NOT: call
  // CHECK-DAG: %[[B1:.*]] = arith.constant dense<1> : tensor<i64>
  // CHECK-DAG: %[[B0:.*]] = arith.constant dense<0> : tensor<i64>
  // CHECK: %[[X0:.*]] = tensor.extract_slice %[[X]][0, 0] [2, 8] [1, 1]
  // CHECK: %[[M0:.*]] = tpc.dropout_mask rate 1.000000e-01 stream 7 block %[[B0]]
  // The zero accumulator folds away.
  // CHECK-NEXT: %[[Y0:.*]] = tpc.apply_mask %[[X0]], %[[M0]]
  // CHECK-NEXT: %[[X1:.*]] = tensor.extract_slice %[[X]][2, 0] [2, 8] [1, 1]
  // CHECK-NEXT: %[[M1:.*]] = tpc.dropout_mask rate 1.000000e-01 stream 7 block %[[B1]]
  // CHECK-NEXT: %[[Y1:.*]] = tpc.apply_mask %[[X1]], %[[M1]]
  // CHECK-NEXT: %[[S:.*]] = tpc.add %[[Y0]], %[[Y1]]
  // CHECK-NEXT: return %[[S]]
  %r = scf.for %iv = %c0 to %c2 step %c1 iter_args(%acc = %zero) -> (tensor<2x8xf32>) {
    %c2i = arith.constant 2 : index
    %off = arith.muli %iv, %c2i : index
    %xs = tensor.extract_slice %x[%off, 0] [2, 8] [1, 1] : tensor<4x8xf32> to tensor<2x8xf32>
    %i64 = arith.index_cast %iv : index to i64
    %i = tensor.from_elements %i64 : tensor<i64>
    %next = func.call @body(%xs, %i, %acc) : (tensor<2x8xf32>, tensor<i64>, tensor<2x8xf32>) -> tensor<2x8xf32>
    scf.yield %next : tensor<2x8xf32>
  }
  return %r : tensor<2x8xf32>
}

// -----

// Nested loops and a callee that is also called from elsewhere: it stays.
// CHECK-LABEL: func.func @shared(
func.func @shared(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = tpc.silu %x : tensor<8xf32>
  return %y : tensor<8xf32>
}
// CHECK-LABEL: func.func @other(
// CHECK: call @shared
func.func @other(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = func.call @shared(%x) : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}
// CHECK-LABEL: func.func @train_step(
// Two by three iterations: six silu, in order.
// CHECK-COUNT-6: tpc.silu
// CHECK-NOT: tpc.silu
// CHECK: return
func.func @train_step(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%a = %x) -> (tensor<8xf32>) {
    %s = scf.for %j = %c0 to %c3 step %c1 iter_args(%b = %a) -> (tensor<8xf32>) {
      %n = func.call @shared(%b) : (tensor<8xf32>) -> tensor<8xf32>
      scf.yield %n : tensor<8xf32>
    }
    scf.yield %s : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}

// -----

// Common subexpressions of the copies (a cast of a parameter) are computed
// once.
// CHECK-LABEL: func.func @train_step(
// CHECK-COUNT-1: tpc.cast
// CHECK-NOT: tpc.cast
func.func @train_step(%w: tensor<8xf32> {tpc.param = "w"}) -> tensor<8xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %init = tpc.cast %w : tensor<8xf32> to tensor<8xbf16>
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%a = %init) -> (tensor<8xbf16>) {
    %h = tpc.cast %w : tensor<8xf32> to tensor<8xbf16>
    %s = tpc.add %a, %h : tensor<8xbf16>, tensor<8xbf16>
    scf.yield %s : tensor<8xbf16>
  }
  return %r : tensor<8xbf16>
}

// -----

// A sum that alone reads both its operands (a gradient accumulator and a
// microbatch's share) moves up to right after the later one, before the rest
// of the iteration, so that the shares do not all wait for the end.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:[^:]*]]: tensor<8xf32>
// CHECK-NEXT: %[[G0:.*]] = tpc.silu %[[X]]
// CHECK-NEXT: %[[O0:.*]] = tpc.gelu %[[X]]
// CHECK-NEXT: %[[G1:.*]] = tpc.silu %[[O0]]
// CHECK-NEXT: %[[S:.*]] = tpc.add %[[G0]], %[[G1]]
// CHECK-NEXT: %[[O1:.*]] = tpc.gelu %[[O0]]
// CHECK-NEXT: return %[[S]], %[[O1]]
func.func @train_step(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %zero = arith.constant dense<0.000000e+00> : tensor<8xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %r:2 = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %zero, %a = %x)
      -> (tensor<8xf32>, tensor<8xf32>) {
    %g = tpc.silu %a : tensor<8xf32>
    %o = tpc.gelu %a erf : tensor<8xf32>
    %s = tpc.add %acc, %g : tensor<8xf32>, tensor<8xf32>
    scf.yield %s, %o : tensor<8xf32>, tensor<8xf32>
  }
  return %r#0, %r#1 : tensor<8xf32>, tensor<8xf32>
}

// -----

func.func @train_step(%x: tensor<8xf32>, %n: index) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{tpc-unroll-train-step: the loop needs constant bounds and a positive constant step}}
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (tensor<8xf32>) {
    %s = tpc.silu %a : tensor<8xf32>
    scf.yield %s : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}

// -----

func.func private @external(tensor<8xf32>) -> tensor<8xf32>
func.func @train_step(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{tpc-unroll-train-step: @external is not a function with one block to inline}}
  %y = func.call @external(%x) : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = func.call @f(%x) : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}
// expected-error @+1 {{tpc-unroll-train-step: @train_step still has loops or calls after 64 rounds (a recursive call?)}}
func.func @train_step(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = func.call @f(%x) : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// expected-error @+1 {{tpc-unroll-train-step: no func.func @train_step with a body (run tpc-autodiff first)}}
module {
  func.func @forward() {
    return
  }
}
