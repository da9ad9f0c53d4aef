rt.program @p mesh [dp = 2, dp = 2] {
}
