//! Go's `fmt` and `strconv` printing rules (placeholder).

/// Go's `strconv.Quote`.
pub fn quote(s: &str) -> String {
    format!("{s:?}")
}

// ---- TEMPORARY stubs so the tree compiles until the real implementations land ----
use crate::template::value::Value;
pub fn format_value(v: &Value) -> String {
    format!("{v:?}")
}
pub fn sprint(args: &[Value]) -> String {
    args.iter().map(format_value).collect::<Vec<_>>().join(" ")
}
pub fn sprintln(args: &[Value]) -> String {
    sprint(args) + "\n"
}
pub fn sprintf(format: &str, args: &[Value]) -> String {
    format!("{format}{}", sprint(args))
}
pub fn html_escape(s: &str) -> String {
    s.to_string()
}
pub fn js_escape(s: &str) -> String {
    s.to_string()
}
pub fn query_escape(s: &str) -> String {
    s.to_string()
}
