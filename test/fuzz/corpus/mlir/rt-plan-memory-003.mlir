rt.program @empty {
  %w = rt.param "w" hf_shape [8] init normal : memref<8xf32>
  %x = rt.input "x" : memref<13xi64>
  rt.output "w" %w : memref<8xf32>
}
