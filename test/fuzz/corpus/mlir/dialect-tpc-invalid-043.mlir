func.func @silu_dynamic(%x: tensor<?x64xf32>) {
  %0 = tpc.silu %x : tensor<?x64xf32>
  return
}
