module {
  rt.program @one {
  }
  rt.program @two {
  }
}
