rt.program @p {
  %c = arith.constant 0 : index
}
