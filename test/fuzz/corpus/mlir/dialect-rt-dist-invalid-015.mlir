rt.program @p mesh [dp = 2, tp = 2] {
  %ids = rt.input "ids" splits [[sp], []] : memref<2x4xi64>
}
