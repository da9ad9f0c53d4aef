func.func @silu_not_a_tensor(%x: f32) {
  %0 = tpc.silu %x : f32
  return
}
