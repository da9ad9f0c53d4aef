rt.program @p {
  %a = rt.alloc : memref<8xf32>
  rt.output "y" %a : memref<8xf32>
}
