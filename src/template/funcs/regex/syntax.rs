//! Go RE2 syntax on top of Rust's `regex` crate.
//!
//! Both engines implement RE2 with leftmost-first semantics, but their syntax differs at the
//! edges: Go's `\d`, `\w`, `\s` and `\b` are ASCII-only, Go accepts octal escapes, `\Q…\E`, a
//! literal `{` that starts no repeat and `[` inside a class, and its group names may start with
//! a digit. This module checks a pattern with Go's rules (reporting Go's error texts) and
//! rewrites it into an equivalent pattern for the `regex` crate. Named groups become plain
//! groups; their names are returned so `$name` expansion can follow Go.

/// A pattern Go rejects: its message is Go's `error parsing regexp: …` text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError(pub String);

impl SyntaxError {
    fn new(code: &str, expr: &str) -> SyntaxError {
        SyntaxError(format!("error parsing regexp: {code}: `{expr}`"))
    }
}

/// A translated pattern: Rust syntax plus the name of each capture group (index 0 = whole).
#[derive(Debug, Clone)]
pub struct Translated {
    pub pattern: String,
    pub names: Vec<String>,
}

/// Go's repeat limit (`{1001}` is an error).
const MAX_REPEAT: u32 = 1000;

const ASCII_DIGIT: &str = "0-9";
const ASCII_WORD: &str = "0-9A-Za-z_";
const ASCII_SPACE: &str = "\\t\\n\\f\\r ";

/// Checks `expr` with Go's rules and rewrites it for the `regex` crate.
pub fn translate(expr: &str) -> Result<Translated, SyntaxError> {
    Translator {
        expr,
        chars: expr.char_indices().collect(),
        pos: 0,
        out: String::with_capacity(expr.len() + 16),
        names: vec![String::new()],
    }
    .run()
}

struct Translator<'a> {
    expr: &'a str,
    chars: Vec<(usize, char)>,
    pos: usize,
    out: String,
    names: Vec<String>,
}

/// What the last emitted item was, for Go's repetition checks.
#[derive(Clone, Copy, PartialEq)]
enum Last {
    /// Start of the pattern, of a group or after `|`: nothing to repeat.
    Nothing,
    /// Something repeatable.
    Atom,
    /// A repetition operator; the byte offset where the operator run started.
    Repeat(usize),
}

impl Translator<'_> {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).map(|&(_, c)| c)
    }

    fn offset(&self, pos: usize) -> usize {
        self.chars.get(pos).map_or(self.expr.len(), |&(o, _)| o)
    }

    fn run(mut self) -> Result<Translated, SyntaxError> {
        let mut depth = 0usize;
        let mut last = Last::Nothing;
        while let Some(c) = self.peek(0) {
            let start = self.offset(self.pos);
            match c {
                '(' => {
                    if self.group_open()? {
                        depth += 1;
                        last = Last::Nothing;
                    }
                }
                ')' => {
                    if depth == 0 {
                        return Err(SyntaxError::new("unexpected )", self.expr));
                    }
                    depth -= 1;
                    self.out.push(')');
                    self.pos += 1;
                    last = Last::Atom;
                }
                '|' => {
                    self.out.push('|');
                    self.pos += 1;
                    last = Last::Nothing;
                }
                '*' | '+' | '?' => {
                    last = self.repeat_op(last, start, 1, &c.to_string())?;
                }
                '{' => match self.repeat_braces()? {
                    Some((len, text)) => last = self.repeat_op(last, start, len, &text)?,
                    None => {
                        self.out.push_str("\\{");
                        self.pos += 1;
                        last = Last::Atom;
                    }
                },
                '[' => {
                    self.class()?;
                    last = Last::Atom;
                }
                '\\' => {
                    self.escape()?;
                    last = Last::Atom;
                }
                '^' | '$' | '.' => {
                    self.out.push(c);
                    self.pos += 1;
                    last = Last::Atom;
                }
                _ => {
                    push_literal(&mut self.out, c);
                    self.pos += 1;
                    last = Last::Atom;
                }
            }
        }
        if depth > 0 {
            return Err(SyntaxError::new("missing closing )", self.expr));
        }
        Ok(Translated {
            pattern: self.out,
            names: self.names,
        })
    }

    /// A repetition operator of `len` chars (`text`) after `last`.
    fn repeat_op(&mut self, last: Last, start: usize, len: usize, text: &str) -> Result<Last, SyntaxError> {
        match last {
            Last::Nothing => return Err(SyntaxError::new("missing argument to repetition operator", text)),
            Last::Repeat(from) => {
                let end = self.offset(self.pos + len);
                return Err(SyntaxError::new(
                    "invalid nested repetition operator",
                    &self.expr[from..end],
                ));
            }
            Last::Atom => {}
        }
        self.out.push_str(text);
        self.pos += len;
        // A following `?` makes the operator non-greedy; it is part of the same operator.
        if self.peek(0) == Some('?') {
            self.out.push('?');
            self.pos += 1;
        }
        Ok(Last::Repeat(start))
    }

    /// `{n}`, `{n,}` or `{n,m}` at the cursor: its length in chars and text; `None` when the
    /// brace starts no repeat (Go then takes it literally).
    fn repeat_braces(&self) -> Result<Option<(usize, String)>, SyntaxError> {
        let mut i = 1;
        let digits = |i: &mut usize| {
            let from = *i;
            while self.peek(*i).is_some_and(|c| c.is_ascii_digit()) {
                *i += 1;
            }
            *i > from
        };
        if !digits(&mut i) {
            return Ok(None);
        }
        if self.peek(i) == Some(',') {
            i += 1;
            digits(&mut i);
        }
        if self.peek(i) != Some('}') {
            return Ok(None);
        }
        let text: String = (0..=i).filter_map(|k| self.peek(k)).collect();
        let inner = &text[1..text.len() - 1];
        let (min, max) = match inner.split_once(',') {
            Some((a, "")) => (a.parse::<u32>().ok(), None),
            Some((a, b)) => (a.parse::<u32>().ok(), Some(b.parse::<u32>().ok())),
            None => (inner.parse::<u32>().ok(), Some(inner.parse::<u32>().ok())),
        };
        let bad = match (min, max) {
            (None, _) | (_, Some(None)) => true,
            (Some(lo), None) => lo > MAX_REPEAT,
            (Some(lo), Some(Some(hi))) => lo > MAX_REPEAT || hi > MAX_REPEAT || hi < lo,
        };
        if bad {
            return Err(SyntaxError::new("invalid repeat count", &text));
        }
        Ok(Some((i + 1, text)))
    }

    /// `(`, `(?flags)`, `(?flags:`, `(?P<name>` or `(?<name>`; whether a group was opened
    /// (`(?i)` only sets flags).
    fn group_open(&mut self) -> Result<bool, SyntaxError> {
        if self.peek(1) != Some('?') {
            self.out.push('(');
            self.names.push(String::new());
            self.pos += 1;
            return Ok(true);
        }
        let rest: String = self.chars[self.pos..].iter().map(|&(_, c)| c).collect();
        let named = rest.strip_prefix("(?P<").or_else(|| rest.strip_prefix("(?<"));
        if let Some(after) = named {
            let invalid = || SyntaxError::new("invalid named capture", &rest);
            let end = after.find('>').ok_or_else(invalid)?;
            let name = &after[..end];
            if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                return Err(invalid());
            }
            if self.names.iter().any(|n| n == name) {
                return Err(SyntaxError::new("duplicate capture group name", name));
            }
            let prefix_len = rest.len() - after.len();
            self.pos += rest[..prefix_len + end + 1].chars().count();
            self.out.push('(');
            self.names.push(name.to_string());
            return Ok(true);
        }
        // Flags: (?i), (?-s), (?iU:…)
        let mut i = 2;
        let mut flags = String::new();
        let mut negated = false;
        let mut any = false;
        loop {
            match self.peek(i) {
                Some(c @ ('i' | 'm' | 's' | 'U')) => {
                    flags.push(c);
                    any = true;
                }
                Some('-') if !negated => {
                    flags.push('-');
                    negated = true;
                    any = false;
                }
                Some(end @ (')' | ':')) if any || (!negated && end == ':') => {
                    if negated && !any {
                        break;
                    }
                    self.out.push_str("(?");
                    self.out.push_str(&flags);
                    self.out.push(end);
                    // Flag groups capture nothing, in Go and in Rust.
                    self.pos += i + 1;
                    return Ok(end == ':');
                }
                _ => break,
            }
            i += 1;
        }
        let upto = self.offset(self.pos + i + 1).min(self.expr.len());
        let from = self.offset(self.pos);
        Err(SyntaxError::new(
            "invalid or unsupported Perl syntax",
            &self.expr[from..upto],
        ))
    }

    /// A bracketed class, copied with Go's meaning (`[` inside is literal, Perl classes are
    /// ASCII, POSIX classes kept).
    fn class(&mut self) -> Result<(), SyntaxError> {
        let open = self.offset(self.pos);
        self.pos += 1;
        self.out.push('[');
        if self.peek(0) == Some('^') {
            self.out.push('^');
            self.pos += 1;
        }
        let mut first = true;
        // The previous single character, for range checks.
        let mut prev: Option<(char, usize)> = None;
        loop {
            let Some(c) = self.peek(0) else {
                return Err(SyntaxError::new("missing closing ]", &self.expr[open..]));
            };
            let here = self.offset(self.pos);
            match c {
                ']' if !first => {
                    self.out.push(']');
                    self.pos += 1;
                    return Ok(());
                }
                '[' if self.peek(1) == Some(':') => {
                    let rest = &self.expr[here..];
                    match rest.find(":]") {
                        Some(end) => {
                            let name = &rest[..end + 2];
                            if !POSIX_CLASSES.contains(
                                &name
                                    .trim_start_matches("[:^")
                                    .trim_start_matches("[:")
                                    .trim_end_matches(":]"),
                            ) {
                                return Err(SyntaxError::new("invalid character class range", name));
                            }
                            self.out.push_str(name);
                            self.pos += name.chars().count();
                            prev = None;
                        }
                        None => {
                            self.out.push_str("\\[");
                            self.pos += 1;
                            prev = Some(('[', here));
                        }
                    }
                }
                '-' if !first && prev.is_some() && self.peek(1).is_some_and(|n| n != ']') => {
                    // A range: prev-hi.
                    let (lo, lo_at) = prev.take().unwrap_or(('-', here));
                    self.pos += 1;
                    let hi = if self.peek(0) == Some('\\') {
                        self.class_escape_char()?
                    } else {
                        let h = self.peek(0).unwrap_or('-');
                        self.pos += 1;
                        h
                    };
                    let end = self.offset(self.pos);
                    if hi < lo {
                        return Err(SyntaxError::new(
                            "invalid character class range",
                            &self.expr[lo_at..end],
                        ));
                    }
                    self.out.push('-');
                    push_class_literal(&mut self.out, hi);
                }
                '\\' => {
                    if let Some(single) = self.class_escape()? {
                        prev = Some((single, here));
                    } else {
                        prev = None;
                    }
                }
                _ => {
                    push_class_literal(&mut self.out, c);
                    self.pos += 1;
                    prev = Some((c, here));
                }
            }
            first = false;
        }
    }

    /// An escape inside a class; returns the character when it denotes a single one.
    fn class_escape(&mut self) -> Result<Option<char>, SyntaxError> {
        match self.peek(1) {
            Some('d') => self.class_set(ASCII_DIGIT, false),
            Some('D') => self.class_set(ASCII_DIGIT, true),
            Some('w') => self.class_set(ASCII_WORD, false),
            Some('W') => self.class_set(ASCII_WORD, true),
            Some('s') => self.class_set(ASCII_SPACE, false),
            Some('S') => self.class_set(ASCII_SPACE, true),
            Some('p' | 'P') => {
                self.unicode_class()?;
                Ok(None)
            }
            _ => {
                let c = self.class_escape_char()?;
                push_class_literal(&mut self.out, c);
                Ok(Some(c))
            }
        }
    }

    fn class_set(&mut self, set: &str, negated: bool) -> Result<Option<char>, SyntaxError> {
        if negated {
            self.out.push_str("[^");
            self.out.push_str(set);
            self.out.push(']');
        } else {
            self.out.push_str(set);
        }
        self.pos += 2;
        Ok(None)
    }

    /// A single-character escape (inside or outside classes): consumes it, returns the char.
    fn class_escape_char(&mut self) -> Result<char, SyntaxError> {
        let Some(c) = self.peek(1) else {
            return Err(SyntaxError::new("trailing backslash at end of expression", ""));
        };
        let at = self.offset(self.pos);
        let simple = match c {
            'a' => Some('\u{7}'),
            'f' => Some('\u{c}'),
            't' => Some('\t'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            'v' => Some('\u{b}'),
            _ if c.is_ascii_punctuation() => Some(c),
            _ => None,
        };
        if let Some(ch) = simple {
            self.pos += 2;
            return Ok(ch);
        }
        match c {
            '0'..='7' if c == '0' || self.peek(2).is_some_and(|d| d.is_ascii_digit()) => {
                let mut value = 0u32;
                let mut n = 0;
                while n < 3
                    && let Some(d) = self.peek(1 + n).and_then(|d| d.to_digit(8))
                {
                    value = value * 8 + d;
                    n += 1;
                }
                self.pos += 1 + n;
                char::from_u32(value).ok_or_else(|| self.bad_escape(at))
            }
            'x' => self.hex_escape(at),
            _ => Err(self.bad_escape(at)),
        }
    }

    fn hex_escape(&mut self, at: usize) -> Result<char, SyntaxError> {
        if self.peek(2) == Some('{') {
            let mut i = 3;
            let mut value: u32 = 0;
            while let Some(d) = self.peek(i).and_then(|d| d.to_digit(16)) {
                value = value.saturating_mul(16).saturating_add(d);
                i += 1;
            }
            if i == 3 || self.peek(i) != Some('}') || value > 0x10FFFF {
                let end = self.offset((self.pos + i + 1).min(self.chars.len()));
                return Err(SyntaxError::new("invalid escape sequence", &self.expr[at..end]));
            }
            self.pos += i + 1;
            return char::from_u32(value).ok_or_else(|| self.bad_escape(at));
        }
        let (Some(h), Some(l)) = (
            self.peek(2).and_then(|d| d.to_digit(16)),
            self.peek(3).and_then(|d| d.to_digit(16)),
        ) else {
            let end = self.offset((self.pos + 4).min(self.chars.len()));
            return Err(SyntaxError::new("invalid escape sequence", &self.expr[at..end]));
        };
        self.pos += 4;
        char::from_u32(h * 16 + l).ok_or_else(|| self.bad_escape(at))
    }

    fn bad_escape(&self, at: usize) -> SyntaxError {
        let end = self.offset(self.pos + 2);
        SyntaxError::new("invalid escape sequence", &self.expr[at..end.max(at)])
    }

    /// `\pL`, `\p{Greek}`, `\PL`, copied as is.
    fn unicode_class(&mut self) -> Result<(), SyntaxError> {
        let at = self.offset(self.pos);
        if self.peek(2) == Some('{') {
            let mut i = 3;
            while self.peek(i).is_some_and(|c| c != '}') {
                i += 1;
            }
            if self.peek(i).is_none() {
                return Err(SyntaxError::new(
                    "invalid character class range",
                    &self.expr[at..],
                ));
            }
            let end = self.offset(self.pos + i + 1);
            self.out.push_str(&self.expr[at..end]);
            self.pos += i + 1;
        } else if self.peek(2).is_some_and(|c| "CLMNPSZ".contains(c)) {
            let end = self.offset(self.pos + 3);
            self.out.push_str(&self.expr[at..end]);
            self.pos += 3;
        } else {
            return Err(SyntaxError::new(
                "invalid character class range",
                &self.expr[at..],
            ));
        }
        Ok(())
    }

    /// An escape outside classes.
    fn escape(&mut self) -> Result<(), SyntaxError> {
        match self.peek(1) {
            None => Err(SyntaxError::new("trailing backslash at end of expression", "")),
            Some('d') => self.set_outside(ASCII_DIGIT, false),
            Some('D') => self.set_outside(ASCII_DIGIT, true),
            Some('w') => self.set_outside(ASCII_WORD, false),
            Some('W') => self.set_outside(ASCII_WORD, true),
            Some('s') => self.set_outside(ASCII_SPACE, false),
            Some('S') => self.set_outside(ASCII_SPACE, true),
            Some('b') => self.assertion("(?-u:\\b)"),
            Some('B') => self.assertion("(?-u:\\B)"),
            Some('A') => self.assertion("\\A"),
            Some('z') => self.assertion("\\z"),
            Some('p' | 'P') => self.unicode_class(),
            Some('Q') => {
                self.pos += 2;
                while let Some(c) = self.peek(0) {
                    if c == '\\' && self.peek(1) == Some('E') {
                        self.pos += 2;
                        break;
                    }
                    push_literal(&mut self.out, c);
                    self.pos += 1;
                }
                Ok(())
            }
            Some(_) => {
                let c = self.class_escape_char()?;
                push_literal(&mut self.out, c);
                Ok(())
            }
        }
    }

    fn set_outside(&mut self, set: &str, negated: bool) -> Result<(), SyntaxError> {
        self.out.push_str(if negated { "[^" } else { "[" });
        self.out.push_str(set);
        self.out.push(']');
        self.pos += 2;
        Ok(())
    }

    fn assertion(&mut self, text: &str) -> Result<(), SyntaxError> {
        self.out.push_str(text);
        self.pos += 2;
        Ok(())
    }
}

const POSIX_CLASSES: &[&str] = &[
    "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space",
    "upper", "word", "xdigit",
];

/// A literal character outside classes, escaped for the `regex` crate when needed.
fn push_literal(out: &mut String, c: char) {
    if regex::escape(&c.to_string()).len() > c.len_utf8() || c == '#' || c == ' ' {
        // `#` and space only matter in verbose mode, which Go does not have; escape is safe.
        out.push('\\');
        out.push(c);
    } else if c.is_control() {
        out.push_str(&format!("\\x{{{:x}}}", c as u32));
    } else {
        out.push(c);
    }
}

/// A literal character inside a class, escaped so the `regex` crate reads it as Go does
/// (Rust gives `[`, `&&`, `--` and `~~` meaning inside classes).
fn push_class_literal(out: &mut String, c: char) {
    match c {
        '[' | ']' | '\\' | '^' | '-' | '&' | '~' => {
            out.push('\\');
            out.push(c);
        }
        _ if c.is_control() => out.push_str(&format!("\\x{{{:x}}}", c as u32)),
        _ => out.push(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(expr: &str) -> String {
        translate(expr).unwrap_err().0
    }

    #[test]
    fn go_error_texts() {
        assert_eq!(err("a(b"), "error parsing regexp: missing closing ): `a(b`");
        assert_eq!(err("ab)"), "error parsing regexp: unexpected ): `ab)`");
        assert_eq!(err("a[bc"), "error parsing regexp: missing closing ]: `[bc`");
        assert_eq!(
            err("*a"),
            "error parsing regexp: missing argument to repetition operator: `*`"
        );
        assert_eq!(
            err("a(+)"),
            "error parsing regexp: missing argument to repetition operator: `+`"
        );
        assert_eq!(
            err("a**"),
            "error parsing regexp: invalid nested repetition operator: `**`"
        );
        assert_eq!(
            err("a\\q"),
            "error parsing regexp: invalid escape sequence: `\\q`"
        );
        assert_eq!(
            err("a\\"),
            "error parsing regexp: trailing backslash at end of expression: ``"
        );
        assert_eq!(
            err("[z-a]"),
            "error parsing regexp: invalid character class range: `z-a`"
        );
        assert_eq!(
            err("a{1001}"),
            "error parsing regexp: invalid repeat count: `{1001}`"
        );
        assert_eq!(
            err("x{2,1}"),
            "error parsing regexp: invalid repeat count: `{2,1}`"
        );
        assert_eq!(
            err("(?<!a)b"),
            "error parsing regexp: invalid named capture: `(?<!a)b`"
        );
    }

    #[test]
    fn accepted_like_go() {
        for ok in [
            "a{",
            "(?P<1a>x)",
            "a*?",
            "[[:alpha:]]+",
            "[\\d.]+",
            "(?i)x",
            "(?m:^a)",
            "\\Qa.b\\E",
            "\\101",
        ] {
            let t = translate(ok).unwrap_or_else(|e| panic!("{ok}: {e:?}"));
            assert!(regex::Regex::new(&t.pattern).is_ok(), "{ok} -> {}", t.pattern);
        }
    }

    #[test]
    fn perl_classes_are_ascii() {
        let t = translate("\\d+").unwrap();
        let re = regex::Regex::new(&t.pattern).unwrap();
        assert!(!re.is_match("٣"));
        assert!(re.is_match("3"));
    }

    proptest::proptest! {
        /// No pattern panics the translator, and what it accepts the `regex` crate compiles.
        #[test]
        fn any_pattern_is_handled(expr in "[a-c()\\[\\]{}*+?|^$.:<>P0-9,dDwWsSbBpQEx\\\\-]{0,24}") {
            // `\p{Name}` is checked by the `regex` crate (its error is still an error).
            if let Ok(t) = translate(&expr) && !expr.contains("p{") && !expr.contains("P{") {
                let built = regex::RegexBuilder::new(&t.pattern).size_limit(32 << 20).build();
                proptest::prop_assert!(built.is_ok(), "{expr:?} -> {:?}: {built:?}", t.pattern);
            }
        }
    }
}
