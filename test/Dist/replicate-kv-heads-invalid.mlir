// dist-replicate-kv-heads refuses what no layout can split, at the K or V
// projection, naming the numbers.
// RUN: tpc-opt %s --dist-replicate-kv-heads=tp=4 -split-input-file -verify-diagnostics
// RUN: not tpc-opt %s --dist-replicate-kv-heads=tp=0 -split-input-file \
// RUN:   --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: dist-replicate-kv-heads: tp 0 must be positive

func.func @kv_heads(%x: tensor<4x16x96xf32>, %wk: tensor<3x16x96xf32> {tpc.param = "k"},
                    %q: tensor<4x12x16x16xf32>) -> tensor<4x12x16x16xf32> {
  // expected-error @+1 {{cannot split over 4 tensor-parallel devices: the number of kv-heads (3) is not divisible by 4, nor does it divide 4 (fewer kv-heads than devices are replicated)}}
  %k = tpc.linear %x, %wk layout out_in : tensor<4x16x96xf32>, tensor<3x16x96xf32>
  %kt = tpc.transpose %k [0, 2, 1, 3] : tensor<4x16x3x16xf32>
  %kr = tpc.repeat %kt dim 1 times 4 : tensor<4x3x16x16xf32>
  %s = tpc.batch_matmul %q, %kr transpose_rhs : tensor<4x12x16x16xf32>, tensor<4x12x16x16xf32>
  return %s : tensor<4x12x16x16xf32>
}

// -----

func.func @heads(%x: tensor<4x16x96xf32>, %wk: tensor<2x16x96xf32> {tpc.param = "k"},
                 %q: tensor<4x6x16x16xf32>, %v: tensor<4x2x16x16xf32>) -> tensor<4x6x16x16xf32> {
  // expected-error @+1 {{cannot split over 4 tensor-parallel devices: the number of heads (6) is not divisible by 4, so its 2 kv-heads cannot be replicated 2 times}}
  %k = tpc.linear %x, %wk layout out_in : tensor<4x16x96xf32>, tensor<2x16x96xf32>
  %kt = tpc.transpose %k [0, 2, 1, 3] : tensor<4x16x2x16xf32>
  %o = tpc.attention %q, %kt, %v scale 2.500000e-01 : tensor<4x6x16x16xf32>, tensor<4x2x16x16xf32>, tensor<4x2x16x16xf32>
  return %o : tensor<4x6x16x16xf32>
}

// -----

func.func @not_a_matmul(%q: tensor<4x8x16x16xf32>, %k: tensor<4x2x16x16xf32>,
                        %v: tensor<4x2x16x16xf32>) -> tensor<4x8x16x16xf32> {
  // expected-error @+1 {{cannot replicate 2 kv-heads over 4 tensor-parallel devices: its keys or values are not computed by a tpc.linear}}
  %o = tpc.attention %q, %k, %v scale 2.500000e-01 : tensor<4x8x16x16xf32>, tensor<4x2x16x16xf32>, tensor<4x2x16x16xf32>
  return %o : tensor<4x8x16x16xf32>
}
