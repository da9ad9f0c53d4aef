rt.program @p mesh [dp = 2, tp = 2] {
  %ids = rt.input "ids" splits [[dp], []] : memref<2x4xi64>
  rt.output "ids" %ids : memref<2x4xi64>
}
