rt.program @p {
  rt.program @q {
  }
}
