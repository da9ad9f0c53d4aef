dist.mesh @mesh axes [dp = 2, tp = 4]
dist.mesh @pipe axes [pp = 4]

func.func @shardings(%x: tensor<8x16x64xf32>) {
  %0 = dist.shard %x to <@mesh, [[dp], [], []]> : tensor<8x16x64xf32>
  %1 = dist.shard %x to <@mesh, [[dp], [tp], []]> : tensor<8x16x64xf32>
  %2 = dist.shard %x to <@mesh, [[dp], [], []], partial [tp]> : tensor<8x16x64xf32>
  %3 = dist.shard %x to <@mesh, [[], [], [dp, tp]]> : tensor<8x16x64xf32>
  return
}

func.func @attribute(%w: tensor<64x256xf32> {dist.sharding = #dist.sharding<@mesh, [[], [tp]]>}) {
  return
}

func.func @collectives(%x: tensor<8x16x64xf32>, %s: tensor<8x4x64xf32>, %r: tensor<8x16xf32>) {
  %0 = dist.all_reduce %x on @mesh axes [tp] : tensor<8x16x64xf32>
  %1 = dist.all_reduce %r on @mesh axes [tp] reduce max : tensor<8x16xf32>
  %2 = dist.all_reduce %r on @mesh axes [dp, tp] reduce sum : tensor<8x16xf32>
  %3 = dist.all_gather %s on @mesh axes [tp] dim 1 : tensor<8x4x64xf32> -> tensor<8x16x64xf32>
  %4 = dist.all_gather %s on @mesh axes [dp, tp] dim 0 : tensor<8x4x64xf32> -> tensor<64x4x64xf32>
  %5 = dist.reduce_scatter %x on @mesh axes [tp] dim 1 : tensor<8x16x64xf32> -> tensor<8x4x64xf32>
  %6 = dist.reduce_scatter %x on @mesh axes [dp] dim 0 reduce min : tensor<8x16x64xf32> -> tensor<4x16x64xf32>
  %ss = dist.shard_slice %x on @mesh axes [tp] dim 1 : tensor<8x16x64xf32> -> tensor<8x4x64xf32>
  %sp = dist.shard_pad %ss on @mesh axes [tp] dim 1 : tensor<8x4x64xf32> -> tensor<8x16x64xf32>
  %7 = dist.all_to_all %s on @mesh axes [tp] split 2 concat 1 : tensor<8x4x64xf32> -> tensor<8x16x16xf32>
  %8 = dist.broadcast %r on @mesh axes [tp] root 3 : tensor<8x16xf32>
  return
}

func.func @send_recv(%x: tensor<2x16x64xbf16>) -> tensor<2x16x64xbf16> {
  dist.send %x on @pipe axes [pp] pairs [0 -> 1, 1 -> 2, 2 -> 3] channel 0 : tensor<2x16x64xbf16>
  %y = dist.recv on @pipe axes [pp] pairs [0 -> 1, 1 -> 2, 2 -> 3] channel 0 : tensor<2x16x64xbf16>
  return %y : tensor<2x16x64xbf16>
}

func.func @send_recv_async(%x: tensor<2x16x64xbf16>) -> tensor<2x16x64xbf16> {
  dist.send async %x on @pipe axes [pp] pairs [0 -> 1] channel 0 : tensor<2x16x64xbf16>
  %y = dist.recv async on @pipe axes [pp] pairs [1 -> 0] channel 1 : tensor<2x16x64xbf16>
  dist.wait %x : tensor<2x16x64xbf16>
  dist.wait %y : tensor<2x16x64xbf16>
  return %y : tensor<2x16x64xbf16>
}
