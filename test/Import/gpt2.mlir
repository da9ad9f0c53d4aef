// GPT-2 import: parameters with their Hugging Face names and views, the tied
// LM head, layer tags, dropout streams and the loss.
//
// RUN: tpc-import %S/Inputs/gpt2-tiny.json --seq 32 --batch 4 \
// RUN:   | FileCheck %s --implicit-check-not=tpc.dropout \
// RUN:       --implicit-check-not=lm_head
// RUN: tpc-import %S/Inputs/gpt2-tiny.json --seq 32 --batch 4 --output logits \
// RUN:   | FileCheck %s --check-prefix=LOGITS

// Ops outside the layers (embeddings, ln_f, head, loss) are exactly these and
// carry no tpc.layer; every other op does, with its layer's index.
// RUN: tpc-import %S/Inputs/gpt2-tiny.json --seq 32 --batch 4 \
// RUN:   | grep " = tpc\." | grep -v "tpc.layer = " \
// RUN:   | FileCheck %s --check-prefix=UNTAGGED
// RUN: tpc-import %S/Inputs/gpt2-tiny.json --seq 32 --batch 4 \
// RUN:   | grep -c "{tpc.layer = 0 : i64}" | FileCheck %s --check-prefix=OPS
// RUN: tpc-import %S/Inputs/gpt2-tiny.json --seq 32 --batch 4 \
// RUN:   | grep -c "{tpc.layer = 1 : i64}" | FileCheck %s --check-prefix=OPS

// RUN: tpc-import %S/Inputs/gpt2-untied.json --seq 16 --batch 2 \
// RUN:   | FileCheck %s --check-prefix=UNTIED
// RUN: tpc-import %S/Inputs/gpt2-tiny.json \
// RUN:   | FileCheck %s --check-prefix=DEFAULTS
// RUN: tpc-import %S/Inputs/gpt2-tiny.json --num-layers 1 --seq 8 \
// RUN:   | FileCheck %s --check-prefix=ONE-LAYER --implicit-check-not=transformer.h.1. \
// RUN:       --implicit-check-not="tpc.layer = 1"

// The config's sizes, --seq and --batch are recorded on the module.
// CHECK-LABEL: module attributes {tpc.model = {batch = 4 : i64, ffn = 256 : i64, head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, kv_heads = 4 : i64, layers = 2 : i64, model_type = "gpt2", seq = 32 : i64, tie_word_embeddings = true, vocab = 256 : i64}, tpc.model_config = "{{.*}}"}

// Parameters, in Hugging Face order. c_attn is viewed as [in, 3, heads,
// head_dim]; n_inner null means an FFN of 4 * 64 = 256.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[WTE:arg[0-9]+]]: tensor<256x64xf32> {tpc.param = "transformer.wte.weight"}
// CHECK-SAME: %[[WPE:arg[0-9]+]]: tensor<64x64xf32> {tpc.param = "transformer.wpe.weight"}
// CHECK-SAME: %[[LN1W0:arg[0-9]+]]: tensor<64xf32> {tpc.param = "transformer.h.0.ln_1.weight"}
// CHECK-SAME: %[[LN1B0:arg[0-9]+]]: tensor<64xf32> {tpc.param = "transformer.h.0.ln_1.bias"}
// CHECK-SAME: %[[ATTNW0:arg[0-9]+]]: tensor<64x3x4x16xf32> {tpc.hf_shape = array<i64: 64, 192>, tpc.param = "transformer.h.0.attn.c_attn.weight"}
// CHECK-SAME: %[[ATTNB0:arg[0-9]+]]: tensor<3x4x16xf32> {tpc.hf_shape = array<i64: 192>, tpc.param = "transformer.h.0.attn.c_attn.bias"}
// CHECK-SAME: %[[PROJW0:arg[0-9]+]]: tensor<64x64xf32> {tpc.param = "transformer.h.0.attn.c_proj.weight"}
// CHECK-SAME: %[[PROJB0:arg[0-9]+]]: tensor<64xf32> {tpc.param = "transformer.h.0.attn.c_proj.bias"}
// CHECK-SAME: tensor<64xf32> {tpc.param = "transformer.h.0.ln_2.weight"}
// CHECK-SAME: tensor<64xf32> {tpc.param = "transformer.h.0.ln_2.bias"}
// CHECK-SAME: %[[FCW0:arg[0-9]+]]: tensor<64x256xf32> {tpc.param = "transformer.h.0.mlp.c_fc.weight"}
// CHECK-SAME: %[[FCB0:arg[0-9]+]]: tensor<256xf32> {tpc.param = "transformer.h.0.mlp.c_fc.bias"}
// CHECK-SAME: %[[MLPW0:arg[0-9]+]]: tensor<256x64xf32> {tpc.param = "transformer.h.0.mlp.c_proj.weight"}
// CHECK-SAME: %[[MLPB0:arg[0-9]+]]: tensor<64xf32> {tpc.param = "transformer.h.0.mlp.c_proj.bias"}
// CHECK-SAME: tensor<64xf32> {tpc.param = "transformer.h.1.ln_1.weight"}
// CHECK-SAME: tensor<64xf32> {tpc.param = "transformer.h.1.ln_1.bias"}
// CHECK-SAME: tensor<64x3x4x16xf32> {tpc.hf_shape = array<i64: 64, 192>, tpc.param = "transformer.h.1.attn.c_attn.weight"}
// CHECK-SAME: tensor<3x4x16xf32> {tpc.hf_shape = array<i64: 192>, tpc.param = "transformer.h.1.attn.c_attn.bias"}
// CHECK-SAME: tensor<64x64xf32> {tpc.param = "transformer.h.1.attn.c_proj.weight"}
// CHECK-SAME: tensor<64xf32> {tpc.param = "transformer.h.1.attn.c_proj.bias"}
// CHECK-SAME: tensor<64xf32> {tpc.param = "transformer.h.1.ln_2.weight"}
// CHECK-SAME: tensor<64xf32> {tpc.param = "transformer.h.1.ln_2.bias"}
// CHECK-SAME: tensor<64x256xf32> {tpc.param = "transformer.h.1.mlp.c_fc.weight"}
// CHECK-SAME: tensor<256xf32> {tpc.param = "transformer.h.1.mlp.c_fc.bias"}
// CHECK-SAME: tensor<256x64xf32> {tpc.param = "transformer.h.1.mlp.c_proj.weight"}
// CHECK-SAME: tensor<64xf32> {tpc.param = "transformer.h.1.mlp.c_proj.bias"}
// CHECK-SAME: %[[LNFW:arg[0-9]+]]: tensor<64xf32> {tpc.param = "transformer.ln_f.weight"}
// CHECK-SAME: %[[LNFB:arg[0-9]+]]: tensor<64xf32> {tpc.param = "transformer.ln_f.bias"}
// CHECK-SAME: %[[IDS:arg[0-9]+]]: tensor<4x32xi64> {tpc.input = "input_ids"}
// CHECK-SAME: %[[LABELS:arg[0-9]+]]: tensor<4x32xi64> {tpc.input = "labels"}
// CHECK-SAME: ) -> (tensor<f32> {tpc.output = "loss"}) {

// Embeddings: wpe is sliced to the 32 positions used; embd_pdrop is 0.05.
// CHECK-NEXT: %[[TOK:.*]] = tpc.embedding %[[WTE]][%[[IDS]]] : tensor<256x64xf32>, tensor<4x32xi64>{{$}}
// CHECK-NEXT: %[[POS:.*]] = tpc.slice %[[WPE]] dim 0 [0 : 32] : tensor<64x64xf32>{{$}}
// CHECK-NEXT: %[[SUM:.*]] = tpc.add %[[TOK]], %[[POS]] : tensor<4x32x64xf32>, tensor<32x64xf32>{{$}}
// CHECK-NEXT: %[[X:.*]] = tpc.dropout %[[SUM]] rate 5.000000e-02 stream 0 : tensor<4x32x64xf32>{{$}}

// Layer 0: attention (attn_pdrop 0.1 inside the fused op), residual dropout
// (resid_pdrop 0.15) after attention and after the MLP.
// CHECK-NEXT: %[[LN1:.*]] = tpc.layer_norm %[[X]], %[[LN1W0]], %[[LN1B0]] eps 1.000000e-05 {tpc.layer = 0 : i64}
// CHECK-NEXT: %[[QKV:.*]] = tpc.linear %[[LN1]], %[[ATTNW0]], %[[ATTNB0]] layout in_out {tpc.layer = 0 : i64} : tensor<4x32x64xf32>, tensor<64x3x4x16xf32>, tensor<3x4x16xf32>
// CHECK-NEXT: tpc.slice %[[QKV]] dim 2 [0 : 1] {tpc.layer = 0 : i64} : tensor<4x32x3x4x16xf32>
// CHECK-NEXT: tpc.reshape {{.*}} {tpc.layer = 0 : i64} : tensor<4x32x1x4x16xf32> -> tensor<4x32x4x16xf32>
// CHECK-NEXT: %[[Q:.*]] = tpc.transpose {{.*}} [0, 2, 1, 3] {tpc.layer = 0 : i64} : tensor<4x32x4x16xf32>
// CHECK-NEXT: tpc.slice %[[QKV]] dim 2 [1 : 1] {tpc.layer = 0 : i64}
// CHECK-NEXT: tpc.reshape
// CHECK-NEXT: %[[K:.*]] = tpc.transpose
// CHECK-NEXT: tpc.slice %[[QKV]] dim 2 [2 : 1] {tpc.layer = 0 : i64}
// CHECK-NEXT: tpc.reshape
// CHECK-NEXT: %[[V:.*]] = tpc.transpose
// CHECK-NEXT: %[[O:.*]] = tpc.attention %[[Q]], %[[K]], %[[V]] causal scale 2.500000e-01 dropout 1.000000e-01 stream 1 {tpc.layer = 0 : i64} : tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
// CHECK-NEXT: tpc.transpose %[[O]] [0, 2, 1, 3] {tpc.layer = 0 : i64}
// CHECK-NEXT: %[[MERGED:.*]] = tpc.reshape {{.*}} {tpc.layer = 0 : i64} : tensor<4x32x4x16xf32> -> tensor<4x32x64xf32>
// CHECK-NEXT: %[[PROJ:.*]] = tpc.linear %[[MERGED]], %[[PROJW0]], %[[PROJB0]] layout in_out {tpc.layer = 0 : i64}
// CHECK-NEXT: %[[DROP:.*]] = tpc.dropout %[[PROJ]] rate 1.500000e-01 stream 2 {tpc.layer = 0 : i64}
// CHECK-NEXT: %[[RES:.*]] = tpc.add %[[X]], %[[DROP]] {tpc.layer = 0 : i64}
// CHECK-NEXT: %[[LN2:.*]] = tpc.layer_norm %[[RES]], {{.*}} {tpc.layer = 0 : i64}
// CHECK-NEXT: %[[FC:.*]] = tpc.linear %[[LN2]], %[[FCW0]], %[[FCB0]] layout in_out {tpc.layer = 0 : i64} : tensor<4x32x64xf32>, tensor<64x256xf32>, tensor<256xf32>
// CHECK-NEXT: %[[ACT:.*]] = tpc.gelu %[[FC]] tanh {tpc.layer = 0 : i64} : tensor<4x32x256xf32>
// CHECK-NEXT: %[[MLP:.*]] = tpc.linear %[[ACT]], %[[MLPW0]], %[[MLPB0]] layout in_out {tpc.layer = 0 : i64}
// CHECK-NEXT: %[[DROP:.*]] = tpc.dropout %[[MLP]] rate 1.500000e-01 stream 3 {tpc.layer = 0 : i64}
// CHECK-NEXT: %[[X:.*]] = tpc.add %[[RES]], %[[DROP]] {tpc.layer = 0 : i64}

// Layer 1: the same with its own tag and fresh streams.
// CHECK-NEXT: tpc.layer_norm %[[X]], {{.*}} {tpc.layer = 1 : i64}
// CHECK: tpc.attention {{.*}} causal scale 2.500000e-01 dropout 1.000000e-01 stream 4 {tpc.layer = 1 : i64}
// CHECK: tpc.dropout {{.*}} rate 1.500000e-01 stream 5 {tpc.layer = 1 : i64}
// CHECK: tpc.gelu {{.*}} tanh {tpc.layer = 1 : i64}
// CHECK: tpc.dropout {{.*}} rate 1.500000e-01 stream 6 {tpc.layer = 1 : i64}
// CHECK-NEXT: %[[X:.*]] = tpc.add {{.*}} {tpc.layer = 1 : i64}

// ln_f, then the head tied to wte (no lm_head.weight: the implicit
// check-not), then the loss.
// CHECK-NEXT: %[[LNF:.*]] = tpc.layer_norm %[[X]], %[[LNFW]], %[[LNFB]] eps 1.000000e-05 : tensor<4x32x64xf32>, tensor<64xf32>, tensor<64xf32>{{$}}
// CHECK-NEXT: %[[HEAD:.*]] = tpc.linear %[[LNF]], %[[WTE]] layout out_in : tensor<4x32x64xf32>, tensor<256x64xf32>{{$}}
// CHECK-NEXT: %[[LSUM:.*]], %[[COUNT:.*]] = tpc.cross_entropy %[[HEAD]], %[[LABELS]] : tensor<4x32x256xf32>, tensor<4x32xi64>{{$}}
// CHECK-NEXT: %[[LOSS:.*]] = tpc.loss_mean %[[LSUM]], %[[COUNT]]{{$}}
// CHECK-NEXT: return %[[LOSS]] : tensor<f32>

// --output logits returns the loss and the logits.
// LOGITS-LABEL: func.func @forward(
// LOGITS-SAME: ) -> (tensor<f32> {tpc.output = "loss"}, tensor<4x32x256xf32> {tpc.output = "logits"}) {
// LOGITS: %[[HEAD:.*]] = tpc.linear %{{.*}}, %arg0 layout out_in
// LOGITS-NEXT: %[[LSUM:.*]], %[[COUNT:.*]] = tpc.cross_entropy %[[HEAD]]
// LOGITS-NEXT: %[[LOSS:.*]] = tpc.loss_mean %[[LSUM]], %[[COUNT]]
// LOGITS-NEXT: return %[[LOSS]], %[[HEAD]] : tensor<f32>, tensor<4x32x256xf32>

// UNTAGGED: tpc.embedding
// UNTAGGED-NEXT: tpc.slice
// UNTAGGED-NEXT: tpc.add
// UNTAGGED-NEXT: tpc.dropout
// UNTAGGED-NEXT: tpc.layer_norm
// UNTAGGED-NEXT: tpc.linear
// UNTAGGED-NEXT: tpc.cross_entropy
// UNTAGGED-NEXT: tpc.loss_mean
// UNTAGGED-NOT: tpc.

// 23 ops per layer: ln_1, c_attn, 3 x (slice, reshape, transpose), attention,
// transpose, reshape, c_proj, dropout, add, ln_2, c_fc, gelu, c_proj,
// dropout, add.
// OPS: {{^}}23{{$}}

// tie_word_embeddings false: a separate lm_head.weight reads the head;
// activation_function gelu is the exact (erf) form; n_inner 128.
// UNTIED-LABEL: module attributes {tpc.model = {{{.*}}ffn = 128 : i64{{.*}}tie_word_embeddings = false
// UNTIED-LABEL: func.func @forward(
// UNTIED-SAME: tensor<64x128xf32> {tpc.param = "transformer.h.0.mlp.c_fc.weight"}
// UNTIED-SAME: {tpc.param = "transformer.ln_f.bias"}, %[[HEAD:arg[0-9]+]]: tensor<256x64xf32> {tpc.param = "lm_head.weight"}
// UNTIED: tpc.gelu %{{.*}} erf {tpc.layer = 0 : i64} : tensor<2x16x128xf32>
// UNTIED: tpc.linear %{{.*}}, %[[HEAD]] layout out_in : tensor<2x16x64xf32>, tensor<256x64xf32>

// Without --batch and --seq: batch 1 and all n_positions positions.
// DEFAULTS-LABEL: module attributes {tpc.model = {batch = 1 : i64, {{.*}}seq = 64 : i64
// DEFAULTS: tpc.slice %{{.*}} dim 0 [0 : 64] : tensor<64x64xf32>
// DEFAULTS: tpc.cross_entropy {{.*}} : tensor<1x64x256xf32>, tensor<1x64xi64>

// --num-layers 1 keeps the first layer only.
// ONE-LAYER-LABEL: module attributes {tpc.model = {{{.*}}layers = 1 : i64{{.*}}tpc.model_config = "{{.*}}\22n_layer\22:1,
// ONE-LAYER: {tpc.param = "transformer.h.0.mlp.c_proj.bias"}, %{{.*}}: tensor<64xf32> {tpc.param = "transformer.ln_f.weight"}
// ONE-LAYER: tpc.dropout {{.*}} stream 3 {tpc.layer = 0 : i64}
// ONE-LAYER: return
