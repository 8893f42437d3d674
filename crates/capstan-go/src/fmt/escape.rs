//! The escapers behind text/template's `html`, `js` and `urlquery` builtins.

use super::quote::is_print;

/// Go's `template.HTMLEscapeString`: `<>&'"` as entities, NUL as U+FFFD.
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\0' => out.push('\u{fffd}'),
            _ => out.push(c),
        }
    }
    out
}

/// Go's `template.JSEscapeString`: quotes and backslash escaped, `<>&=` and ASCII controls
/// as upper-case `\uXXXX`, non-printable non-ASCII runes as `\uXXXX`.
pub fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' | '>' | '&' | '=' => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c if c < ' ' => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c if c.is_ascii() || is_print(c) => out.push(c),
            c => out.push_str(&format!("\\u{:04X}", u32::from(c))),
        }
    }
    out
}

/// Go's `url.QueryEscape`: unreserved bytes kept, space as `+`, the rest `%XX`.
pub fn query_escape(s: &[u8]) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html() {
        assert_eq!(
            html_escape("<a href='x'>&\"\0"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&#34;\u{fffd}"
        );
    }

    #[test]
    fn js() {
        assert_eq!(
            js_escape("a'b\"c\\<>&=\n\u{7f}é\u{2028}"),
            "a\\'b\\\"c\\\\\\u003C\\u003E\\u0026\\u003D\\u000A\u{7f}é\\u2028"
        );
    }

    #[test]
    fn query() {
        assert_eq!(query_escape("a b&c=d/é~".as_bytes()), "a+b%26c%3Dd%2F%C3%A9~");
    }
}
