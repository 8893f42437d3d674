//! Go's `fmt` and `strconv` printing rules (placeholder).

/// Go's `strconv.Quote`.
pub fn quote(s: &str) -> String {
    format!("{s:?}")
}
