// The stash of one unfused GPT-2 layer (bf16, dropout 0.1): exactly the
// values of Korthikanti et al. 2022, Table 2 row 1, each once, tagged with
// the layer. Byte counts: stash-report.test.
// RUN: tpc-import %S/../Import/Inputs/gpt2-tiny.json --seq 32 --batch 4 --num-layers 1 \
// RUN:     --attention unfused --dropout 0.1 --dtype bf16 \
// RUN:   | tpc-opt --tpc-autodiff | FileCheck %s

// The 15 values of the layer carry its tag and say who reads them: the
// layer-norm inputs B (input gradient) and W (parameter gradient), the
// norm outputs and linear inputs W only, the rest B only.
// CHECK-LABEL: func.func @train_F(
// CHECK-SAME: -> (tensor<f32>, tensor<i64>, tensor<4x32x64xi8> {tpc.stash = "B"},
// CHECK-SAME: tensor<4x32x64xbf16> {tpc.layer = 0 : i64, tpc.stash = "BW"},
// CHECK-SAME: tensor<4x32x64xbf16> {tpc.layer = 0 : i64, tpc.stash = "W"},
// CHECK-SAME: tensor<4x4x32x16xbf16> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x4x32x16xbf16> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x4x32x16xbf16> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x4x32x32xbf16> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x4x32x32xi8> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x4x32x32xbf16> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x32x64xbf16> {tpc.layer = 0 : i64, tpc.stash = "W"},
// CHECK-SAME: tensor<4x32x64xi8> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x32x64xbf16> {tpc.layer = 0 : i64, tpc.stash = "BW"},
// CHECK-SAME: tensor<4x32x64xbf16> {tpc.layer = 0 : i64, tpc.stash = "W"},
// CHECK-SAME: tensor<4x32x256xbf16> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x32x256xbf16> {tpc.layer = 0 : i64, tpc.stash = "W"},
// CHECK-SAME: tensor<4x32x64xi8> {tpc.layer = 0 : i64, tpc.stash = "B"},
// CHECK-SAME: tensor<4x32x64xbf16> {tpc.stash = "BW"}, tensor<4x32x64xbf16> {tpc.stash = "W"}, tensor<4x32x256xbf16> {tpc.stash = "B"})
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
