module attributes {rt.arena = 1 : i64} {
}
