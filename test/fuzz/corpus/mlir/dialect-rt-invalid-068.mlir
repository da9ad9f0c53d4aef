module attributes {rt.planned_peak_bytes = -5 : i64} {
}
