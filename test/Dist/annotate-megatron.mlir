// dist-annotate-megatron on GPT-2 and Llama as imported: which weights are
// split how, found from the dataflow (not the names).
// RUN: tpc-import %S/../../examples/configs/gpt2-tiny.json --batch 4 --seq 8 | sed '1a dist.mesh @mesh axes [dp = 2, tp = 2]' | tpc-opt --dist-annotate-megatron | FileCheck %s --check-prefix=GPT2
// RUN: tpc-import %S/../../examples/configs/llama-tiny.json --batch 4 --seq 8 | sed '1a dist.mesh @mesh axes [tp = 2]' | tpc-opt --dist-annotate-megatron=sequence-parallel=true | FileCheck %s --check-prefix=LLAMA
// RUN: tpc-import %S/../../examples/configs/llama-tiny.json --batch 4 --seq 8 --attention unfused | sed '1a dist.mesh @mesh axes [tp = 2]' | tpc-opt --dist-annotate-megatron=sequence-parallel=true | FileCheck %s --check-prefix=LLAMA
// RUN: tpc-import %S/../Transforms/Inputs/llama-gqa-h128.json --batch 4 --seq 8 | sed '1a dist.mesh @mesh axes [tp = 2]' | tpc-opt --dist-annotate-megatron | FileCheck %s --check-prefix=GQA
// RUN: tpc-import %S/../Transforms/Inputs/llama-gqa-h128.json --batch 4 --seq 8 --attention unfused | sed '1a dist.mesh @mesh axes [tp = 2]' | tpc-opt --dist-annotate-megatron | FileCheck %s --check-prefix=GQA
// RUN: tpc-import %S/../Transforms/Inputs/llama-gqa-h128.json --batch 4 --seq 8 | tpc-opt --dist-replicate-kv-heads=tp=4 | sed '1a dist.mesh @mesh axes [tp = 4]' | tpc-opt --dist-annotate-megatron | FileCheck %s --check-prefix=KV2
// RUN: tpc-import %S/../Transforms/Inputs/llama-gqa-h128.json --batch 4 --seq 8 --attention unfused | tpc-opt --dist-replicate-kv-heads=tp=4 | sed '1a dist.mesh @mesh axes [tp = 4]' | tpc-opt --dist-annotate-megatron | FileCheck %s --check-prefix=KV2
// RUN: sed 's/"num_key_value_heads": 2/"num_key_value_heads": 1/' %S/../Transforms/Inputs/llama-gqa-h128.json > %t.mqa.json
// RUN: tpc-import %t.mqa.json --batch 4 --seq 8 | tpc-opt --dist-replicate-kv-heads=tp=2 | sed '1a dist.mesh @mesh axes [tp = 2]' | tpc-opt --dist-annotate-megatron | FileCheck %s --check-prefix=MQA
// RUN: tpc-import %t.mqa.json --batch 4 --seq 8 --attention unfused | tpc-opt --dist-replicate-kv-heads=tp=2 | sed '1a dist.mesh @mesh axes [tp = 2]' | tpc-opt --dist-annotate-megatron | FileCheck %s --check-prefix=MQA

// GPT-2: c_attn [h, 3, heads, d] splits heads (dim 2), never the Q/K/V blocks;
// its bias [3, heads, d] dim 1; attention's c_proj splits its input rows;
// c_fc its output columns and bias; mlp.c_proj its input rows; the tied
// embedding / LM head wte its vocabulary. The position embedding, norms and
// the row-parallel biases stay whole; the inputs split the batch.
// GPT2-DAG: tensor<64x3x4x16xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[], [], [tp], []]>, {{.*}}tpc.param = "transformer.h.0.attn.c_attn.weight"}
// GPT2-DAG: tensor<3x4x16xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[], [tp], []]>, {{.*}}tpc.param = "transformer.h.0.attn.c_attn.bias"}
// GPT2-DAG: tensor<64x64xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[tp], []]>, tpc.param = "transformer.h.0.attn.c_proj.weight"}
// GPT2-DAG: tensor<64xf32> {tpc.param = "transformer.h.0.attn.c_proj.bias"}
// GPT2-DAG: tensor<64x256xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[], [tp]]>, tpc.param = "transformer.h.0.mlp.c_fc.weight"}
// GPT2-DAG: tensor<256xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[tp]]>, tpc.param = "transformer.h.0.mlp.c_fc.bias"}
// GPT2-DAG: tensor<256x64xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[tp], []]>, tpc.param = "transformer.h.0.mlp.c_proj.weight"}
// GPT2-DAG: tensor<256x64xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[tp], []]>, tpc.param = "transformer.wte.weight"}
// GPT2-DAG: tensor<128x64xf32> {tpc.param = "transformer.wpe.weight"}
// GPT2-DAG: tensor<4x8xi64> {dist.sharding = #dist.sharding<@mesh, {{\[}}[dp], []]>, tpc.input = "input_ids"}
// The row-parallel bias is added after the matmul (and its reduction).
// GPT2: %[[MM:.*]] = tpc.linear %{{.*}}, %arg6 layout in_out
// GPT2-NEXT: tpc.add %[[MM]], %arg7

// Llama (GQA 8/4): q_proj [heads, d, h] and k_proj / v_proj [kv, d, h]
// split their (kv-)heads, gate and up their rows (out_in), o_proj and
// down_proj their input columns. Sequence parallelism marks the embedding's
// and each row-parallel matmul's output as sequence shards.
// LLAMA-DAG: tensor<8x8x64xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[tp], [], []]>, {{.*}}tpc.param = "model.layers.0.self_attn.q_proj.weight"}
// LLAMA-DAG: tensor<4x8x64xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[tp], [], []]>, {{.*}}tpc.param = "model.layers.0.self_attn.k_proj.weight"}
// LLAMA-DAG: tensor<64x64xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[], [tp]]>, tpc.param = "model.layers.0.self_attn.o_proj.weight"}
// LLAMA-DAG: tensor<176x64xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[tp], []]>, tpc.param = "model.layers.0.mlp.gate_proj.weight"}
// LLAMA-DAG: tensor<176x64xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[tp], []]>, tpc.param = "model.layers.0.mlp.up_proj.weight"}
// LLAMA-DAG: tensor<64x176xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[], [tp]]>, tpc.param = "model.layers.0.mlp.down_proj.weight"}
// LLAMA: tpc.embedding
// LLAMA-NEXT: dist.shard %{{.*}} to <@mesh, {{\[}}[], [tp], []]>
// LLAMA: tpc.linear %{{.*}}, %arg5 layout out_in
// LLAMA-NEXT: dist.shard %{{.*}} to <@mesh, {{\[}}[], [tp], []]>

// Heads and kv-heads come from the model's structure, never from matching a
// dimension's size: with head_dim 16 != 8 heads (hidden 128, 2 kv-heads),
// fused and unfused (K and V repeated to the query heads), q_proj splits its
// 8 heads and k_proj / v_proj their 2 kv-heads; head_dim is never split.
// (llama-tiny's head_dim equals its 8 heads: its unfused k_proj [4, 8, 64]
// splits the kv-heads above too, not head_dim.)
// GQA-DAG: tensor<8x16x128xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[tp], [], []]>, {{.*}}tpc.param = "model.layers.0.self_attn.q_proj.weight"}
// GQA-DAG: tensor<2x16x128xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[tp], [], []]>, {{.*}}tpc.param = "model.layers.0.self_attn.k_proj.weight"}
// GQA-DAG: tensor<2x16x128xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[tp], [], []]>, {{.*}}tpc.param = "model.layers.0.self_attn.v_proj.weight"}
// GQA-DAG: tensor<128x128xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[], [tp]]>, tpc.param = "model.layers.0.self_attn.o_proj.weight"}

// Fewer kv-heads than devices (2 over tp = 4; multi-query attention's 1 over
// tp = 2), fused and unfused: dist-replicate-kv-heads repeated the K and V
// weights' kv-heads up to tp. The parameters stay whole (replicated); their
// repeat is split, so each device slices its kv-head's copy and computes
// only that kv-head; the query splits its 8 heads as always.
// KV2-DAG: tensor<8x16x128xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[tp], [], []]>, {{.*}}tpc.param = "model.layers.0.self_attn.q_proj.weight"}
// KV2-DAG: tensor<2x16x128xf32> {tpc.hf_shape = array<i64: 32, 128>, tpc.param = "model.layers.0.self_attn.k_proj.weight"}
// KV2-DAG: tensor<2x16x128xf32> {tpc.hf_shape = array<i64: 32, 128>, tpc.param = "model.layers.0.self_attn.v_proj.weight"}
// KV2-DAG: tensor<128x128xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[], [tp]]>, tpc.param = "model.layers.0.self_attn.o_proj.weight"}
// KV2: %[[K:.*]] = tpc.repeat %arg3 dim 0 times 2 {tpc.layer = 0 : i64} : tensor<2x16x128xf32>
// KV2-NEXT: %[[KS:.*]] = dist.shard %[[K]] to <@mesh, {{\[}}[tp], [], []]> : tensor<4x16x128xf32>
// KV2-NEXT: tpc.linear %{{.*}}, %[[KS]] layout out_in {tpc.layer = 0 : i64} : tensor<4x8x128xf32>, tensor<4x16x128xf32>
// KV2: %[[V:.*]] = tpc.repeat %arg4 dim 0 times 2 {tpc.layer = 0 : i64} : tensor<2x16x128xf32>
// KV2-NEXT: %[[VS:.*]] = dist.shard %[[V]] to <@mesh, {{\[}}[tp], [], []]> : tensor<4x16x128xf32>
// KV2-NEXT: tpc.linear %{{.*}}, %[[VS]] layout out_in {tpc.layer = 0 : i64} : tensor<4x8x128xf32>, tensor<4x16x128xf32>
// MQA-DAG: tensor<8x16x128xf32> {dist.sharding = #dist.sharding<@mesh, {{\[}}[tp], [], []]>, {{.*}}tpc.param = "model.layers.0.self_attn.q_proj.weight"}
// MQA-DAG: tensor<1x16x128xf32> {tpc.hf_shape = array<i64: 16, 128>, tpc.param = "model.layers.0.self_attn.k_proj.weight"}
// MQA-DAG: tensor<1x16x128xf32> {tpc.hf_shape = array<i64: 16, 128>, tpc.param = "model.layers.0.self_attn.v_proj.weight"}
// MQA: %[[K:.*]] = tpc.repeat %arg3 dim 0 times 2 {tpc.layer = 0 : i64} : tensor<1x16x128xf32>
// MQA-NEXT: %[[KS:.*]] = dist.shard %[[K]] to <@mesh, {{\[}}[tp], [], []]> : tensor<2x16x128xf32>
// MQA-NEXT: tpc.linear %{{.*}}, %[[KS]] layout out_in {tpc.layer = 0 : i64} : tensor<4x8x128xf32>, tensor<2x16x128xf32>
