module {
  func.func @main() {
    return
  }
}
