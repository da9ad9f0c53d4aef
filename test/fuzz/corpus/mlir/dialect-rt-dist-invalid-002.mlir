rt.program @p mesh [a = 4294967296, b = 4294967296] {
}
