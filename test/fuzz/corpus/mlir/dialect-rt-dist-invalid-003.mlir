rt.program @p mesh [] {
}
