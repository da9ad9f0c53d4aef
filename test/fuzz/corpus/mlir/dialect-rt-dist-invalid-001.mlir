rt.program @p mesh [dp = 2, tp = 0] {
}
