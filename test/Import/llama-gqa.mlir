// Llama import: grouped-query attention (8 query heads, 4 key/value heads,
// head_dim 16 from the config), rotary embeddings on q and k, RMSNorm,
// SwiGLU, an untied head; then the variants of the config.
//
// RUN: tpc-import %S/Inputs/llama-gqa.json --seq 32 --batch 4 \
// RUN:   | FileCheck %s --implicit-check-not=tpc.repeat \
// RUN:       --implicit-check-not=dropout --implicit-check-not=tpc.layer_norm
// RUN: tpc-import %S/Inputs/llama-gqa.json --seq 32 --batch 4 --attention unfused \
// RUN:   | FileCheck %s --check-prefix=UNFUSED --implicit-check-not=tpc.attention
// RUN: tpc-import %S/Inputs/llama-head-dim.json --seq 32 --batch 4 \
// RUN:   | FileCheck %s --check-prefix=HEADDIM
// RUN: tpc-import %S/Inputs/llama-default-head-dim.json --seq 32 --batch 4 \
// RUN:   | FileCheck %s --check-prefix=DEFAULT
// RUN: tpc-import %S/Inputs/llama-tied.json --seq 16 --batch 2 \
// RUN:   | FileCheck %s --check-prefix=TIED --implicit-check-not=lm_head
// RUN: tpc-import %S/Inputs/llama-bias.json --seq 32 --batch 4 --num-layers 1 \
// RUN:   | FileCheck %s --check-prefix=BIAS

// CHECK-LABEL: module attributes {tpc.model = {batch = 4 : i64, ffn = 176 : i64, head_dim = 16 : i64, heads = 8 : i64, hidden = 64 : i64, kv_heads = 4 : i64, layers = 2 : i64, model_type = "llama", seq = 32 : i64, tie_word_embeddings = false, vocab = 256 : i64}, tpc.model_config = "{{.*}}"}
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[EMB:arg[0-9]+]]: tensor<256x64xf32> {tpc.param = "model.embed_tokens.weight"}
// CHECK-SAME: %[[NORM1:arg[0-9]+]]: tensor<64xf32> {tpc.param = "model.layers.0.input_layernorm.weight"}
// CHECK-SAME: %[[WQ:arg[0-9]+]]: tensor<8x16x64xf32> {tpc.hf_shape = array<i64: 128, 64>, tpc.param = "model.layers.0.self_attn.q_proj.weight"}
// CHECK-SAME: %[[WK:arg[0-9]+]]: tensor<4x16x64xf32> {tpc.hf_shape = array<i64: 64, 64>, tpc.param = "model.layers.0.self_attn.k_proj.weight"}
// CHECK-SAME: %[[WV:arg[0-9]+]]: tensor<4x16x64xf32> {tpc.hf_shape = array<i64: 64, 64>, tpc.param = "model.layers.0.self_attn.v_proj.weight"}
// CHECK-SAME: %[[WO:arg[0-9]+]]: tensor<64x128xf32> {tpc.param = "model.layers.0.self_attn.o_proj.weight"}
// CHECK-SAME: %[[NORM2:arg[0-9]+]]: tensor<64xf32> {tpc.param = "model.layers.0.post_attention_layernorm.weight"}
// CHECK-SAME: %[[WGATE:arg[0-9]+]]: tensor<176x64xf32> {tpc.param = "model.layers.0.mlp.gate_proj.weight"}
// CHECK-SAME: %[[WUP:arg[0-9]+]]: tensor<176x64xf32> {tpc.param = "model.layers.0.mlp.up_proj.weight"}
// CHECK-SAME: %[[WDOWN:arg[0-9]+]]: tensor<64x176xf32> {tpc.param = "model.layers.0.mlp.down_proj.weight"}
// CHECK-SAME: {tpc.param = "model.layers.1.input_layernorm.weight"}
// CHECK-SAME: tensor<8x16x64xf32> {tpc.hf_shape = array<i64: 128, 64>, tpc.param = "model.layers.1.self_attn.q_proj.weight"}
// CHECK-SAME: {tpc.param = "model.layers.1.mlp.down_proj.weight"}
// CHECK-SAME: %[[NORMF:arg[0-9]+]]: tensor<64xf32> {tpc.param = "model.norm.weight"}
// CHECK-SAME: %[[HEAD:arg[0-9]+]]: tensor<256x64xf32> {tpc.param = "lm_head.weight"}
// CHECK-SAME: %[[IDS:arg[0-9]+]]: tensor<4x32xi64> {tpc.input = "input_ids"}
// CHECK-SAME: %[[LABELS:arg[0-9]+]]: tensor<4x32xi64> {tpc.input = "labels"}
// CHECK-SAME: ) -> (tensor<f32> {tpc.output = "loss"}) {
// CHECK-NEXT: %[[X:.*]] = tpc.embedding %[[EMB]][%[[IDS]]] : tensor<256x64xf32>, tensor<4x32xi64>{{$}}
// CHECK-NEXT: %[[N:.*]] = tpc.rms_norm %[[X]], %[[NORM1]] eps 9.9999999999999995E-7 {tpc.layer = 0 : i64} : tensor<4x32x64xf32>, tensor<64xf32>
// CHECK-NEXT: %[[QP:.*]] = tpc.linear %[[N]], %[[WQ]] layout out_in {tpc.layer = 0 : i64} : tensor<4x32x64xf32>, tensor<8x16x64xf32>
// CHECK-NEXT: %[[QT:.*]] = tpc.transpose %[[QP]] [0, 2, 1, 3] {tpc.layer = 0 : i64} : tensor<4x32x8x16xf32>
// CHECK-NEXT: %[[Q:.*]] = tpc.rotary %[[QT]] theta 5.000000e+05 {tpc.layer = 0 : i64} : tensor<4x8x32x16xf32>
// CHECK-NEXT: %[[KP:.*]] = tpc.linear %[[N]], %[[WK]] layout out_in {tpc.layer = 0 : i64} : tensor<4x32x64xf32>, tensor<4x16x64xf32>
// CHECK-NEXT: %[[KT:.*]] = tpc.transpose %[[KP]] [0, 2, 1, 3] {tpc.layer = 0 : i64} : tensor<4x32x4x16xf32>
// CHECK-NEXT: %[[K:.*]] = tpc.rotary %[[KT]] theta 5.000000e+05 {tpc.layer = 0 : i64} : tensor<4x4x32x16xf32>
// CHECK-NEXT: %[[VP:.*]] = tpc.linear %[[N]], %[[WV]] layout out_in {tpc.layer = 0 : i64}
// CHECK-NEXT: %[[V:.*]] = tpc.transpose %[[VP]] [0, 2, 1, 3] {tpc.layer = 0 : i64} : tensor<4x32x4x16xf32>
// No rotary on v; fused grouped-query attention reads 4 kv heads for 8 query
// heads (scale 1/sqrt(16)).
// CHECK-NEXT: %[[O:.*]] = tpc.attention %[[Q]], %[[K]], %[[V]] causal scale 2.500000e-01 {tpc.layer = 0 : i64} : tensor<4x8x32x16xf32>, tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
// CHECK-NEXT: %[[OT:.*]] = tpc.transpose %[[O]] [0, 2, 1, 3] {tpc.layer = 0 : i64} : tensor<4x8x32x16xf32>
// CHECK-NEXT: %[[OR:.*]] = tpc.reshape %[[OT]] {tpc.layer = 0 : i64} : tensor<4x32x8x16xf32> -> tensor<4x32x128xf32>
// CHECK-NEXT: %[[OP:.*]] = tpc.linear %[[OR]], %[[WO]] layout out_in {tpc.layer = 0 : i64} : tensor<4x32x128xf32>, tensor<64x128xf32>
// CHECK-NEXT: %[[R:.*]] = tpc.add %[[X]], %[[OP]] {tpc.layer = 0 : i64}
// CHECK-NEXT: %[[N2:.*]] = tpc.rms_norm %[[R]], %[[NORM2]] eps 9.9999999999999995E-7 {tpc.layer = 0 : i64}
// SwiGLU: down(up(x) * silu(gate(x))), both projections first (the silu
// and the product adjacent; Hugging Face's silu(gate(x)) * up(x), the same
// floats).
// CHECK-NEXT: %[[GATE:.*]] = tpc.linear %[[N2]], %[[WGATE]] layout out_in {tpc.layer = 0 : i64} : tensor<4x32x64xf32>, tensor<176x64xf32>
// CHECK-NEXT: %[[UP:.*]] = tpc.linear %[[N2]], %[[WUP]] layout out_in {tpc.layer = 0 : i64} : tensor<4x32x64xf32>, tensor<176x64xf32>
// CHECK-NEXT: %[[ACT:.*]] = tpc.silu %[[GATE]] {tpc.layer = 0 : i64} : tensor<4x32x176xf32>
// CHECK-NEXT: %[[PROD:.*]] = tpc.mul %[[UP]], %[[ACT]] {tpc.layer = 0 : i64} : tensor<4x32x176xf32>, tensor<4x32x176xf32>
// CHECK-NEXT: %[[DOWN:.*]] = tpc.linear %[[PROD]], %[[WDOWN]] layout out_in {tpc.layer = 0 : i64} : tensor<4x32x176xf32>, tensor<64x176xf32>
// CHECK-NEXT: %[[X:.*]] = tpc.add %[[R]], %[[DOWN]] {tpc.layer = 0 : i64}
// CHECK-NEXT: tpc.rms_norm %[[X]], %{{.*}} {tpc.layer = 1 : i64}
// CHECK: tpc.attention {{.*}} {tpc.layer = 1 : i64} : tensor<4x8x32x16xf32>, tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
// CHECK: tpc.mul {{.*}} {tpc.layer = 1 : i64}
// CHECK-NEXT: tpc.linear {{.*}} {tpc.layer = 1 : i64}
// CHECK-NEXT: %[[X:.*]] = tpc.add {{.*}} {tpc.layer = 1 : i64}
// CHECK-NEXT: %[[NF:.*]] = tpc.rms_norm %[[X]], %[[NORMF]] eps 9.9999999999999995E-7 : tensor<4x32x64xf32>, tensor<64xf32>{{$}}
// CHECK-NEXT: %[[LOGITS:.*]] = tpc.linear %[[NF]], %[[HEAD]] layout out_in : tensor<4x32x64xf32>, tensor<256x64xf32>{{$}}
// CHECK-NEXT: %[[SUM:.*]], %[[COUNT:.*]] = tpc.cross_entropy %[[LOGITS]], %[[LABELS]] : tensor<4x32x256xf32>, tensor<4x32xi64>{{$}}
// CHECK-NEXT: %[[LOSS:.*]] = tpc.loss_mean %[[SUM]], %[[COUNT]]{{$}}
// CHECK-NEXT: return %[[LOSS]] : tensor<f32>

// Unfused: each kv head is repeated for its 2 query heads (dim 1) before the
// products.
// UNFUSED-LABEL: func.func @forward(
// UNFUSED: %[[Q:.*]] = tpc.rotary {{.*}} : tensor<4x8x32x16xf32>
// UNFUSED: %[[K:.*]] = tpc.rotary {{.*}} : tensor<4x4x32x16xf32>
// UNFUSED: %[[V:.*]] = tpc.transpose {{.*}} : tensor<4x32x4x16xf32>
// UNFUSED-NEXT: %[[K8:.*]] = tpc.repeat %[[K]] dim 1 times 2 {tpc.layer = 0 : i64} : tensor<4x4x32x16xf32>
// UNFUSED-NEXT: %[[V8:.*]] = tpc.repeat %[[V]] dim 1 times 2 {tpc.layer = 0 : i64} : tensor<4x4x32x16xf32>
// UNFUSED-NEXT: %[[S:.*]] = tpc.batch_matmul %[[Q]], %[[K8]] transpose_rhs scale 2.500000e-01 {tpc.layer = 0 : i64} : tensor<4x8x32x16xf32>, tensor<4x8x32x16xf32>
// UNFUSED-NEXT: %[[P:.*]] = tpc.softmax %[[S]] causal {tpc.layer = 0 : i64} : tensor<4x8x32x32xf32>
// UNFUSED-NEXT: tpc.batch_matmul %[[P]], %[[V8]] {tpc.layer = 0 : i64} : tensor<4x8x32x32xf32>, tensor<4x8x32x16xf32>
// UNFUSED: tpc.repeat {{.*}} dim 1 times 2 {tpc.layer = 1 : i64}
// UNFUSED-NEXT: tpc.repeat {{.*}} dim 1 times 2 {tpc.layer = 1 : i64}

// head_dim 32 given explicitly with hidden 64 and 4 heads: the projections
// are 4 x 32 = 128 wide, o_proj maps 128 back to 64.
// HEADDIM-LABEL: module attributes {tpc.model = {{{.*}}head_dim = 32 : i64, heads = 4 : i64, hidden = 64 : i64
// HEADDIM-LABEL: func.func @forward(
// HEADDIM-SAME: tensor<4x32x64xf32> {tpc.hf_shape = array<i64: 128, 64>, tpc.param = "model.layers.0.self_attn.q_proj.weight"}
// HEADDIM-SAME: tensor<4x32x64xf32> {tpc.hf_shape = array<i64: 128, 64>, tpc.param = "model.layers.0.self_attn.k_proj.weight"}
// HEADDIM-SAME: tensor<64x128xf32> {tpc.param = "model.layers.0.self_attn.o_proj.weight"}
// HEADDIM: tpc.rotary {{.*}} : tensor<4x4x32x32xf32>
// HEADDIM: tpc.attention {{.*}} causal scale 0.17677669529663687 {tpc.layer = 0 : i64} : tensor<4x4x32x32xf32>, tensor<4x4x32x32xf32>, tensor<4x4x32x32xf32>
// HEADDIM: tpc.reshape {{.*}} : tensor<4x32x4x32xf32> -> tensor<4x32x128xf32>

// Without head_dim and num_key_value_heads: head_dim = 64 / 4 and as many kv
// heads as heads.
// DEFAULT-LABEL: module attributes {tpc.model = {{{.*}}head_dim = 16 : i64, heads = 4 : i64, hidden = 64 : i64, kv_heads = 4 : i64
// DEFAULT-LABEL: func.func @forward(
// DEFAULT-SAME: tensor<4x16x64xf32> {tpc.hf_shape = array<i64: 64, 64>, tpc.param = "model.layers.0.self_attn.k_proj.weight"}
// DEFAULT: tpc.attention {{.*}} : tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>

// tie_word_embeddings: the head reads model.embed_tokens.weight, and there is
// no lm_head.weight; rope_theta defaults to 10000.
// TIED-LABEL: func.func @forward(
// TIED-SAME: %[[EMB:arg[0-9]+]]: tensor<256x64xf32> {tpc.param = "model.embed_tokens.weight"}
// TIED-SAME: {tpc.param = "model.norm.weight"}, %{{arg[0-9]+}}: tensor<2x16xi64> {tpc.input = "input_ids"}
// TIED: tpc.rotary {{.*}} theta 1.000000e+04 {tpc.layer = 0 : i64}
// TIED: tpc.rms_norm {{.*}} eps 1.000000e-05 {tpc.layer = 0 : i64}
// TIED: %[[NF:.*]] = tpc.rms_norm {{.*}} eps 1.000000e-05 : tensor<2x16x64xf32>
// TIED-NEXT: tpc.linear %[[NF]], %[[EMB]] layout out_in : tensor<2x16x64xf32>, tensor<256x64xf32>

// attention_bias: q/k/v biases viewed per head, and an o_proj bias;
// mlp_bias: biases on the three MLP projections; attention_dropout 0.1 in
// the fused op.
// BIAS-LABEL: func.func @forward(
// BIAS-SAME: %[[WQ:arg[0-9]+]]: tensor<4x16x64xf32> {{.*}}"model.layers.0.self_attn.q_proj.weight"}
// BIAS-SAME: %[[WK:arg[0-9]+]]: tensor<2x16x64xf32> {{.*}}"model.layers.0.self_attn.k_proj.weight"}
// BIAS-SAME: %[[WV:arg[0-9]+]]: tensor<2x16x64xf32> {{.*}}"model.layers.0.self_attn.v_proj.weight"}
// BIAS-SAME: %[[BQ:arg[0-9]+]]: tensor<4x16xf32> {tpc.hf_shape = array<i64: 64>, tpc.param = "model.layers.0.self_attn.q_proj.bias"}
// BIAS-SAME: %[[BK:arg[0-9]+]]: tensor<2x16xf32> {tpc.hf_shape = array<i64: 32>, tpc.param = "model.layers.0.self_attn.k_proj.bias"}
// BIAS-SAME: %[[BV:arg[0-9]+]]: tensor<2x16xf32> {tpc.hf_shape = array<i64: 32>, tpc.param = "model.layers.0.self_attn.v_proj.bias"}
// BIAS-SAME: %[[WO:arg[0-9]+]]: tensor<64x64xf32> {tpc.param = "model.layers.0.self_attn.o_proj.weight"}
// BIAS-SAME: %[[BO:arg[0-9]+]]: tensor<64xf32> {tpc.param = "model.layers.0.self_attn.o_proj.bias"}
// BIAS-SAME: %[[WGATE:arg[0-9]+]]: tensor<176x64xf32> {tpc.param = "model.layers.0.mlp.gate_proj.weight"}
// BIAS-SAME: %[[WUP:arg[0-9]+]]: tensor<176x64xf32> {tpc.param = "model.layers.0.mlp.up_proj.weight"}
// BIAS-SAME: %[[WDOWN:arg[0-9]+]]: tensor<64x176xf32> {tpc.param = "model.layers.0.mlp.down_proj.weight"}
// BIAS-SAME: %[[BGATE:arg[0-9]+]]: tensor<176xf32> {tpc.param = "model.layers.0.mlp.gate_proj.bias"}
// BIAS-SAME: %[[BUP:arg[0-9]+]]: tensor<176xf32> {tpc.param = "model.layers.0.mlp.up_proj.bias"}
// BIAS-SAME: %[[BDOWN:arg[0-9]+]]: tensor<64xf32> {tpc.param = "model.layers.0.mlp.down_proj.bias"}
// BIAS: tpc.linear %{{.*}}, %[[WQ]], %[[BQ]] layout out_in {{.*}} : tensor<4x32x64xf32>, tensor<4x16x64xf32>, tensor<4x16xf32>
// BIAS: tpc.linear %{{.*}}, %[[WK]], %[[BK]] layout out_in
// BIAS: tpc.linear %{{.*}}, %[[WV]], %[[BV]] layout out_in
// BIAS: tpc.attention {{.*}} causal scale 2.500000e-01 dropout 1.000000e-01 stream 0 {tpc.layer = 0 : i64}
// BIAS: tpc.linear %{{.*}}, %[[WO]], %[[BO]] layout out_in
// BIAS: tpc.linear %{{.*}}, %[[WGATE]], %[[BGATE]] layout out_in
// BIAS: tpc.linear %{{.*}}, %[[WUP]], %[[BUP]] layout out_in
// BIAS: tpc.linear %{{.*}}, %[[WDOWN]], %[[BDOWN]] layout out_in
