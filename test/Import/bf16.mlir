// --dtype bf16: parameters and activations are bf16; token ids and labels
// stay i64 and the loss stays f32 (the only f32 in the module).
//
// RUN: tpc-import %S/Inputs/gpt2-tiny.json --seq 32 --batch 4 --dtype bf16 \
// RUN:   | FileCheck %s --check-prefix=GPT2 --implicit-check-not=f32
// RUN: tpc-import %S/Inputs/llama-gqa.json --seq 8 --batch 2 --dtype bf16 --output logits \
// RUN:   | FileCheck %s --check-prefix=LLAMA --implicit-check-not=f32

// GPT2-LABEL: func.func @forward(
// GPT2-SAME: tensor<256x64xbf16> {tpc.param = "transformer.wte.weight"}
// GPT2-SAME: tensor<64x64xbf16> {tpc.param = "transformer.wpe.weight"}
// GPT2-SAME: tensor<64xbf16> {tpc.param = "transformer.h.0.ln_1.weight"}
// GPT2-SAME: tensor<64x3x4x16xbf16> {tpc.hf_shape = array<i64: 64, 192>, tpc.param = "transformer.h.0.attn.c_attn.weight"}
// GPT2-SAME: tensor<64xbf16> {tpc.param = "transformer.ln_f.bias"}
// GPT2-SAME: tensor<4x32xi64> {tpc.input = "input_ids"}
// GPT2-SAME: tensor<4x32xi64> {tpc.input = "labels"}) -> (tensor<f32> {tpc.output = "loss"}) {
// GPT2-NEXT: tpc.embedding {{.*}} : tensor<256x64xbf16>, tensor<4x32xi64>
// GPT2: tpc.dropout {{.*}} : tensor<4x32x64xbf16>
// GPT2: tpc.layer_norm {{.*}} : tensor<4x32x64xbf16>, tensor<64xbf16>, tensor<64xbf16>
// GPT2: tpc.attention {{.*}} : tensor<4x4x32x16xbf16>, tensor<4x4x32x16xbf16>, tensor<4x4x32x16xbf16>
// GPT2: tpc.gelu {{.*}} : tensor<4x32x256xbf16>
// GPT2: %[[LOGITS:.*]] = tpc.linear {{.*}} layout out_in : tensor<4x32x64xbf16>, tensor<256x64xbf16>
// GPT2-NEXT: %[[SUM:.*]], %[[COUNT:.*]] = tpc.cross_entropy %[[LOGITS]], %{{.*}} : tensor<4x32x256xbf16>, tensor<4x32xi64>
// GPT2-NEXT: %[[LOSS:.*]] = tpc.loss_mean %[[SUM]], %[[COUNT]]
// GPT2-NEXT: return %[[LOSS]] : tensor<f32>

// LLAMA-LABEL: func.func @forward(
// LLAMA-SAME: tensor<256x64xbf16> {tpc.param = "model.embed_tokens.weight"}
// LLAMA-SAME: tensor<8x16x64xbf16> {tpc.hf_shape = array<i64: 128, 64>, tpc.param = "model.layers.0.self_attn.q_proj.weight"}
// LLAMA-SAME: tensor<256x64xbf16> {tpc.param = "lm_head.weight"}
// LLAMA-SAME: tensor<2x8xi64> {tpc.input = "input_ids"}
// LLAMA-SAME: tensor<2x8xi64> {tpc.input = "labels"}) -> (tensor<f32> {tpc.output = "loss"}, tensor<2x8x256xbf16> {tpc.output = "logits"}) {
// LLAMA: tpc.rms_norm {{.*}} : tensor<2x8x64xbf16>, tensor<64xbf16>
// LLAMA: tpc.rotary {{.*}} : tensor<2x8x8x16xbf16>
// LLAMA: tpc.attention {{.*}} : tensor<2x8x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>
// LLAMA: tpc.silu {{.*}} : tensor<2x8x176xbf16>
// LLAMA: %[[LOGITS:.*]] = tpc.linear {{.*}} : tensor<2x8x64xbf16>, tensor<256x64xbf16>
// LLAMA-NEXT: %[[SUM:.*]], %[[COUNT:.*]] = tpc.cross_entropy %[[LOGITS]], %{{.*}} : tensor<2x8x256xbf16>, tensor<2x8xi64>
// LLAMA-NEXT: %[[LOSS:.*]] = tpc.loss_mean %[[SUM]], %[[COUNT]]
// LLAMA-NEXT: return %[[LOSS]], %[[LOGITS]] : tensor<f32>, tensor<2x8x256xbf16>
