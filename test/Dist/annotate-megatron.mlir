// dist-annotate-megatron on GPT-2 and Llama as imported: which weights are
// split how, found from the dataflow (not the names).
// RUN: tpc-import %S/../../examples/configs/gpt2-tiny.json --batch 4 --seq 8 | sed '1a dist.mesh @mesh axes [dp = 2, tp = 2]' | tpc-opt --dist-annotate-megatron | FileCheck %s --check-prefix=GPT2
// RUN: tpc-import %S/../../examples/configs/llama-tiny.json --batch 4 --seq 8 | sed '1a dist.mesh @mesh axes [tp = 2]' | tpc-opt --dist-annotate-megatron=sequence-parallel=true | FileCheck %s --check-prefix=LLAMA
// RUN: tpc-import %S/../../examples/configs/llama-tiny.json --batch 4 --seq 8 --attention unfused | sed '1a dist.mesh @mesh axes [tp = 2]' | tpc-opt --dist-annotate-megatron=sequence-parallel=true | FileCheck %s --check-prefix=LLAMA
// RUN: tpc-import %S/../Transforms/Inputs/llama-gqa-h128.json --batch 4 --seq 8 | sed '1a dist.mesh @mesh axes [tp = 2]' | tpc-opt --dist-annotate-megatron | FileCheck %s --check-prefix=GQA
// RUN: tpc-import %S/../Transforms/Inputs/llama-gqa-h128.json --batch 4 --seq 8 --attention unfused | sed '1a dist.mesh @mesh axes [tp = 2]' | tpc-opt --dist-annotate-megatron | FileCheck %s --check-prefix=GQA

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
