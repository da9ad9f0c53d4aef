rt.program @forward {
  %w = rt.param "w" hf_shape [10] init normal : memref<10xf32>
  %x = rt.input "x" : memref<64xf32>
  %a = rt.alloc : memref<128xf32>
  rt.kernel repeat(%x) -> (%a) ints [0, 2] : memref<64xf32> -> memref<128xf32>
  %b = rt.alloc : memref<16xf32>
  rt.kernel slice(%a) -> (%b) ints [0, 0, 16] : memref<128xf32> -> memref<16xf32>
  %c = rt.alloc : memref<16xf32>
  rt.kernel silu(%b) -> (%c) : memref<16xf32> -> memref<16xf32>
  %d = rt.alloc : memref<64xf32>
  rt.kernel repeat(%c) -> (%d) ints [0, 4] : memref<16xf32> -> memref<64xf32>
  %e = rt.alloc : memref<64xf32>
  rt.kernel silu(%d) -> (%e) : memref<64xf32> -> memref<64xf32>
  %f = rt.alloc : memref<64xf32>
  rt.kernel mul(%e, %d) -> (%f) : memref<64xf32>, memref<64xf32> -> memref<64xf32>
  %g = rt.alloc : memref<10xf32>
  rt.kernel slice(%f) -> (%g) ints [0, 0, 10] : memref<64xf32> -> memref<10xf32>
  %h = rt.alloc : memref<10xf32>
  rt.kernel add(%g, %w) -> (%h) : memref<10xf32>, memref<10xf32> -> memref<10xf32>
  rt.output "h" %h : memref<10xf32>
}
