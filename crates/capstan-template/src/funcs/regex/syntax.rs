//! Go `regexp/syntax` (RE2) patterns checked with Go's error messages and rewritten for the
//! `regex` crate, whose syntax differs: Go's `\d \w \s \b` are ASCII-only, `\Q…\E` and octal
//! escapes exist, `{` that starts no repetition is a literal, classes know no `&&`/`--`/`~~`
//! or nested sets, and duplicate group names are allowed. Named groups are emitted unnamed;
//! the names are returned separately (for `$name` expansion).

/// A Go syntax error: `error parsing regexp: <code>: `<expr>``.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub code: &'static str,
    pub expr: String,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error parsing regexp: {}: `{}`", self.code, self.expr)
    }
}

/// A translated pattern: the `regex` crate's text and each group's Go name (index 0 is the
/// whole match).
#[derive(Debug)]
pub struct Translated {
    pub pattern: String,
    pub names: Vec<Option<String>>,
}

const MAX_REPEAT: u32 = 1000;

fn err(code: &'static str, expr: impl Into<String>) -> SyntaxError {
    SyntaxError {
        code,
        expr: expr.into(),
    }
}

/// The last thing emitted, for repetition checks.
#[derive(Clone, Copy, PartialEq)]
enum Last {
    /// Nothing repeatable (start, `(`, `|`).
    Nothing,
    Atom,
    /// A repetition operator starting at this byte offset of the source.
    Repeat(usize),
}

fn hex_char(c: char) -> String {
    format!("\\x{{{:X}}}", c as u32)
}

const DIGITS: &str = "0-9";
const SPACES: &str = "\\t\\n\\x0C\\r ";
const WORD: &str = "0-9A-Za-z_";

/// The class body of a Perl class letter, and whether it is negated.
fn perl_class(c: char) -> Option<(&'static str, bool)> {
    Some(match c {
        'd' => (DIGITS, false),
        'D' => (DIGITS, true),
        's' => (SPACES, false),
        'S' => (SPACES, true),
        'w' => (WORD, false),
        'W' => (WORD, true),
        _ => return None,
    })
}

const POSIX: [&str; 14] = [
    "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space",
    "upper", "word", "xdigit",
];

pub fn translate(src: &str) -> Result<Translated, SyntaxError> {
    let chars: Vec<(usize, char)> = src.char_indices().collect();
    let mut t = Translator {
        src,
        chars,
        i: 0,
        out: String::with_capacity(src.len() * 2),
        names: vec![None],
        open: 0,
        last: Last::Nothing,
        levels: vec![0],
        atom_mult: 1,
        atom_seq: 0,
        atom_out: 0,
        group_out: Vec::new(),
        deferred_flags: None,
    };
    t.run()?;
    Ok(Translated {
        pattern: t.out,
        names: t.names,
    })
}

struct Translator<'a> {
    src: &'a str,
    chars: Vec<(usize, char)>,
    i: usize,
    out: String,
    names: Vec<Option<String>>,
    open: usize,
    /// Per open group, the largest product of counted repetitions inside (Go limits any
    /// nesting of `{n,m}` to 1000 copies of the innermost expression).
    levels: Vec<u32>,
    /// That product for the last atom.
    atom_mult: u32,
    last: Last,
    /// Counts atoms, to tell whether a token made one.
    atom_seq: u64,
    /// Where the output of the last operand begins (a repetition may need to wrap it).
    atom_out: usize,
    /// Where the output of each open group begins.
    group_out: Vec<usize>,
    /// A flag group (`(?i)`) that followed an operand, held back until the next token:
    /// Go applies a repetition right after it to that operand (and forgets the nesting
    /// check), so `a+(?i)*` is `(?:a+)*` with the flags after. `true` until a repetition
    /// has used it.
    deferred_flags: Option<(String, bool)>,
}

impl Translator<'_> {
    fn peek(&self, k: usize) -> Option<char> {
        self.chars.get(self.i + k).map(|&(_, c)| c)
    }

    fn pos(&self, i: usize) -> usize {
        self.chars.get(i).map_or(self.src.len(), |&(p, _)| p)
    }

    fn rest_from(&self, i: usize) -> &str {
        &self.src[self.pos(i)..]
    }

    /// Before a group's opening output: writes held-back flags, and records where it begins.
    fn open_group_output(&mut self) {
        self.flush_flags();
        self.group_out.push(self.out.len());
    }

    /// Writes held-back flags (see [`Translator::deferred_flags`]).
    fn flush_flags(&mut self) {
        if let Some((flags, _)) = self.deferred_flags.take() {
            self.out.push_str(&flags);
        }
    }

    fn run(&mut self) -> Result<(), SyntaxError> {
        while let Some(c) = self.peek(0) {
            if !matches!(c, '*' | '+' | '?' | '{' | '(') {
                self.flush_flags();
            }
            let before = self.out.len();
            let seq = self.atom_seq;
            match c {
                '(' => {
                    self.group()?;
                    continue;
                }
                ')' => {
                    if self.open == 0 {
                        return Err(err("unexpected )", self.src));
                    }
                    self.open -= 1;
                    self.out.push(')');
                    self.i += 1;
                    let inner = if self.levels.len() > 1 {
                        self.levels.pop().unwrap_or(0)
                    } else {
                        1
                    };
                    self.set_atom(inner);
                    self.atom_out = self.group_out.pop().unwrap_or(0);
                    continue;
                }
                '|' => {
                    self.out.push('|');
                    self.i += 1;
                    self.last = Last::Nothing;
                }
                '*' | '+' | '?' => {
                    let start = self.i;
                    self.i += 1;
                    let mut op = c.to_string();
                    if self.peek(0) == Some('?') {
                        self.i += 1;
                        op.push('?');
                    }
                    self.repeat(start, &op)?;
                }
                '{' => match self.counted()? {
                    Some((start, op)) => self.repeat(start, &op)?,
                    None => {
                        self.flush_flags();
                        self.atom_out = self.out.len();
                        self.out.push_str("\\{");
                        self.i += 1;
                        self.set_atom(1);
                        continue;
                    }
                },
                '[' => self.class()?,
                '\\' => self.escape()?,
                '^' | '$' => {
                    self.out.push_str(&format!("(?:{c})"));
                    self.i += 1;
                    self.set_atom(1);
                }
                '.' => {
                    self.out.push('.');
                    self.i += 1;
                    self.set_atom(1);
                }
                other => {
                    self.literal(other);
                    self.i += 1;
                }
            }
            if self.atom_seq != seq {
                self.atom_out = before;
            }
        }
        self.flush_flags();
        if self.open > 0 {
            return Err(err("missing closing )", self.src));
        }
        Ok(())
    }

    fn literal(&mut self, c: char) {
        if c.is_ascii_punctuation() || c.is_ascii_whitespace() {
            self.out.push_str(&hex_char(c));
        } else {
            self.out.push(c);
        }
        self.set_atom(1);
    }

    /// Records an atom whose counted-repetition product is `mult`.
    fn set_atom(&mut self, mult: u32) {
        self.atom_seq += 1;
        self.last = Last::Atom;
        self.atom_mult = mult;
        if let Some(level) = self.levels.last_mut() {
            *level = (*level).max(mult);
        }
    }

    /// Emits a repetition operator after checking it has something to repeat.
    fn repeat(&mut self, start: usize, op: &str) -> Result<(), SyntaxError> {
        match self.deferred_flags.take() {
            Some((flags, true)) => {
                // The operand before the flags takes the operator; Rust needs it grouped.
                let operand = self.out.split_off(self.atom_out);
                self.out.push_str("(?:");
                self.out.push_str(&operand);
                self.out.push(')');
                self.last = Last::Atom;
                self.deferred_flags = Some((flags, false));
            }
            other => self.deferred_flags = other,
        }
        match self.last {
            Last::Nothing => return Err(err("missing argument to repetition operator", op)),
            Last::Repeat(prev) => {
                let text = &self.src[self.pos(prev)..self.pos(self.i)];
                return Err(err("invalid nested repetition operator", text));
            }
            Last::Atom => {}
        }
        if let Some(body) = op.strip_prefix('{') {
            let body = body.split('}').next().unwrap_or("");
            let (lo, hi) = body.split_once(',').unwrap_or((body, body));
            let factor: u32 = if hi.is_empty() {
                lo.parse().unwrap_or(0)
            } else {
                hi.parse().unwrap_or(0)
            };
            let product = self.atom_mult.saturating_mul(factor);
            if product > MAX_REPEAT {
                return Err(err("invalid repeat count", format!("{{{body}}}")));
            }
            self.atom_mult = product;
            if let Some(level) = self.levels.last_mut() {
                *level = (*level).max(product);
            }
        }
        self.out.push_str(op);
        self.last = Last::Repeat(start);
        Ok(())
    }

    /// `{n}`, `{n,}`, `{n,m}` (with an optional lazy `?`): the start and text, or `None`
    /// when the brace starts no repetition (then it is a literal).
    fn counted(&mut self) -> Result<Option<(usize, String)>, SyntaxError> {
        let start = self.i;
        let rest = self.rest_from(start);
        let Some(close) = rest.find('}') else {
            return Ok(None);
        };
        let body = &rest[1..close];
        let (lo, hi) = match body.split_once(',') {
            Some((lo, hi)) => (lo, Some(hi)),
            None => (body, None),
        };
        let is_num = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !is_num(lo) || hi.is_some_and(|h| !h.is_empty() && !is_num(h)) {
            return Ok(None);
        }
        let text = &rest[..=close];
        let n = lo.parse::<u32>().unwrap_or(u32::MAX);
        let m = match hi {
            None => Some(n),
            Some("") => None,
            Some(h) => Some(h.parse::<u32>().unwrap_or(u32::MAX)),
        };
        if n > MAX_REPEAT || m.is_some_and(|m| m > MAX_REPEAT || m < n) {
            return Err(err("invalid repeat count", text));
        }
        let mut op = text.to_string();
        self.i += text.chars().count();
        if self.peek(0) == Some('?') {
            self.i += 1;
            op.push('?');
        }
        Ok(Some((start, op)))
    }

    fn group(&mut self) -> Result<(), SyntaxError> {
        let start = self.i;
        if self.peek(1) != Some('?') {
            self.i += 1;
            self.open += 1;
            self.levels.push(0);
            self.names.push(None);
            self.open_group_output();
            self.out.push('(');
            self.last = Last::Nothing;
            return Ok(());
        }
        let rest = self.rest_from(start).to_string();
        let rest = rest.as_str();
        let named = rest
            .strip_prefix("(?P<")
            .map(|r| (r, 4))
            .or_else(|| rest.strip_prefix("(?<").map(|r| (r, 3)));
        if let Some((after, prefix_len)) = named {
            let Some(end) = after.find('>') else {
                return Err(err("invalid named capture", rest));
            };
            let name = &after[..end];
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(err("invalid named capture", &rest[..prefix_len + end + 1]));
            }
            self.names.push(Some(name.to_string()));
            self.i += rest[..prefix_len + end + 1].chars().count();
            self.open += 1;
            self.levels.push(0);
            self.open_group_output();
            self.out.push('(');
            self.last = Last::Nothing;
            return Ok(());
        }
        // Flags: (?flags) or (?flags:re), flags from "imsU" with at most one '-'.
        let mut j = self.i + 2;
        let mut seen_minus = false;
        let mut any_flag = false;
        loop {
            let Some(c) = self.chars.get(j).map(|&(_, c)| c) else {
                return Err(err(
                    "invalid or unsupported Perl syntax",
                    &self.src[self.pos(start)..],
                ));
            };
            match c {
                'i' | 'm' | 's' | 'U' => any_flag = true,
                '-' if !seen_minus => {
                    seen_minus = true;
                    any_flag = false;
                }
                ':' | ')' if any_flag || (!seen_minus && c == ':') => {
                    let text = self.src[self.pos(start)..self.pos(j + 1)].to_string();
                    self.i = j + 1;
                    if c == ')' && !matches!(self.last, Last::Nothing) {
                        // Held back: a repetition next applies to the operand before it.
                        let mut held = self.deferred_flags.take().map(|(f, _)| f).unwrap_or_default();
                        held.push_str(&text);
                        self.deferred_flags = Some((held, true));
                        return Ok(());
                    }
                    if c == ':' {
                        self.open_group_output();
                    } else {
                        self.flush_flags();
                    }
                    self.out.push_str(&text);
                    if c == ':' {
                        self.open += 1;
                        self.levels.push(0);
                        self.last = Last::Nothing;
                    }
                    return Ok(());
                }
                _ => {
                    let text = &self.src[self.pos(start)..self.pos(j + 1)];
                    return Err(err("invalid or unsupported Perl syntax", text));
                }
            }
            j += 1;
        }
    }

    fn escape(&mut self) -> Result<(), SyntaxError> {
        let Some(c) = self.peek(1) else {
            return Err(err("trailing backslash at end of expression", ""));
        };
        if let Some((body, negated)) = perl_class(c) {
            let neg = if negated { "^" } else { "" };
            self.out.push_str(&format!("[{neg}{body}]"));
            self.i += 2;
            self.set_atom(1);
            return Ok(());
        }
        match c {
            'b' | 'B' => {
                self.out.push_str(&format!("(?-u:\\{c})"));
                self.i += 2;
                self.set_atom(1);
            }
            'A' | 'z' => {
                self.out.push_str(&format!("(?:\\{c})"));
                self.i += 2;
                self.set_atom(1);
            }
            'Q' => {
                self.i += 2;
                let rest = self.rest_from(self.i);
                let (lit, skip_end) = match rest.find("\\E") {
                    Some(e) => (&rest[..e], true),
                    None => (rest, false),
                };
                let lit = lit.to_string();
                self.i += lit.chars().count() + if skip_end { 2 } else { 0 };
                for ch in lit.chars() {
                    self.literal(ch);
                }
            }
            'p' | 'P' => {
                let text = self.unicode_class_text();
                let rust = Self::rust_unicode_class(&text);
                if regex::Regex::new(&rust).is_err() {
                    return Err(err("invalid character class range", text));
                }
                self.i += text.chars().count();
                self.out.push_str(&rust);
                self.set_atom(1);
            }
            _ => {
                let ch = self.single_escape()?;
                self.out.push_str(&hex_char(ch));
                self.set_atom(1);
            }
        }
        Ok(())
    }

    /// `\pL`, `\p{Greek}`, `\P{^L}`… as written, starting at the backslash.
    /// A Unicode class in the `regex` crate's spelling (`\p{^L}` becomes `\P{L}`).
    fn rust_unicode_class(text: &str) -> String {
        match text.get(2..4) {
            Some("{^") => {
                let flipped = if text.starts_with("\\p") { "\\P" } else { "\\p" };
                format!("{flipped}{{{}", &text[4..])
            }
            _ => text.to_string(),
        }
    }

    fn unicode_class_text(&self) -> String {
        let rest = self.rest_from(self.i);
        let after = &rest[2..];
        let len = if after.starts_with('{') {
            after.find('}').map_or(after.len(), |e| e + 1)
        } else {
            after.chars().next().map_or(0, char::len_utf8)
        };
        rest[..2 + len].to_string()
    }

    /// An escape that stands for one character (at `self.i`, a backslash); advances past it.
    fn single_escape(&mut self) -> Result<char, SyntaxError> {
        let start = self.i;
        let c = self
            .peek(1)
            .ok_or_else(|| err("trailing backslash at end of expression", ""))?;
        self.i += 2;
        let simple = match c {
            'a' => Some('\x07'),
            'f' => Some('\x0C'),
            't' => Some('\t'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            'v' => Some('\x0B'),
            c if c.is_ascii_punctuation() => Some(c),
            _ => None,
        };
        if let Some(ch) = simple {
            return Ok(ch);
        }
        let invalid = |t: &Self, end: usize| err("invalid escape sequence", &t.src[t.pos(start)..t.pos(end)]);
        match c {
            // Octal: `\0` and up to two more digits, or `\1`..`\7` followed by at least one
            // more (a lone `\1` would be a backreference, which RE2 does not have).
            '0'..='7' => {
                if c != '0' && !self.peek(0).is_some_and(|d| ('0'..='7').contains(&d)) {
                    return Err(invalid(self, self.i));
                }
                let mut v = c.to_digit(8).unwrap_or(0);
                let mut k = 0;
                while k < 2 && self.peek(0).is_some_and(|d| ('0'..='7').contains(&d)) {
                    v = v * 8 + self.peek(0).and_then(|d| d.to_digit(8)).unwrap_or(0);
                    self.i += 1;
                    k += 1;
                }
                char::from_u32(v).ok_or_else(|| invalid(self, self.i))
            }
            'x' => {
                if self.peek(0) == Some('{') {
                    let mut v: u32 = 0;
                    let mut digits = 0;
                    self.i += 1;
                    while let Some(d) = self.peek(0).and_then(|d| d.to_digit(16)) {
                        v = v.saturating_mul(16).saturating_add(d);
                        digits += 1;
                        self.i += 1;
                    }
                    if digits == 0 && self.peek(0) == Some('}') {
                        return Err(invalid(self, self.i + 1));
                    }
                    if digits == 0 || v > 0x10FFFF || self.peek(0) != Some('}') {
                        return Err(invalid(self, self.i));
                    }
                    self.i += 1;
                    char::from_u32(v).ok_or_else(|| invalid(self, self.i))
                } else {
                    let hi = self.peek(0).and_then(|d| d.to_digit(16));
                    let lo = self.peek(1).and_then(|d| d.to_digit(16));
                    match (hi, lo) {
                        (Some(h), Some(l)) => {
                            self.i += 2;
                            char::from_u32(h * 16 + l).ok_or_else(|| invalid(self, self.i))
                        }
                        _ => Err(invalid(self, (self.i + 2).min(self.chars.len()))),
                    }
                }
            }
            _ => Err(invalid(self, self.i)),
        }
    }

    fn class(&mut self) -> Result<(), SyntaxError> {
        let start = self.i;
        let missing = |t: &Self| err("missing closing ]", t.rest_from(start));
        self.i += 1;
        let mut body = String::new();
        if self.peek(0) == Some('^') {
            body.push('^');
            self.i += 1;
        }
        let mut first = true;
        loop {
            let Some(c) = self.peek(0) else {
                return Err(missing(self));
            };
            if c == ']' && !first {
                self.i += 1;
                break;
            }
            first = false;
            // POSIX classes.
            if c == '['
                && self.peek(1) == Some(':')
                && let Some(end) = self.rest_from(self.i).find(":]")
            {
                let text = self.rest_from(self.i)[..end + 2].to_string();
                let name = text[2..text.len() - 2].trim_start_matches('^');
                if !POSIX.contains(&name) {
                    return Err(err("invalid character class range", text));
                }
                self.i += text.chars().count();
                body.push_str(&text);
                continue;
            }
            if c == '\\' {
                match self.peek(1) {
                    Some(p) if perl_class(p).is_some() => {
                        if let Some((set, negated)) = perl_class(p) {
                            if negated {
                                body.push_str(&format!("[^{set}]"));
                            } else {
                                body.push_str(set);
                            }
                        }
                        self.i += 2;
                        continue;
                    }
                    Some('p' | 'P') => {
                        let text = self.unicode_class_text();
                        let rust = Self::rust_unicode_class(&text);
                        if regex::Regex::new(&rust).is_err() {
                            return Err(err("invalid character class range", text));
                        }
                        self.i += text.chars().count();
                        body.push_str(&rust);
                        continue;
                    }
                    None => return Err(missing(self)),
                    _ => {}
                }
            }
            let lo_start = self.i;
            let lo = self.class_char()?;
            if self.peek(0) == Some('-') && self.peek(1).is_some_and(|n| n != ']') {
                self.i += 1;
                let hi = self.class_char()?;
                if hi < lo {
                    let text = &self.src[self.pos(lo_start)..self.pos(self.i)];
                    return Err(err("invalid character class range", text));
                }
                body.push_str(&format!("{}-{}", hex_char(lo), hex_char(hi)));
            } else {
                body.push_str(&hex_char(lo));
            }
        }
        self.out.push('[');
        self.out.push_str(&body);
        self.out.push(']');
        self.set_atom(1);
        Ok(())
    }

    /// One character of a class, possibly escaped.
    fn class_char(&mut self) -> Result<char, SyntaxError> {
        match self.peek(0) {
            Some('\\') => self.single_escape(),
            Some(c) => {
                self.i += 1;
                Ok(c)
            }
            None => Err(err("missing closing ]", "")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(p: &str) -> String {
        translate(p).err().map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn a_repetition_after_flags_applies_to_the_operand_before_them() {
        let out = |p: &str| translate(p).map(|t| t.pattern).unwrap_or_default();
        assert_eq!(out("a+(?i)*b"), "(?:a+)*(?i)b");
        assert_eq!(out("(a)(?s){2}"), "(?:(a)){2}(?s)");
        // Flags that follow a group's opening stay inside it.
        assert_eq!(out("((?i)a)"), "((?i)a)");
        assert_eq!(out("a(?i)"), "a(?i)");
    }

    #[test]
    fn go_error_messages() {
        assert_eq!(msg("("), "error parsing regexp: missing closing ): `(`");
        assert_eq!(msg(")"), "error parsing regexp: unexpected ): `)`");
        assert_eq!(
            msg("a**"),
            "error parsing regexp: invalid nested repetition operator: `**`"
        );
        assert_eq!(
            msg("x{2}{3}"),
            "error parsing regexp: invalid nested repetition operator: `{2}{3}`"
        );
        assert_eq!(
            msg("*a"),
            "error parsing regexp: missing argument to repetition operator: `*`"
        );
        assert_eq!(msg("[a"), "error parsing regexp: missing closing ]: `[a`");
        assert_eq!(
            msg("a{1001}"),
            "error parsing regexp: invalid repeat count: `{1001}`"
        );
        assert_eq!(msg("\\Z"), "error parsing regexp: invalid escape sequence: `\\Z`");
        assert_eq!(
            msg("(?x)a"),
            "error parsing regexp: invalid or unsupported Perl syntax: `(?x`"
        );
        assert_eq!(
            msg("[z-a]"),
            "error parsing regexp: invalid character class range: `z-a`"
        );
        assert_eq!(
            msg("\\"),
            "error parsing regexp: trailing backslash at end of expression: ``"
        );
        assert_eq!(
            msg("(?P<>a)"),
            "error parsing regexp: invalid named capture: `(?P<>`"
        );
        assert_eq!(
            msg("\\x{110000}"),
            "error parsing regexp: invalid escape sequence: `\\x{110000`"
        );
        assert_eq!(
            msg("[[:foo:]]"),
            "error parsing regexp: invalid character class range: `[:foo:]`"
        );
    }

    #[test]
    fn accepted_go_syntax_compiles() {
        for p in [
            "x{",
            "a{,3}",
            "\\Q.*\\E",
            "\\0",
            "\\012",
            "^*",
            "$+",
            "[a&&b]",
            "[\\d-z]",
            "(?P<n>a)(?P<n>b)",
            "(?i)a",
            "(?U)a+",
            "[]a]",
            "[^]a]",
        ] {
            let t = translate(p).unwrap_or_else(|e| panic!("{p}: {e}"));
            assert!(regex::Regex::new(&t.pattern).is_ok(), "{p} -> {}", t.pattern);
        }
    }
}
