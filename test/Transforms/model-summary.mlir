// RUN: tpc-opt %s --tpc-model-summary -o /dev/null | FileCheck %s
// RUN: tpc-opt %s --tpc-model-summary | FileCheck %s --check-prefix=IR
// RUN: not tpc-opt %s --pass-pipeline="builtin.module(tpc-model-summary{output=%t-missing/x/y})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADOUT
// RUN: echo "module {}" | not tpc-opt --tpc-model-summary -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOFWD

// CHECK:      model gpt2: 1 layers, hidden 8, heads 2 (kv 2), ffn 32, vocab 16
// CHECK-NEXT: batch 2, seq 4
// CHECK-NEXT: parameters: 3 tensors, 144 elements, 576 bytes
// CHECK-NEXT: ops: 7 in total, 2 in layers
// CHECK-DAG:  tpc.embedding        1
// CHECK-DAG:  tpc.gelu             1
// CHECK-DAG:  tpc.layer_norm       1
// CHECK:      layer 0              2 ops

// The summary leaves the IR unchanged.
// IR-LABEL: func.func @forward
// IR: tpc.cross_entropy

// BADOUT: error: tpc-model-summary:
// NOFWD: error: tpc-model-summary: no func.func @forward

module attributes {tpc.model = {batch = 2 : i64, ffn = 32 : i64, head_dim = 4 : i64, heads = 2 : i64, hidden = 8 : i64, kv_heads = 2 : i64, layers = 1 : i64, model_type = "gpt2", seq = 4 : i64, vocab = 16 : i64}} {
  func.func @forward(%wte: tensor<16x8xf32> {tpc.param = "transformer.wte.weight"},
                     %g: tensor<8xf32> {tpc.param = "transformer.h.0.ln_1.weight"},
                     %b: tensor<8xf32> {tpc.param = "transformer.h.0.ln_1.bias"},
                     %ids: tensor<2x4xi64> {tpc.input = "input_ids"},
                     %labels: tensor<2x4xi64> {tpc.input = "labels"}) -> tensor<f32> {
    %x = tpc.embedding %wte[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
    %n = tpc.layer_norm %x, %g, %b eps 1.0e-05 {tpc.layer = 0 : i64} : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
    %a = tpc.gelu %n tanh {tpc.layer = 0 : i64} : tensor<2x4x8xf32>
    %logits = tpc.linear %a, %wte layout out_in : tensor<2x4x8xf32>, tensor<16x8xf32>
    %sum, %count = tpc.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi64>
    %loss = tpc.loss_mean %sum, %count
    return %loss : tensor<f32>
  }
}
