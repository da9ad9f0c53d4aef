module attributes {rt.arena_bytes = 384 : i64, rt.seed = 0 : i64} {
  rt.program @forward {
    %w = rt.param "w" hf_shape [4, 8] init normal offset 0 : memref<4x8xf32>
    %ids = rt.input "input_ids" bound 4 offset 128 : memref<2x3xi64>
    %x = rt.alloc offset 192 : memref<2x3x8xf32>
    rt.kernel embedding(%w, %ids) -> (%x)
        : memref<4x8xf32>, memref<2x3xi64> -> memref<2x3x8xf32>
    rt.output "x" %x : memref<2x3x8xf32>
  }
}
