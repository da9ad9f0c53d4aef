module attributes {tpc.model = {layers = 1 : i64}} {
func.func @forward(
    %wte: tensor<16x8xf32> {tpc.param = "wte"},
    %lnw: tensor<8xf32> {tpc.param = "ln.weight"},
    %lnb: tensor<8xf32> {tpc.param = "ln.bias"},
    %qkvw: tensor<8x2x2x2xf32> {tpc.param = "qkv.weight", tpc.hf_shape = array<i64: 8, 8>},
    %qkvb: tensor<2x2x2xf32> {tpc.param = "qkv.bias", tpc.hf_shape = array<i64: 8>},
    %norm: tensor<8xf32> {tpc.param = "norm.weight"},
    %up: tensor<4x8xf32> {tpc.param = "up.weight"},
    %down: tensor<8x4xf32> {tpc.param = "down.weight"},
    %ids: tensor<2x4xi64> {tpc.input = "input_ids"},
    %labels: tensor<2x4xi64> {tpc.input = "labels"},
    %extra: tensor<2x4x8xf32> {tpc.input = "extra"})
    -> (tensor<f32> {tpc.output = "loss"}, tensor<2x4x16xf32> {tpc.output = "logits"},
        tensor<2x4x8xbf16> {tpc.output = "half"}) {
  %x = tpc.embedding %wte[%ids] : tensor<16x8xf32>, tensor<2x4xi64>
  %pos = tpc.slice %wte dim 0 [3 : 4] : tensor<16x8xf32>
  %sum = tpc.add %x, %pos : tensor<2x4x8xf32>, tensor<4x8xf32>
  %drop = tpc.dropout %sum rate 2.500000e-01 stream 5 : tensor<2x4x8xf32>
  %ln = tpc.layer_norm %drop, %lnw, %lnb eps 1.000000e-05 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  %qkv = tpc.linear %ln, %qkvw, %qkvb layout in_out : tensor<2x4x8xf32>, tensor<8x2x2x2xf32>, tensor<2x2x2xf32>
  %qs = tpc.slice %qkv dim 2 [0 : 1] : tensor<2x4x2x2x2xf32>
  %qr = tpc.reshape %qs : tensor<2x4x1x2x2xf32> -> tensor<2x4x2x2xf32>
  %q = tpc.transpose %qr [0, 2, 1, 3] : tensor<2x4x2x2xf32>
  %rot = tpc.rotary %q theta 1.000000e+04 offset 2 : tensor<2x2x4x2xf32>
  %kv = tpc.slice %rot dim 1 [1 : 1] : tensor<2x2x4x2xf32>
  %att = tpc.attention %rot, %kv, %kv causal scale 5.000000e-01 dropout 1.000000e-01 stream 6 : tensor<2x2x4x2xf32>, tensor<2x1x4x2xf32>, tensor<2x1x4x2xf32>
  %att2 = tpc.attention %att, %kv, %kv scale 1.0 : tensor<2x2x4x2xf32>, tensor<2x1x4x2xf32>, tensor<2x1x4x2xf32>
  %rep = tpc.repeat %kv dim 1 times 2 : tensor<2x1x4x2xf32>
  %s = tpc.batch_matmul %att2, %rep transpose_rhs scale 2.500000e-01 : tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32>
  %st = tpc.batch_matmul %s, %s transpose_lhs transpose_rhs : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>
  %p = tpc.softmax %st causal : tensor<2x2x4x4xf32>
  %p2 = tpc.softmax %p : tensor<2x2x4x4xf32>
  %o = tpc.batch_matmul %p2, %rep : tensor<2x2x4x4xf32>, tensor<2x2x4x2xf32>
  %ot = tpc.transpose %o [0, 2, 1, 3] : tensor<2x2x4x2xf32>
  %h4 = tpc.reshape %ot : tensor<2x4x2x2xf32> -> tensor<2x4x4xf32>
  %h = tpc.linear %h4, %down layout out_in : tensor<2x4x4xf32>, tensor<8x4xf32>
  %rms = tpc.rms_norm %h, %norm eps 1.0e-6 : tensor<2x4x8xf32>, tensor<8xf32>
  %g = tpc.linear %rms, %up layout out_in : tensor<2x4x8xf32>, tensor<4x8xf32>
  %si = tpc.silu %g : tensor<2x4x4xf32>
  %m = tpc.mul %si, %g : tensor<2x4x4xf32>, tensor<2x4x4xf32>
  %ge = tpc.gelu %m erf : tensor<2x4x4xf32>
  %gt = tpc.gelu %ge tanh : tensor<2x4x4xf32>
  %logits = tpc.linear %rms, %wte layout out_in : tensor<2x4x8xf32>, tensor<16x8xf32>
  %lsum, %count = tpc.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi64>
  %loss = tpc.loss_mean %lsum, %count
  %half = tpc.cast %extra : tensor<2x4x8xf32> to tensor<2x4x8xbf16>
  return %loss, %logits, %half : tensor<f32>, tensor<2x4x16xf32>, tensor<2x4x8xbf16>
}
}
