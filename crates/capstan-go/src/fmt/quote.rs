//! `strconv.Quote` and friends: Go's double-quoted string and rune literals.

use unicode_general_category::{GeneralCategory, get_general_category};

/// Go's `unicode.IsPrint`/`strconv.IsPrint`: letters, marks, numbers, punctuation, symbols
/// and the ASCII space (no other space characters, no controls or format characters).
pub fn is_print(r: char) -> bool {
    let c = u32::from(r);
    if c < 0x100 {
        // The Latin-1 fast path Go uses: printable ASCII, and ¡..ÿ except the soft hyphen.
        return (0x20..0x7f).contains(&c) || ((0xa1..=0xff).contains(&c) && c != 0xad);
    }
    use GeneralCategory as G;
    !matches!(
        get_general_category(r),
        G::SpaceSeparator
            | G::LineSeparator
            | G::ParagraphSeparator
            | G::Control
            | G::Format
            | G::Surrogate
            | G::PrivateUse
            | G::Unassigned
    )
}

/// Go's `strconv.Quote`.
pub fn quote(s: &str) -> String {
    quote_bytes(s.as_bytes(), b'"', false)
}

/// Quotes raw bytes with `quote` as delimiter; invalid UTF-8 bytes become `\xNN`.
/// `ascii_only` is `strconv.QuoteToASCII` (`%+q`).
pub fn quote_bytes(bytes: &[u8], quote: u8, ascii_only: bool) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push(quote as char);
    let mut rest = bytes;
    while !rest.is_empty() {
        match decode_rune(rest) {
            Some((r, width)) => {
                push_escaped_rune(&mut out, r, quote, ascii_only);
                rest = rest.get(width..).unwrap_or_default();
            }
            None => {
                if let Some((&b, tail)) = rest.split_first() {
                    out.push_str(&format!("\\x{b:02x}"));
                    rest = tail;
                }
            }
        }
    }
    out.push(quote as char);
    out
}

/// Go's `strconv.QuoteRune` (`%q` of an integer); `ascii_only` is `QuoteRuneToASCII`.
pub fn quote_rune(r: char, ascii_only: bool) -> String {
    let mut out = String::from("'");
    push_escaped_rune(&mut out, r, b'\'', ascii_only);
    out.push('\'');
    out
}

/// Go's `strconv.CanBackquote`: no control characters other than tab, no backquote, no
/// invalid UTF-8 and no byte order mark.
pub fn can_backquote(bytes: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(bytes) else {
        return false;
    };
    s.chars()
        .all(|c| c != '`' && c != '\u{feff}' && c != '\u{7f}' && (c >= ' ' || c == '\t'))
}

/// Decodes one UTF-8 rune like Go's `utf8.DecodeRune`, `None` for an invalid byte.
pub fn decode_rune(bytes: &[u8]) -> Option<(char, usize)> {
    let first = *bytes.first()?;
    let width = match first {
        0x00..=0x7f => 1,
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return None,
    };
    let chunk = bytes.get(..width)?;
    let s = std::str::from_utf8(chunk).ok()?;
    s.chars().next().map(|c| (c, width))
}

fn push_escaped_rune(out: &mut String, r: char, quote: u8, ascii_only: bool) {
    if r == quote as char || r == '\\' {
        out.push('\\');
        out.push(r);
        return;
    }
    if ascii_only {
        if r.is_ascii() && is_print(r) {
            out.push(r);
            return;
        }
    } else if is_print(r) {
        out.push(r);
        return;
    }
    match r {
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        _ => {
            let c = u32::from(r);
            if c < 0x20 || c == 0x7f {
                out.push_str(&format!("\\x{c:02x}"));
            } else if c < 0x10000 {
                out.push_str(&format!("\\u{c:04x}"));
            } else {
                out.push_str(&format!("\\U{c:08x}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_escapes_like_go() {
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quote("\n\t\u{0}\u{7f}"), r#""\n\t\x00\x7f""#);
        assert_eq!(quote("héllo ☃ 😀"), "\"héllo ☃ 😀\"");
        assert_eq!(
            quote("\u{2028}\u{feff}\u{a0}\u{ad}"),
            r#""\u2028\ufeff\u00a0\u00ad""#
        );
        assert_eq!(quote("\u{e000}\u{10ffff}"), r#""\ue000\U0010ffff""#);
    }

    #[test]
    fn quote_invalid_utf8_and_ascii() {
        assert_eq!(quote_bytes(b"a\xffb", b'"', false), r#""a\xffb""#);
        assert_eq!(quote_bytes("é😀".as_bytes(), b'"', true), r#""\u00e9\U0001f600""#);
        assert_eq!(quote_rune('\'', false), r"'\''");
        assert_eq!(quote_rune('x', false), "'x'");
    }

    #[test]
    fn backquote_rules() {
        assert!(can_backquote(b"a\tb"));
        assert!(!can_backquote(b"a\nb"));
        assert!(!can_backquote(b"a`b"));
    }
}
