//! Deep documents: the recursive steps (parsing, decoding, the JSON round trip) run on a stack
//! that grows with the nesting, so a deeply nested document is decoded, not a stack overflow.

/// Runs `f` on a stack with room for deeply nested documents.
pub(crate) fn grow<T>(f: impl FnOnce() -> T) -> T {
    stacker::maybe_grow(64 * 1024, 4 * 1024 * 1024, f)
}
