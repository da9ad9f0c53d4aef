func.func @embedding_i64(%table: tensor<256x64xf32>, %ids: tensor<4x32xi64>)
    -> tensor<4x32x64xf32> {
  %0 = tpc.embedding %table[%ids] : tensor<256x64xf32>, tensor<4x32xi64>
  return %0 : tensor<4x32x64xf32>
}

func.func @embedding_i32_bf16(%table: tensor<100x8xbf16>, %ids: tensor<7xi32>)
    -> tensor<7x8xbf16> {
  %0 = tpc.embedding %table[%ids] : tensor<100x8xbf16>, tensor<7xi32>
  return %0 : tensor<7x8xbf16>
}

func.func @linear_in_out_bias(%x: tensor<4x32x64xf32>, %w: tensor<64x256xf32>,
                              %b: tensor<256xf32>) -> tensor<4x32x256xf32> {
  %0 = tpc.linear %x, %w, %b layout in_out
      : tensor<4x32x64xf32>, tensor<64x256xf32>, tensor<256xf32>
  return %0 : tensor<4x32x256xf32>
}

func.func @linear_out_in_no_bias(%x: tensor<4x32x64xf32>,
                                 %w: tensor<176x64xf32>) -> tensor<4x32x176xf32> {
  %0 = tpc.linear %x, %w layout out_in : tensor<4x32x64xf32>, tensor<176x64xf32>
  return %0 : tensor<4x32x176xf32>
}

func.func @linear_multi_dim_in_out(%x: tensor<4x32x64xf32>,
                                   %w: tensor<64x3x4x16xf32>,
                                   %b: tensor<3x4x16xf32>)
    -> tensor<4x32x3x4x16xf32> {
  %0 = tpc.linear %x, %w, %b layout in_out
      : tensor<4x32x64xf32>, tensor<64x3x4x16xf32>, tensor<3x4x16xf32>
  return %0 : tensor<4x32x3x4x16xf32>
}

func.func @linear_multi_dim_out_in_f16(%x: tensor<4x32x64xf16>,
                                       %w: tensor<8x16x64xf16>,
                                       %b: tensor<8x16xf16>)
    -> tensor<4x32x8x16xf16> {
  %0 = tpc.linear %x, %w, %b layout out_in
      : tensor<4x32x64xf16>, tensor<8x16x64xf16>, tensor<8x16xf16>
  return %0 : tensor<4x32x8x16xf16>
}

func.func @linear_layer_attr(%x: tensor<64xf32>, %w: tensor<64x64xf32>)
    -> tensor<64xf32> {
  %0 = tpc.linear %x, %w layout in_out {tpc.layer = 3 : i64}
      : tensor<64xf32>, tensor<64x64xf32>
  return %0 : tensor<64xf32>
}

func.func @batch_matmul_plain(%a: tensor<4x32x16xf32>, %b: tensor<4x16x8xf32>)
    -> tensor<4x32x8xf32> {
  %0 = tpc.batch_matmul %a, %b : tensor<4x32x16xf32>, tensor<4x16x8xf32>
  return %0 : tensor<4x32x8xf32>
}

func.func @batch_matmul_transpose_rhs_scale(%q: tensor<4x4x32x16xf32>,
                                            %k: tensor<4x4x32x16xf32>)
    -> tensor<4x4x32x32xf32> {
  %0 = tpc.batch_matmul %q, %k transpose_rhs scale 2.500000e-01
      : tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
  return %0 : tensor<4x4x32x32xf32>
}

func.func @batch_matmul_transpose_lhs_bf16(%a: tensor<2x16x32xbf16>,
                                           %b: tensor<2x16x8xbf16>)
    -> tensor<2x32x8xbf16> {
  %0 = tpc.batch_matmul %a, %b transpose_lhs
      : tensor<2x16x32xbf16>, tensor<2x16x8xbf16>
  return %0 : tensor<2x32x8xbf16>
}

func.func @batch_matmul_transpose_both(%a: tensor<16x32xf32>,
                                       %b: tensor<8x16xf32>)
    -> (tensor<32x8xf32>, tensor<32x8xf32>) {
  %0 = tpc.batch_matmul %a, %b transpose_lhs transpose_rhs scale -0.5
      : tensor<16x32xf32>, tensor<8x16xf32>
  %1 = tpc.batch_matmul %a, %b transpose_lhs transpose_rhs scale 1.0
      : tensor<16x32xf32>, tensor<8x16xf32>
  return %0, %1 : tensor<32x8xf32>, tensor<32x8xf32>
}


func.func @layer_norm(%x: tensor<4x32x64xf32>, %g: tensor<64xf32>,
                      %b: tensor<64xf32>) -> tensor<4x32x64xf32> {
  %0 = tpc.layer_norm %x, %g, %b eps 1.000000e-05
      : tensor<4x32x64xf32>, tensor<64xf32>, tensor<64xf32>
  return %0 : tensor<4x32x64xf32>
}

func.func @rms_norm_bf16(%x: tensor<4x32x64xbf16>, %g: tensor<64xbf16>)
    -> tensor<4x32x64xbf16> {
  %0 = tpc.rms_norm %x, %g eps 1.000000e-05
      : tensor<4x32x64xbf16>, tensor<64xbf16>
  return %0 : tensor<4x32x64xbf16>
}

func.func @gelu(%x: tensor<4x32x256xf32>) -> tensor<4x32x256xf32> {
  %0 = tpc.gelu %x erf : tensor<4x32x256xf32>
  %1 = tpc.gelu %0 tanh : tensor<4x32x256xf32>
  return %1 : tensor<4x32x256xf32>
}

func.func @silu_f16(%x: tensor<4x32x176xf16>) -> tensor<4x32x176xf16> {
  %0 = tpc.silu %x : tensor<4x32x176xf16>
  return %0 : tensor<4x32x176xf16>
}

func.func @dropout(%x: tensor<4x32x64xf32>) -> tensor<4x32x64xf32> {
  %0 = tpc.dropout %x rate 1.000000e-01 stream 3 : tensor<4x32x64xf32>
  %1 = tpc.dropout %0 rate 0.0 stream 0 : tensor<4x32x64xf32>
  return %1 : tensor<4x32x64xf32>
}

func.func @softmax(%s: tensor<4x4x32x32xf32>) -> tensor<4x4x32x32xf32> {
  %0 = tpc.softmax %s causal : tensor<4x4x32x32xf32>
  %1 = tpc.softmax %0 : tensor<4x4x32x32xf32>
  return %1 : tensor<4x4x32x32xf32>
}

func.func @softmax_shapes(%s: tensor<2x8x24xbf16>, %v: tensor<10xf32>)
    -> (tensor<2x8x24xbf16>, tensor<10xf32>) {
  %0 = tpc.softmax %s causal : tensor<2x8x24xbf16>
  %1 = tpc.softmax %v : tensor<10xf32>
  return %0, %1 : tensor<2x8x24xbf16>, tensor<10xf32>
}


func.func @add_mul_same_shape(%a: tensor<4x32x176xf32>,
                              %b: tensor<4x32x176xf32>)
    -> tensor<4x32x176xf32> {
  %0 = tpc.add %a, %b : tensor<4x32x176xf32>, tensor<4x32x176xf32>
  %1 = tpc.mul %0, %b : tensor<4x32x176xf32>, tensor<4x32x176xf32>
  return %1 : tensor<4x32x176xf32>
}

func.func @add_mul_broadcast(%x: tensor<4x32x64xbf16>, %pos: tensor<32x64xbf16>,
                             %v: tensor<64xbf16>, %c: tensor<bf16>)
    -> tensor<4x32x64xbf16> {
  %0 = tpc.add %x, %pos : tensor<4x32x64xbf16>, tensor<32x64xbf16>
  %1 = tpc.mul %0, %v : tensor<4x32x64xbf16>, tensor<64xbf16>
  %2 = tpc.mul %1, %c : tensor<4x32x64xbf16>, tensor<bf16>
  return %2 : tensor<4x32x64xbf16>
}

func.func @add_constant_lhs(%pos: tensor<8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %c = arith.constant dense<1.0> : tensor<4x8xf32>
  %0 = tpc.add %c, %pos : tensor<4x8xf32>, tensor<8xf32>
  %1 = tpc.mul %c, %pos : tensor<4x8xf32>, tensor<8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}


func.func @attention_gqa(%q: tensor<4x8x32x16xf32>, %k: tensor<4x4x32x16xf32>,
                         %v: tensor<4x4x32x16xf32>) -> tensor<4x8x32x16xf32> {
  %0 = tpc.attention %q, %k, %v causal scale 2.500000e-01
      : tensor<4x8x32x16xf32>, tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
  return %0 : tensor<4x8x32x16xf32>
}

func.func @attention_gqa_dropout(%q: tensor<4x8x32x16xf32>,
                                 %k: tensor<4x4x32x16xf32>,
                                 %v: tensor<4x4x32x16xf32>)
    -> tensor<4x8x32x16xf32> {
  %0 = tpc.attention %q, %k, %v causal scale 2.500000e-01
      dropout 1.000000e-01 stream 7
      : tensor<4x8x32x16xf32>, tensor<4x4x32x16xf32>, tensor<4x4x32x16xf32>
  return %0 : tensor<4x8x32x16xf32>
}

func.func @attention_cross_bf16(%q: tensor<2x4x8x16xbf16>,
                                %k: tensor<2x4x12x16xbf16>,
                                %v: tensor<2x4x12x32xbf16>)
    -> tensor<2x4x8x32xbf16> {
  %0 = tpc.attention %q, %k, %v scale 1.250000e-01
      : tensor<2x4x8x16xbf16>, tensor<2x4x12x16xbf16>, tensor<2x4x12x32xbf16>
  return %0 : tensor<2x4x8x32xbf16>
}

func.func @rotary(%q: tensor<4x8x32x16xf32>) -> tensor<4x8x32x16xf32> {
  %0 = tpc.rotary %q theta 1.000000e+04 : tensor<4x8x32x16xf32>
  %1 = tpc.rotary %0 theta 5.000000e+05 offset 128 : tensor<4x8x32x16xf32>
  return %1 : tensor<4x8x32x16xf32>
}


func.func @cross_entropy_default_ignore(%logits: tensor<4x32x256xf32>,
                                        %labels: tensor<4x32xi64>)
    -> tensor<f32> {
  %sum, %count = tpc.cross_entropy %logits, %labels
      : tensor<4x32x256xf32>, tensor<4x32xi64>
  %loss = tpc.loss_mean %sum, %count
  return %loss : tensor<f32>
}

func.func @cross_entropy_custom_ignore(%logits: tensor<128x256xbf16>,
                                       %labels: tensor<128xi32>)
    -> (tensor<f32>, tensor<i64>, tensor<f32>) {
  %sum, %count = tpc.cross_entropy %logits, %labels ignore 0
      : tensor<128x256xbf16>, tensor<128xi32>
  %sum2, %count2 = tpc.cross_entropy %logits, %labels ignore -100
      : tensor<128x256xbf16>, tensor<128xi32>
  return %sum, %count, %sum2 : tensor<f32>, tensor<i64>, tensor<f32>
}

func.func @loss_mean(%sum: tensor<f32>, %count: tensor<i64>) -> tensor<f32> {
  %0 = tpc.loss_mean %sum, %count
  return %0 : tensor<f32>
}


func.func @reshape(%x: tensor<4x32x4x16xf32>) -> tensor<8192xf32> {
  %0 = tpc.reshape %x : tensor<4x32x4x16xf32> -> tensor<4x32x64xf32>
  %1 = tpc.reshape %0 : tensor<4x32x64xf32> -> tensor<8192xf32>
  return %1 : tensor<8192xf32>
}

func.func @reshape_scalar(%x: tensor<1x1xf16>) -> tensor<1xf16> {
  %0 = tpc.reshape %x : tensor<1x1xf16> -> tensor<f16>
  %1 = tpc.reshape %0 : tensor<f16> -> tensor<1xf16>
  return %1 : tensor<1xf16>
}

func.func @transpose(%x: tensor<4x32x8x16xf32>) -> tensor<16x32x8x4xf32> {
  %0 = tpc.transpose %x [0, 2, 1, 3] : tensor<4x32x8x16xf32>
  %1 = tpc.transpose %0 [3, 2, 1, 0] : tensor<4x8x32x16xf32>
  return %1 : tensor<16x32x8x4xf32>
}

func.func @slice(%wpe: tensor<1024x64xf32>, %qkv: tensor<4x32x3x4x16xf32>)
    -> (tensor<32x64xf32>, tensor<4x32x1x4x16xf32>) {
  %0 = tpc.slice %wpe dim 0 [0 : 32] : tensor<1024x64xf32>
  %1 = tpc.slice %qkv dim 2 [2 : 1] : tensor<4x32x3x4x16xf32>
  return %0, %1 : tensor<32x64xf32>, tensor<4x32x1x4x16xf32>
}

func.func @repeat(%k: tensor<4x4x32x16xf32>) -> tensor<4x8x32x16xf32> {
  %0 = tpc.repeat %k dim 1 times 2 : tensor<4x4x32x16xf32>
  %1 = tpc.repeat %0 dim 3 times 1 : tensor<4x8x32x16xf32>
  return %1 : tensor<4x8x32x16xf32>
}

func.func @cast(%x: tensor<4x32x64xf32>) -> tensor<4x32x64xf32> {
  %0 = tpc.cast %x : tensor<4x32x64xf32> to tensor<4x32x64xbf16>
  %1 = tpc.cast %0 : tensor<4x32x64xbf16> to tensor<4x32x64xf16>
  %2 = tpc.cast %1 : tensor<4x32x64xf16> to tensor<4x32x64xf32>
  return %2 : tensor<4x32x64xf32>
}


func.func @empty_and_scalar(%e: tensor<0x8xf32>, %s: tensor<f32>,
                            %table: tensor<16x8xf32>, %id: tensor<i64>)
    -> (tensor<0x8xf32>, tensor<f32>, tensor<8xf32>) {
  %0 = tpc.softmax %e : tensor<0x8xf32>
  %1 = tpc.gelu %s erf : tensor<f32>
  %2 = tpc.dropout %1 rate 0.5 stream 1 : tensor<f32>
  %3 = tpc.embedding %table[%id] : tensor<16x8xf32>, tensor<i64>
  %4 = tpc.transpose %2 [] : tensor<f32>
  return %0, %4, %3 : tensor<0x8xf32>, tensor<f32>, tensor<8xf32>
}

func.func @cross_entropy_vocab_block(%l: tensor<4x32xf32>, %y: tensor<4xi64>, %d: tensor<f32>) -> tensor<4x32xf32> {
  %sum, %count = tpc.cross_entropy %l, %y vocab 125 blocks 4 : tensor<4x32xf32>, tensor<4xi64>
  %g = tpc.cross_entropy_grad %l, %y, %d vocab 125 blocks 4 : tensor<4x32xf32>, tensor<4xi64>
  return %g : tensor<4x32xf32>
}
