module attributes {rt.arena_bytes = 1 : i32} {
}
