// Unfused GPT-2 (bf16, dropout 0.1). The stash of one layer: exactly the
// values of Korthikanti et al. 2022, Table 2 row 1, each once, tagged with
// the layer. Byte counts: stash-report.test.
// RUN: tpc-import %S/../Import/Inputs/gpt2-tiny.json --seq 32 --batch 4 --num-layers 1 \
// RUN:     --attention unfused --dropout 0.1 --dtype bf16 \
// RUN:   | tpc-opt --tpc-autodiff | FileCheck %s

// The 15 values of the layer carry its tag and say who reads them: the
// layer-norm inputs B (input and parameter gradients: the norms' parameter
// gradients are computed in B), the norm outputs and linear inputs W only,
// the rest B only.
// CHECK-LABEL: func.func @train_F(
// CHECK-SAME: -> (tensor<f32>, tensor<i64>, tensor<4x32x64xi8> {tpc.stash = "B"},
// CHECK-SAME: tensor<4x32x64xbf16> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x32x64xbf16> {tpc.layer = 0 : i64, tpc.stash = "W"},
// CHECK-SAME: tensor<4x4x32x16xbf16> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x4x32x16xbf16> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x4x32x16xbf16> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x4x32x32xbf16> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x4x32x32xi8> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x4x32x32xbf16> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x32x64xbf16> {tpc.layer = 0 : i64, tpc.stash = "W"},
// CHECK-SAME: tensor<4x32x64xi8> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x32x64xbf16> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x32x64xbf16> {tpc.layer = 0 : i64, tpc.stash = "W"},
// CHECK-SAME: tensor<4x32x256xbf16> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x32x256xbf16> {tpc.layer = 0 : i64, tpc.stash = "W"},
// CHECK-SAME: tensor<4x32x64xi8> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x32x64xbf16> {tpc.stash = "B"}, tensor<4x32x64xbf16> {tpc.stash = "W"}, tensor<4x32x256xbf16> {tpc.stash = "B"})
// CHECK: %[[M0:.*]] = tpc.dropout_mask rate 1.000000e-01 stream 0
// CHECK: %[[LN1IN:.*]] = tpc.apply_mask %{{.*}}, %[[M0]]
// CHECK: %[[LN1OUT:.*]] = tpc.layer_norm %[[LN1IN]]
// CHECK: tpc.linear %[[LN1OUT]]
// CHECK: %[[Q:.*]] = tpc.transpose
// CHECK: %[[K:.*]] = tpc.transpose
// CHECK: %[[V:.*]] = tpc.transpose
// CHECK: tpc.batch_matmul %[[Q]], %[[K]] transpose_rhs
// CHECK: %[[P:.*]] = tpc.softmax
// CHECK: %[[PMASK:.*]] = tpc.dropout_mask rate 1.000000e-01 stream 1 {{.*}} : tensor<4x4x32x32xi8>
// CHECK: %[[PDROP:.*]] = tpc.apply_mask %[[P]], %[[PMASK]]
// CHECK: tpc.batch_matmul %[[PDROP]], %[[V]]
// CHECK: %[[PROJIN:.*]] = tpc.reshape
// CHECK: tpc.linear %[[PROJIN]]
// CHECK: %[[M2:.*]] = tpc.dropout_mask rate 1.000000e-01 stream 2
// CHECK: %[[LN2IN:.*]] = tpc.add %[[LN1IN]]
// CHECK: %[[LN2OUT:.*]] = tpc.layer_norm %[[LN2IN]]
// CHECK: %[[GELUIN:.*]] = tpc.linear %[[LN2OUT]]
// CHECK: %[[GELUOUT:.*]] = tpc.gelu %[[GELUIN]]
// CHECK: tpc.linear %[[GELUOUT]]
// CHECK: %[[M3:.*]] = tpc.dropout_mask rate 1.000000e-01 stream 3
// CHECK: %[[FINALIN:.*]] = tpc.add %[[LN2IN]]
// CHECK: %[[FINALOUT:.*]] = tpc.layer_norm %[[FINALIN]]
// CHECK: %[[LOGITS:.*]] = tpc.linear %[[FINALOUT]]
// CHECK: %[[SUM:.*]], %[[COUNT:.*]] = tpc.cross_entropy %[[LOGITS]]
// CHECK: return %[[SUM]], %[[COUNT]], %[[M0]],
// CHECK-SAME: %[[LN1IN]], %[[LN1OUT]], %[[Q]], %[[K]], %[[V]], %[[P]], %[[PMASK]], %[[PDROP]], %[[PROJIN]], %[[M2]], %[[LN2IN]], %[[LN2OUT]], %[[GELUIN]], %[[GELUOUT]], %[[M3]],
// CHECK-SAME: %[[FINALIN]], %[[FINALOUT]], %[[LOGITS]] :
// The layer's 15 values, 2 bytes an activation and 1 a mask element.
// CHECK-SAME: tensor<f32>, tensor<i64>, tensor<4x32x64xi8>,
// CHECK-SAME: tensor<4x32x64xbf16>, tensor<4x32x64xbf16>, tensor<4x4x32x16xbf16>, tensor<4x4x32x16xbf16>, tensor<4x4x32x16xbf16>, tensor<4x4x32x32xbf16>, tensor<4x4x32x32xi8>, tensor<4x4x32x32xbf16>, tensor<4x32x64xbf16>, tensor<4x32x64xi8>, tensor<4x32x64xbf16>, tensor<4x32x64xbf16>, tensor<4x32x256xbf16>, tensor<4x32x256xbf16>, tensor<4x32x64xi8>,
// CHECK-SAME: tensor<4x32x64xbf16>, tensor<4x32x64xbf16>, tensor<4x32x256xbf16>

// B reads the B-tagged stash values (in F's order after dloss_sum): the
// attention chain runs backwards through the stashed V, P's dropout mask,
// P itself, Q and K, with the scale folded into the products.
// CHECK-LABEL: func.func @train_B(
// CHECK-SAME: %[[DSUM:arg19]]: tensor<f32>, %[[BM0:arg20]]: tensor<4x32x64xi8>, %[[BLN1IN:arg21]]: tensor<4x32x64xbf16>,
// CHECK-SAME: %[[BQ:arg22]]: tensor<4x4x32x16xbf16>, %[[BK:arg23]]: tensor<4x4x32x16xbf16>, %[[BV:arg24]]: tensor<4x4x32x16xbf16>,
// CHECK-SAME: %[[BP:arg25]]: tensor<4x4x32x32xbf16>, %[[BPMASK:arg26]]: tensor<4x4x32x32xi8>, %[[BPDROP:arg27]]: tensor<4x4x32x32xbf16>,
// CHECK-SAME: %[[BM2:arg28]]: tensor<4x32x64xi8>, %[[BLN2IN:arg29]]: tensor<4x32x64xbf16>, %[[BGELUIN:arg30]]: tensor<4x32x256xbf16>,
// CHECK-SAME: %[[BM3:arg31]]: tensor<4x32x64xi8>, %[[BFINALIN:arg32]]: tensor<4x32x64xbf16>, %[[BLOGITS:arg33]]: tensor<4x32x256xbf16>)
// CHECK: tpc.cross_entropy_grad %[[BLOGITS]], %{{.*}}, %[[DSUM]]
// CHECK: tpc.layer_norm_input_grad %{{.*}}, %[[BFINALIN]]
// CHECK: tpc.apply_mask %{{.*}}, %[[BM3]] rate 1.000000e-01
// CHECK: tpc.gelu_grad %{{.*}}, %[[BGELUIN]] tanh
// CHECK: tpc.layer_norm_input_grad %{{.*}}, %[[BLN2IN]]
// CHECK: tpc.apply_mask %{{.*}}, %[[BM2]] rate 1.000000e-01
// CHECK: %[[DO:.*]] = tpc.transpose
// CHECK: %[[DPDROP:.*]] = tpc.batch_matmul %[[DO]], %[[BV]] transpose_rhs {tpc.layer = 0 : i64}
// CHECK: tpc.batch_matmul %[[BPDROP]], %[[DO]] transpose_lhs {tpc.layer = 0 : i64}
// CHECK: %[[DP:.*]] = tpc.apply_mask %[[DPDROP]], %[[BPMASK]] rate 1.000000e-01
// CHECK: %[[DS:.*]] = tpc.softmax_grad %[[DP]], %[[BP]]
// CHECK: tpc.batch_matmul %[[DS]], %[[BK]] scale 2.500000e-01
// CHECK: tpc.batch_matmul %[[DS]], %[[BQ]] transpose_lhs scale 2.500000e-01
// CHECK: tpc.layer_norm_input_grad %{{.*}}, %[[BLN1IN]]
// CHECK: tpc.apply_mask %{{.*}}, %[[BM0]] rate 1.000000e-01
// CHECK: return
