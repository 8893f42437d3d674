//! Lexer for the text/template language.
//!
//! Produces tokens on demand, the way Go's lexer does: text outside actions, then inside
//! `{{ … }}` spaces (significant: they separate arguments), operators, literals, fields,
//! variables and keywords. Trim markers (`{{- ` and ` -}}`) are applied here by cutting the
//! neighbouring text; comments are dropped. A lexical error becomes an [`Kind::Error`] token
//! carrying Go's message, after which only [`Kind::Eof`] follows.

use std::borrow::Cow;
use std::fmt;

const LEFT_DELIM: &str = "{{";
const RIGHT_DELIM: &str = "}}";
const LEFT_COMMENT: &str = "/*";
const RIGHT_COMMENT: &str = "*/";
/// A trim marker is the `-` plus one space character next to the delimiter.
const TRIM_MARKER_LEN: usize = 2;

/// Token kinds (Go's item types). The ones after `Dot` are keywords.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Error,
    Eof,
    Text,
    LeftDelim,
    RightDelim,
    Space,
    Pipe,
    /// `=`
    Assign,
    /// `:=`
    Declare,
    LeftParen,
    RightParen,
    /// Any other printable ASCII character inside an action (`,`, `@`, …).
    Char,
    /// `'a'`
    CharConstant,
    Number,
    /// `1+2i`
    Complex,
    String,
    RawString,
    Bool,
    /// `.name`
    Field,
    /// `$` or `$name`
    Variable,
    Identifier,
    // ---- keywords ----
    Dot,
    Nil,
    Block,
    Break,
    Continue,
    Define,
    Else,
    End,
    If,
    Range,
    Template,
    With,
}

impl Kind {
    pub fn is_keyword(self) -> bool {
        matches!(
            self,
            Kind::Dot
                | Kind::Nil
                | Kind::Block
                | Kind::Break
                | Kind::Continue
                | Kind::Define
                | Kind::Else
                | Kind::End
                | Kind::If
                | Kind::Range
                | Kind::Template
                | Kind::With
        )
    }
}

/// One token: its kind, source text (or error message), byte offset and 1-based line.
#[derive(Debug, Clone, PartialEq)]
pub struct Token<'a> {
    pub kind: Kind,
    pub val: Cow<'a, str>,
    pub pos: usize,
    pub line: usize,
}

impl fmt::Display for Token<'_> {
    /// How Go's parser quotes a token in error messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Kind::Eof => f.write_str("EOF"),
            Kind::Error => f.write_str(&self.val),
            k if k.is_keyword() => write!(f, "<{}>", self.val),
            _ if self.val.len() > 10 => {
                let head: String = self.val.chars().take(10).collect();
                write!(f, "{}...", capstan_go::fmt::quote(&head))
            }
            _ => f.write_str(&capstan_go::fmt::quote(&self.val)),
        }
    }
}

fn keyword(word: &str) -> Option<Kind> {
    Some(match word {
        "." => Kind::Dot,
        "nil" => Kind::Nil,
        "block" => Kind::Block,
        "break" => Kind::Break,
        "continue" => Kind::Continue,
        "define" => Kind::Define,
        "else" => Kind::Else,
        "end" => Kind::End,
        "if" => Kind::If,
        "range" => Kind::Range,
        "template" => Kind::Template,
        "with" => Kind::With,
        _ => return None,
    })
}

/// Space characters as the lexer sees them (newlines are allowed inside actions).
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// Go's `isAlphaNumeric`: underscore, letters (`unicode.IsLetter`, categories L*) and
/// decimal digits (`unicode.IsDigit`, category Nd).
fn is_alpha_numeric(c: char) -> bool {
    use unicode_general_category::{GeneralCategory as G, get_general_category};
    if c.is_ascii() {
        return c == '_' || c.is_ascii_alphanumeric();
    }
    matches!(
        get_general_category(c),
        G::UppercaseLetter
            | G::LowercaseLetter
            | G::TitlecaseLetter
            | G::ModifierLetter
            | G::OtherLetter
            | G::DecimalNumber
    )
}

fn has_left_trim_marker(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0] == b'-' && is_space(char::from(b[1]))
}

fn has_right_trim_marker(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && is_space(char::from(b[0])) && b[1] == b'-'
}

/// Length of the leading run of space characters.
fn left_trim_len(s: &str) -> usize {
    s.len() - s.trim_start_matches(is_space).len()
}

/// Length of the trailing run of space characters.
fn right_trim_len(s: &str) -> usize {
    s.len() - s.trim_end_matches(is_space).len()
}

/// Go's `%#U`: `U+0021 '!'`, without the quoted form for unprintable characters.
pub fn go_char_u(c: char) -> String {
    if capstan_go::fmt::is_print(c) {
        format!("U+{:04X} '{c}'", u32::from(c))
    } else {
        format!("U+{:04X}", u32::from(c))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Text,
    Action,
    Done,
}

/// The lexer: call [`Lexer::next_token`] until it returns [`Kind::Eof`].
pub struct Lexer<'a> {
    input: &'a str,
    /// Start of the token being scanned.
    start: usize,
    /// Current scan position.
    pos: usize,
    /// Line of `start`, and the offset it was counted up to.
    start_line: usize,
    paren_depth: usize,
    mode: Mode,
}

impl<'a> Lexer<'a> {
    pub fn new(input: &'a str) -> Lexer<'a> {
        Lexer {
            input,
            start: 0,
            pos: 0,
            start_line: 1,
            paren_depth: 0,
            mode: Mode::Text,
        }
    }

    fn rest(&self) -> &'a str {
        self.input.get(self.pos..).unwrap_or("")
    }

    fn peek_char(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn next_char(&mut self) -> Option<char> {
        let c = self.peek_char()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    /// Consumes one character if it is in `set`.
    fn accept(&mut self, set: &str) -> bool {
        match self.peek_char() {
            Some(c) if set.contains(c) => {
                self.pos += c.len_utf8();
                true
            }
            _ => false,
        }
    }

    fn accept_run(&mut self, set: &str) {
        while self.accept(set) {}
    }

    /// Moves `start` to `pos`, counting the lines skipped.
    fn advance_start(&mut self) {
        let skipped = self.input.get(self.start..self.pos).unwrap_or("");
        self.start_line += skipped.bytes().filter(|&b| b == b'\n').count();
        self.start = self.pos;
    }

    /// The token `start..pos`, then starts the next one.
    fn emit(&mut self, kind: Kind) -> Token<'a> {
        let tok = Token {
            kind,
            val: Cow::Borrowed(self.input.get(self.start..self.pos).unwrap_or("")),
            pos: self.start,
            line: self.start_line,
        };
        self.advance_start();
        tok
    }

    fn error(&mut self, msg: String) -> Token<'a> {
        self.mode = Mode::Done;
        Token {
            kind: Kind::Error,
            val: Cow::Owned(msg),
            pos: self.start,
            line: self.start_line,
        }
    }

    fn eof(&self) -> Token<'a> {
        Token {
            kind: Kind::Eof,
            val: Cow::Borrowed(""),
            pos: self.pos,
            line: self.start_line,
        }
    }

    /// The next token; [`Kind::Eof`] forever once the input or an error is reached.
    pub fn next_token(&mut self) -> Token<'a> {
        loop {
            let tok = match self.mode {
                Mode::Done => return self.eof(),
                Mode::Text => self.lex_text(),
                Mode::Action => self.lex_inside_action(),
            };
            if let Some(tok) = tok {
                if tok.kind == Kind::Eof {
                    self.mode = Mode::Done;
                }
                return tok;
            }
        }
    }

    /// Text up to the next left delimiter (then the delimiter itself, or a comment).
    fn lex_text(&mut self) -> Option<Token<'a>> {
        let Some(x) = self.rest().find(LEFT_DELIM) else {
            self.pos = self.input.len();
            if self.pos > self.start {
                return Some(self.emit(Kind::Text));
            }
            return Some(self.emit(Kind::Eof));
        };
        if x > 0 {
            self.pos += x;
            let delim_end = self.pos + LEFT_DELIM.len();
            let trim = if has_left_trim_marker(self.input.get(delim_end..).unwrap_or("")) {
                right_trim_len(self.input.get(self.start..self.pos).unwrap_or(""))
            } else {
                0
            };
            self.pos -= trim;
            let text = (self.pos > self.start).then(|| self.emit(Kind::Text));
            self.pos += trim;
            self.advance_start();
            if text.is_some() {
                return text;
            }
        }
        self.lex_left_delim()
    }

    fn lex_left_delim(&mut self) -> Option<Token<'a>> {
        self.pos += LEFT_DELIM.len();
        let trim = has_left_trim_marker(self.rest());
        let after_marker = if trim { TRIM_MARKER_LEN } else { 0 };
        if self
            .input
            .get(self.pos + after_marker..)
            .unwrap_or("")
            .starts_with(LEFT_COMMENT)
        {
            self.pos += after_marker;
            self.advance_start();
            return self.lex_comment();
        }
        let tok = Token {
            kind: Kind::LeftDelim,
            val: Cow::Borrowed(LEFT_DELIM),
            pos: self.start,
            line: self.start_line,
        };
        self.pos += after_marker;
        self.advance_start();
        self.paren_depth = 0;
        self.mode = Mode::Action;
        Some(tok)
    }

    /// Skips a `/* … */` comment, which must be followed directly by the right delimiter.
    fn lex_comment(&mut self) -> Option<Token<'a>> {
        self.pos += LEFT_COMMENT.len();
        let Some(x) = self.rest().find(RIGHT_COMMENT) else {
            return Some(self.error("unclosed comment".into()));
        };
        self.pos += x + RIGHT_COMMENT.len();
        let (delim, trim) = self.at_right_delim();
        if !delim {
            return Some(self.error("comment ends before closing delimiter".into()));
        }
        if trim {
            self.pos += TRIM_MARKER_LEN;
        }
        self.pos += RIGHT_DELIM.len();
        if trim {
            self.pos += left_trim_len(self.rest());
        }
        self.advance_start();
        None
    }

    /// Whether a right delimiter (and whether a trim marker before it) starts at `pos`.
    fn at_right_delim(&self) -> (bool, bool) {
        let rest = self.rest();
        if has_right_trim_marker(rest) && rest.get(TRIM_MARKER_LEN..).unwrap_or("").starts_with(RIGHT_DELIM) {
            return (true, true);
        }
        (rest.starts_with(RIGHT_DELIM), false)
    }

    fn lex_right_delim(&mut self, trim: bool) -> Token<'a> {
        if trim {
            self.pos += TRIM_MARKER_LEN;
            self.advance_start();
        }
        self.pos += RIGHT_DELIM.len();
        let tok = self.emit(Kind::RightDelim);
        if trim {
            self.pos += left_trim_len(self.rest());
            self.advance_start();
        }
        self.mode = Mode::Text;
        tok
    }

    fn lex_inside_action(&mut self) -> Option<Token<'a>> {
        let (delim, trim) = self.at_right_delim();
        if delim {
            if self.paren_depth == 0 {
                return Some(self.lex_right_delim(trim));
            }
            return Some(self.error("unclosed left paren".into()));
        }
        let Some(c) = self.next_char() else {
            return Some(self.error("unclosed action".into()));
        };
        Some(match c {
            c if is_space(c) => {
                self.pos -= 1;
                return self.lex_space();
            }
            '=' => self.emit(Kind::Assign),
            ':' => {
                if self.next_char() != Some('=') {
                    return Some(self.error("expected :=".into()));
                }
                self.emit(Kind::Declare)
            }
            '|' => self.emit(Kind::Pipe),
            '"' => self.lex_quote(),
            '`' => self.lex_raw_quote(),
            '$' => self.lex_field_or_variable(Kind::Variable),
            '\'' => self.lex_char(),
            // `.` starts a field unless a digit (or the end of input) follows: then a number.
            '.' if self.peek_char().is_some_and(|d| !d.is_ascii_digit()) => {
                self.lex_field_or_variable(Kind::Field)
            }
            '.' | '+' | '-' | '0'..='9' => {
                self.pos -= 1;
                self.lex_number()
            }
            c if is_alpha_numeric(c) => {
                self.pos -= c.len_utf8();
                self.lex_identifier()
            }
            '(' => {
                self.paren_depth += 1;
                self.emit(Kind::LeftParen)
            }
            ')' => {
                if self.paren_depth == 0 {
                    return Some(self.error("unexpected right paren".into()));
                }
                self.paren_depth -= 1;
                self.emit(Kind::RightParen)
            }
            c if c.is_ascii() && !c.is_ascii_control() => self.emit(Kind::Char),
            c => return Some(self.error(format!("unrecognized character in action: {}", go_char_u(c)))),
        })
    }

    /// A run of spaces; a space that belongs to a ` -}}` trim marker is left for it.
    fn lex_space(&mut self) -> Option<Token<'a>> {
        let mut count = 0;
        while self.peek_char().is_some_and(is_space) {
            self.pos += 1;
            count += 1;
        }
        let before = self.input.get(self.pos - 1..).unwrap_or("");
        if has_right_trim_marker(before)
            && before
                .get(TRIM_MARKER_LEN..)
                .unwrap_or("")
                .starts_with(RIGHT_DELIM)
        {
            self.pos -= 1;
            if count == 1 {
                return None;
            }
        }
        Some(self.emit(Kind::Space))
    }

    fn lex_quote(&mut self) -> Token<'a> {
        loop {
            match self.next_char() {
                Some('\\') => {
                    if matches!(self.next_char(), None | Some('\n')) {
                        return self.error("unterminated quoted string".into());
                    }
                }
                None | Some('\n') => return self.error("unterminated quoted string".into()),
                Some('"') => return self.emit(Kind::String),
                Some(_) => {}
            }
        }
    }

    fn lex_raw_quote(&mut self) -> Token<'a> {
        match self.rest().find('`') {
            Some(x) => {
                self.pos += x + 1;
                self.emit(Kind::RawString)
            }
            None => self.error("unterminated raw quoted string".into()),
        }
    }

    fn lex_char(&mut self) -> Token<'a> {
        loop {
            match self.next_char() {
                Some('\\') => {
                    if matches!(self.next_char(), None | Some('\n')) {
                        return self.error("unterminated character constant".into());
                    }
                }
                None | Some('\n') => return self.error("unterminated character constant".into()),
                Some('\'') => return self.emit(Kind::CharConstant),
                Some(_) => {}
            }
        }
    }

    /// Whether the next character may end a field, variable or identifier.
    fn at_terminator(&self) -> bool {
        match self.peek_char() {
            None => true,
            Some(c) if is_space(c) => true,
            Some('.' | ',' | '|' | ':' | ')' | '(') => true,
            Some(_) => self.rest().starts_with(RIGHT_DELIM),
        }
    }

    /// After `$` or `.`: the name, if any.
    fn lex_field_or_variable(&mut self, kind: Kind) -> Token<'a> {
        if self.at_terminator() {
            return self.emit(if kind == Kind::Variable {
                Kind::Variable
            } else {
                Kind::Dot
            });
        }
        while self.peek_char().is_some_and(is_alpha_numeric) {
            self.next_char();
        }
        if !self.at_terminator() {
            return self.bad_character();
        }
        self.emit(kind)
    }

    fn bad_character(&mut self) -> Token<'a> {
        let c = self.peek_char().unwrap_or('\u{fffd}');
        self.error(format!("bad character {}", go_char_u(c)))
    }

    fn lex_identifier(&mut self) -> Token<'a> {
        while self.peek_char().is_some_and(is_alpha_numeric) {
            self.next_char();
        }
        if !self.at_terminator() {
            return self.bad_character();
        }
        let word = self.input.get(self.start..self.pos).unwrap_or("");
        let kind = match keyword(word) {
            Some(k) => k,
            None if word == "true" || word == "false" => Kind::Bool,
            None => Kind::Identifier,
        };
        self.emit(kind)
    }

    fn lex_number(&mut self) -> Token<'a> {
        if !self.scan_number() {
            return self.bad_number();
        }
        if matches!(self.peek_char(), Some('+' | '-')) {
            // A complex number like 1+2i: no spaces, must end in 'i'.
            if !self.scan_number() || !self.input.get(..self.pos).unwrap_or("").ends_with('i') {
                return self.bad_number();
            }
            return self.emit(Kind::Complex);
        }
        self.emit(Kind::Number)
    }

    fn bad_number(&mut self) -> Token<'a> {
        let text = self.input.get(self.start..self.pos).unwrap_or("");
        let msg = format!("bad number syntax: {}", capstan_go::fmt::quote(text));
        self.error(msg)
    }

    /// Scans a number's characters loosely (validation happens in the parser); false when an
    /// alphanumeric character follows, which is then included in the error.
    fn scan_number(&mut self) -> bool {
        self.accept("+-");
        let mut digits = "0123456789_";
        if self.accept("0") {
            if self.accept("xX") {
                digits = "0123456789abcdefABCDEF_";
            } else if self.accept("oO") {
                digits = "01234567_";
            } else if self.accept("bB") {
                digits = "01_";
            }
        }
        self.accept_run(digits);
        if self.accept(".") {
            self.accept_run(digits);
        }
        if digits.len() == 11 && self.accept("eE") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        if digits.len() == 23 && self.accept("pP") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        self.accept("i");
        if self.peek_char().is_some_and(is_alpha_numeric) {
            self.next_char();
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lex(s: &str) -> Vec<(Kind, String)> {
        let mut l = Lexer::new(s);
        let mut out = Vec::new();
        loop {
            let t = l.next_token();
            let k = t.kind;
            out.push((k, t.val.into_owned()));
            if k == Kind::Eof || k == Kind::Error {
                return out;
            }
        }
    }

    fn kinds(s: &str) -> Vec<Kind> {
        lex(s).into_iter().map(|(k, _)| k).collect()
    }

    #[test]
    fn text_and_action() {
        use Kind::*;
        assert_eq!(
            kinds("a{{.x | f 1}}b"),
            vec![
                Text, LeftDelim, Field, Space, Pipe, Space, Identifier, Space, Number, RightDelim, Text, Eof
            ]
        );
    }

    #[test]
    fn trim_markers_cut_neighbouring_space() {
        let toks = lex("a \n{{- 3 -}}\n b");
        assert_eq!(toks[0], (Kind::Text, "a".into()));
        assert_eq!(toks[2], (Kind::Number, "3".into()));
        assert_eq!(toks[4], (Kind::Text, "b".into()));
    }

    #[test]
    fn minus_without_space_is_a_number() {
        assert_eq!(lex("{{-3}}")[1], (Kind::Number, "-3".into()));
    }

    #[test]
    fn comments_are_dropped() {
        assert_eq!(
            kinds("a {{- /* x */ -}} b"),
            vec![Kind::Text, Kind::Text, Kind::Eof]
        );
        assert_eq!(
            lex("{{/* x */ }}").last().map(|t| t.1.clone()),
            Some("comment ends before closing delimiter".into())
        );
    }

    #[test]
    fn lexical_errors() {
        let last = |s: &str| lex(s).pop().map(|t| t.1).unwrap_or_default();
        assert_eq!(last("{{ 1"), "unclosed action");
        assert_eq!(last("{{ ( }}"), "unclosed left paren");
        assert_eq!(last("{{ ) }}"), "unexpected right paren");
        assert_eq!(last("{{ .a!b }}"), "bad character U+0021 '!'");
        assert_eq!(last("{{ \"a }}"), "unterminated quoted string");
        assert_eq!(last("{{ 'a }}"), "unterminated character constant");
        assert_eq!(last("{{ `a }}"), "unterminated raw quoted string");
        assert_eq!(last("{{ : }}"), "expected :=");
        assert_eq!(
            last("{{ \u{2603} }}"),
            "unrecognized character in action: U+2603 '\u{2603}'"
        );
    }

    #[test]
    fn keywords_and_variables() {
        use Kind::*;
        assert_eq!(
            kinds("{{range $i, $v := .}}"),
            vec![
                LeftDelim, Range, Space, Variable, Char, Space, Variable, Space, Declare, Space, Dot,
                RightDelim, Eof
            ]
        );
    }

    #[test]
    fn lines_count_newlines_before_token() {
        let mut l = Lexer::new("a\nb{{\n.x}}");
        let lines: Vec<usize> = std::iter::from_fn(|| {
            let t = l.next_token();
            (t.kind != Kind::Eof).then_some(t.line)
        })
        .collect();
        assert_eq!(lines, vec![1, 2, 2, 3, 3]);
    }
}
