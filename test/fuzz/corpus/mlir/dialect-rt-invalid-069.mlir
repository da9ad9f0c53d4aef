rt.program @p attributes {rt.seed = 1 : i64} {
}
