// tpc-autodiff on GPT-2 (fused attention, tied embedding and head, one
// layer, one microbatch): the four functions and what crosses between them.
// RUN: tpc-import %S/../Import/Inputs/gpt2-tiny.json --seq 8 --batch 2 --num-layers 1 \
// RUN:   | tpc-opt --tpc-autodiff | FileCheck %s
// Sequence-major (as tpc-compile folds it): the output projection's input
// is the attention result's reshape, stashed for W; B reshapes it back for
// attention_grad instead of a second copy of the result in the stash.
// RUN: tpc-import %S/../Import/Inputs/gpt2-tiny.json --seq 8 --batch 2 --num-layers 1 \
// RUN:   | tpc-opt --tpc-fold-attention-transposes --tpc-autodiff \
// RUN:   | FileCheck %s --check-prefix=FOLD
// FOLD-LABEL: func.func @train_F(
// FOLD: %[[O:.*]], %[[LSE:.*]] = tpc.attention {{.*}} seq_major lse {{.*}}tpc.stash_layer = array<i64: -1, 0>
// FOLD: %[[R:.*]] = tpc.reshape %[[O]] {{.*}} -> tensor<2x8x64xf32>
// FOLD: return {{.*}}, %[[LSE]], %[[R]], {{.*}} :
// FOLD-LABEL: func.func @train_B(
// FOLD: %[[BACK:.*]] = tpc.reshape %arg{{[0-9]+}} {tpc.layer = 0 : i64} : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
// FOLD-NEXT: tpc.attention_grad {{.*}} saved(%[[BACK]], %{{.*}} : tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)

// @forward stays as it was.
// CHECK-LABEL: func.func @forward(
// CHECK: tpc.dropout
// CHECK: tpc.loss_mean

// F: the forward on the microbatch up to the cross-entropy's sum and count.
// Dropouts are split into a one-byte mask and its application, drawing the
// microbatch's block; the fused attention draws its block too.
// CHECK-LABEL: func.func @train_F(
// CHECK-SAME: %[[WTE:arg0]]: tensor<256x64xf32> {tpc.param = "transformer.wte.weight"}
// CHECK-SAME: %[[IDS:arg16]]: tensor<2x8xi64> {tpc.input = "input_ids"}
// CHECK-SAME: %[[LABELS:arg17]]: tensor<2x8xi64> {tpc.input = "labels"}
// CHECK-SAME: %[[MB:arg18]]: tensor<i64> {tpc.microbatch})
// The stash: embedding dropout mask (outside layers), then the layer's
// values (ln_1 input and output, q, k, v, the attention's result and its
// rows' log-sum-exps, attention-projection input and its mask, ln_2 input
// and output, fc output (GeLU input), GeLU output, MLP mask), then the
// final norm's input and output and the logits. A norm's input is B's
// alone: its parameter gradients are computed in B.
// CHECK-SAME: -> (tensor<f32>, tensor<i64>, tensor<2x8x64xi8> {tpc.stash = "B"},
// CHECK-SAME: tensor<2x8x64xf32> {tpc.layer = 0 : i64, tpc.stash = "B"}, tensor<2x8x64xf32> {tpc.layer = 0 : i64, tpc.stash = "W"},
// CHECK-SAME: tensor<2x4x8x16xf32> {tpc.layer = 0 : i64, tpc.stash = "B"}, tensor<2x4x8x16xf32> {tpc.layer = 0 : i64, tpc.stash = "B"}, tensor<2x4x8x16xf32> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<2x4x8x16xf32> {tpc.layer = 0 : i64, tpc.stash = "B"}, tensor<2x4x8xf32> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<2x8x64xf32> {tpc.layer = 0 : i64, tpc.stash = "W"}, tensor<2x8x64xi8> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<2x8x64xf32> {tpc.layer = 0 : i64, tpc.stash = "B"}, tensor<2x8x64xf32> {tpc.layer = 0 : i64, tpc.stash = "W"},
// CHECK-SAME: tensor<2x8x256xf32> {tpc.layer = 0 : i64, tpc.stash = "B"}, tensor<2x8x256xf32> {tpc.layer = 0 : i64, tpc.stash = "W"},
// CHECK-SAME: tensor<2x8x64xi8> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<2x8x64xf32> {tpc.stash = "B"}, tensor<2x8x64xf32> {tpc.stash = "W"}, tensor<2x8x256xf32> {tpc.stash = "B"})
// CHECK-NOT: tpc.dropout %
// CHECK: %[[EMB:.*]] = tpc.embedding %[[WTE]][%[[IDS]]] : tensor<256x64xf32>, tensor<2x8xi64>
// CHECK: %[[M0:.*]] = tpc.dropout_mask rate 5.000000e-02 stream 0 block %[[MB]] : tensor<2x8x64xi8>
// CHECK: %[[X0:.*]] = tpc.apply_mask %{{.*}}, %[[M0]] rate 5.000000e-02
// CHECK: %[[O:.*]], %[[LSE:.*]] = tpc.attention {{.*}} causal lse scale 2.500000e-01 dropout 1.000000e-01 stream 1 block %[[MB]] {tpc.layer = 0 : i64
// CHECK: %[[LOGITS:.*]] = tpc.linear %{{.*}}, %[[WTE]] layout out_in
// CHECK: %[[SUM:.*]], %[[COUNT:.*]] = tpc.cross_entropy %[[LOGITS]], %[[LABELS]]
// CHECK-NOT: tpc.loss_mean
// CHECK: return %[[SUM]], %[[COUNT]], %[[M0]], %[[X0]], {{.*}}, %[[LOGITS]] :

// B: input gradients in reverse order, from dloss_sum; of the weight
// gradients only the norms' (each right before its input gradient, reading
// the same dY and x).
// CHECK-LABEL: func.func @train_B(
// CHECK-SAME: %[[BWTE:arg0]]: tensor<256x64xf32> {tpc.param = "transformer.wte.weight"}
// CHECK-SAME: %[[BLABELS:arg17]]: tensor<2x8xi64> {tpc.input = "labels"}
// CHECK-SAME: %[[BMB:arg18]]: tensor<i64> {tpc.microbatch}, %[[DSUM:arg19]]: tensor<f32>,
// CHECK-SAME: %[[BM0:arg20]]: tensor<2x8x64xi8>
// CHECK-SAME: %[[BO:arg25]]: tensor<2x4x8x16xf32>, %[[BLSE:arg26]]: tensor<2x4x8xf32>
// CHECK-SAME: %[[BXF:arg31]]: tensor<2x8x64xf32>, %[[BLOGITS:arg32]]: tensor<2x8x256xf32>)
// CHECK-NOT: linear_weight_grad
// CHECK-NOT: embedding_grad
// CHECK: %[[DLOGITS:.*]] = tpc.cross_entropy_grad %[[BLOGITS]], %[[BLABELS]], %[[DSUM]] : tensor<2x8x256xf32>, tensor<2x8xi64>
// CHECK: %[[DXF:.*]] = tpc.linear_input_grad %[[DLOGITS]], %[[BWTE]] layout out_in
// CHECK-NEXT: %[[DWF:.*]], %[[DBF:.*]] = tpc.layer_norm_param_grad %[[DXF]], %[[BXF]] eps 1.000000e-05 : tensor<2x8x64xf32> -> tensor<64xf32>, tensor<64xf32>
// CHECK-NEXT: tpc.layer_norm_input_grad %[[DXF]], %[[BXF]], %arg14
// CHECK: tpc.gelu_grad {{.*}} tanh {tpc.layer = 0 : i64} : tensor<2x8x256xf32>
// CHECK: %{{.*}}, %[[DK:.*]], %[[DV:.*]] = tpc.attention_grad {{.*}} saved(%[[BO]], %[[BLSE]] : tensor<2x4x8x16xf32>, tensor<2x4x8xf32>) causal scale 2.500000e-01 dropout 1.000000e-01 stream 1 block %[[BMB]] {tpc.layer = 0 : i64}
// The q, k and v gradients meet in the fused projection's [.., 3, heads, d]
// gradient, each padded into its slot.
// CHECK: tpc.pad {{.*}} dim 2 offset 2 to 3 {tpc.layer = 0 : i64} : tensor<2x8x1x4x16xf32>
// CHECK: tpc.pad {{.*}} dim 2 offset 1 to 3 {tpc.layer = 0 : i64} : tensor<2x8x1x4x16xf32>
// CHECK: tpc.pad {{.*}} dim 2 offset 0 to 3 {tpc.layer = 0 : i64} : tensor<2x8x1x4x16xf32>
// CHECK: tpc.linear_input_grad %{{.*}}, %arg4 layout in_out {tpc.layer = 0 : i64} : tensor<2x8x3x4x16xf32>, tensor<64x3x4x16xf32>
// CHECK-NEXT: %[[DW1:.*]], %[[DB1:.*]] = tpc.layer_norm_param_grad {{.*}} {tpc.layer = 0 : i64}
// CHECK-NEXT: tpc.layer_norm_input_grad
// The residual stream's two gradients are summed before the embedding
// dropout's mask is applied.
// CHECK: %[[DRES:.*]] = tpc.add
// CHECK: %[[DEMB:.*]] = tpc.apply_mask %[[DRES]], %[[BM0]] rate 5.000000e-02
// CHECK-NOT: tpc.
// B returns each dY that W needs once (that of the embedding and of the
// position add are the same value), then the norms' parameter gradients.
// CHECK: return %[[DLOGITS]], {{.*}}, %[[DEMB]], %[[DWF]], %[[DBF]], {{.*}}, %[[DW1]], %[[DB1]] : tensor<2x8x256xf32>, tensor<2x8x64xf32>, tensor<2x8x256xf32>, tensor<2x8x64xf32>, tensor<2x8x3x4x16xf32>, tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>

// W: one f32 gradient per parameter from the stash and the dYs (the norms'
// as B computed them); it takes the input ids (embedding) but no parameter.
// CHECK-LABEL: func.func @train_W(
// CHECK-SAME: %[[WIDS:arg0]]: tensor<2x8xi64> {tpc.input = "input_ids"}
// CHECK-SAME: %[[WX:arg5]]: tensor<2x8x64xf32>, %[[WDLOGITS:arg6]]: tensor<2x8x256xf32>
// CHECK-SAME: %[[WDEMB:arg11]]: tensor<2x8x64xf32>, %[[WDWF:arg12]]: tensor<64xf32>, %[[WDBF:arg13]]: tensor<64xf32>
// CHECK-SAME: %[[WDW1:arg16]]: tensor<64xf32>, %[[WDB1:arg17]]: tensor<64xf32>)
// CHECK-SAME: -> (tensor<256x64xf32> {tpc.grad = "transformer.wte.weight"}, tensor<64x64xf32> {tpc.grad = "transformer.wpe.weight"}
// CHECK-NOT: tpc.linear_input_grad
// CHECK-NOT: tpc.attention_grad
// CHECK-NOT: param_grad
// CHECK: %[[DHEAD:.*]] = tpc.linear_weight_grad %[[WX]], %[[WDLOGITS]] layout out_in : tensor<2x8x64xf32>, tensor<2x8x256xf32> -> tensor<256x64xf32>
// CHECK: tpc.linear_weight_grad {{.*}} layout in_out {tpc.layer = 0 : i64} : tensor<2x8x64xf32>, tensor<2x8x3x4x16xf32> -> tensor<64x3x4x16xf32>
// CHECK: tpc.sum_to {{.*}} {tpc.layer = 0 : i64} : tensor<2x8x3x4x16xf32> -> tensor<3x4x16xf32>
// The position table: the sliced rows' gradient, padded to the table.
// CHECK: %[[DPOS:.*]] = tpc.sum_to %[[WDEMB]] : tensor<2x8x64xf32> -> tensor<8x64xf32>
// CHECK: %[[DWPE:.*]] = tpc.pad %[[DPOS]] dim 0 offset 0 to 64 : tensor<8x64xf32>
// The tied table: head and embedding gradients summed.
// CHECK: %[[DEMBT:.*]] = tpc.embedding_grad %[[WDEMB]][%[[WIDS]]] : tensor<2x8x64xf32>, tensor<2x8xi64> -> tensor<256x64xf32>
// CHECK: %[[DWTE:.*]] = tpc.add %[[DHEAD]], %[[DEMBT]] : tensor<256x64xf32>, tensor<256x64xf32>
// CHECK: return %[[DWTE]], %[[DWPE]], %[[WDW1]], %[[WDB1]], {{.*}}, %[[WDWF]], %[[WDBF]] :

// The driver: global target count, then an (un-unrolled) loop over the
// microbatches that slices the inputs, calls F, B and W and accumulates.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %arg0: tensor<256x64xf32> {tpc.param = "transformer.wte.weight"}
// CHECK-SAME: %[[SIDS:arg16]]: tensor<2x8xi64> {tpc.input = "input_ids"}, %[[SLABELS:arg17]]: tensor<2x8xi64> {tpc.input = "labels"})
// CHECK-SAME: -> (tensor<f32> {tpc.output = "loss"}, tensor<256x64xf32> {tpc.grad = "transformer.wte.weight"}
// CHECK-SAME: attributes {tpc.microbatches = 1 : i64}
// CHECK: %[[TOTAL:.*]] = tpc.count_targets %[[SLABELS]] : tensor<2x8xi64>
// CHECK: %[[DS:.*]] = tpc.inverse_count %[[TOTAL]]
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[CM:.*]] = arith.constant 1 : index
// CHECK: %[[LOOP:.*]]:17 = scf.for %[[I:.*]] = %[[C0]] to %[[CM]] step
// CHECK: tensor.extract_slice %[[SIDS]][%{{.*}}, 0] [2, 8] [1, 1] : tensor<2x8xi64> to tensor<2x8xi64>
// CHECK: %[[F:.*]]:20 = func.call @train_F(
// CHECK: %[[B:.*]]:12 = func.call @train_B({{.*}}, %[[DS]], %[[F]]#2,
// CHECK: %[[W:.*]]:16 = func.call @train_W(
// CHECK: tpc.add %{{.*}}, %[[F]]#0 : tensor<f32>, tensor<f32>
// CHECK: tpc.add %{{.*}}, %[[W]]#0 : tensor<256x64xf32>, tensor<256x64xf32>
// CHECK: scf.yield
// CHECK: %[[LOSS:.*]] = tpc.loss_mean %[[LOOP]]#0, %[[TOTAL]]
// CHECK: return %[[LOSS]], %[[LOOP]]#1, %[[LOOP]]#2,
