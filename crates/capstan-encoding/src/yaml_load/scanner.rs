//! The tokenizer: YAML 1.1 characters → tokens, with go-yaml v2's (libyaml's) token model,
//! simple-key rules and error texts, so malformed input fails with the messages Helm prints.

use super::error::{Mark, SyntaxError};

/// How a scalar was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarStyle {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TokenKind {
    StreamStart,
    StreamEnd,
    /// `%YAML major.minor`.
    VersionDirective {
        major: u32,
        minor: u32,
    },
    // Rare tokens keep their texts boxed and the error behind a pointer, so a token (one per
    // scalar, key and indicator of a document that may be megabytes long) stays small.
    TagDirective {
        handle: Box<str>,
        prefix: Box<str>,
    },
    DocumentStart,
    DocumentEnd,
    BlockSequenceStart,
    BlockMappingStart,
    BlockEnd,
    FlowSequenceStart,
    FlowSequenceEnd,
    FlowMappingStart,
    FlowMappingEnd,
    BlockEntry,
    FlowEntry,
    Key,
    Value,
    Alias(String),
    Anchor(String),
    Tag {
        handle: Box<str>,
        suffix: Box<str>,
    },
    Scalar {
        value: String,
        style: ScalarStyle,
    },
    /// The scanner failed here; the parser reports it when (and only if) it gets this far.
    Error(Box<SyntaxError>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub kind: TokenKind,
    pub start: Mark,
    pub end: Mark,
}

/// Where a plain or flow node might turn out to be a mapping key (a "simple key").
#[derive(Debug, Clone, Copy, Default)]
struct SimpleKey {
    possible: bool,
    required: bool,
    token_number: usize,
    mark: Mark,
}

/// Far enough for a simple key; longer candidates stop being keys (a YAML rule).
const MAX_SIMPLE_KEY_LEN: usize = 1024;
/// Nesting bound (flow levels and block indentation levels).
pub const MAX_DEPTH: usize = 10000;

type ScanResult<T> = Result<T, SyntaxError>;

pub struct Scanner<'a> {
    chars: &'a [char],
    mark: Mark,
    tokens: Vec<Token>,
    flow_level: usize,
    indent: i64,
    indents: Vec<i64>,
    simple_key_allowed: bool,
    simple_keys: Vec<SimpleKey>,
    /// Which saved simple keys hold back the token at their number (token number → level).
    /// go-yaml forgets an entry when a flow level opened at that same token closes, which
    /// lets `{` of `{: x}` through to the parser early; kept to report the same error.
    blocking: std::collections::HashMap<usize, usize>,
    /// How many tokens the parser has been given (the rest wait on a simple key).
    released: usize,
}

/// Tokenizes the whole input into `tokens` (emptied first, its capacity reused). A scanning
/// error becomes a final `Error` token placed where the parser would have met it (tokens
/// still waiting on a pending simple key are dropped).
pub fn tokenize_into(chars: &[char], tokens: &mut Vec<Token>) {
    tokens.clear();
    let mut s = Scanner {
        chars,
        mark: Mark::default(),
        tokens: std::mem::take(tokens),
        flow_level: 0,
        indent: -1,
        indents: Vec::new(),
        simple_key_allowed: false,
        simple_keys: vec![SimpleKey::default()],
        blocking: std::collections::HashMap::new(),
        released: 0,
    };
    if let Err(err) = s.run().and_then(|()| s.release_tokens()) {
        // The parser only ever saw the tokens released before the failure.
        s.tokens.truncate(s.released);
        let mark = err.problem_mark;
        s.tokens.push(Token {
            kind: TokenKind::Error(Box::new(err)),
            start: mark,
            end: mark,
        });
    }
    *tokens = s.tokens;
}

fn is_blank(c: Option<char>) -> bool {
    matches!(c, Some(' ') | Some('\t'))
}

fn is_break(c: Option<char>) -> bool {
    matches!(
        c,
        Some('\r') | Some('\n') | Some('\u{85}') | Some('\u{2028}') | Some('\u{2029}')
    )
}

fn is_breakz(c: Option<char>) -> bool {
    c.is_none() || is_break(c)
}

fn is_blankz(c: Option<char>) -> bool {
    is_blank(c) || is_breakz(c)
}

fn is_alpha(c: Option<char>) -> bool {
    matches!(c, Some(ch) if ch.is_ascii_alphanumeric() || ch == '_' || ch == '-')
}

fn is_uri_char(c: Option<char>) -> bool {
    matches!(c, Some(ch) if ch.is_ascii_alphanumeric() || "_-;/?:@&=+$,.!~*'()[]%".contains(ch))
}

impl<'a> Scanner<'a> {
    fn at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.mark.index + offset).copied()
    }

    fn ch(&self) -> Option<char> {
        self.at(0)
    }

    /// Moves past one non-break character.
    fn skip(&mut self) {
        self.mark.index += 1;
        self.mark.column += 1;
    }

    /// Moves past one line break (`\r\n` counts as one).
    fn skip_line(&mut self) {
        if self.ch() == Some('\r') && self.at(1) == Some('\n') {
            self.mark.index += 2;
        } else if is_break(self.ch()) {
            self.mark.index += 1;
        } else {
            return;
        }
        self.mark.column = 0;
        self.mark.line += 1;
    }

    fn read(&mut self, out: &mut String) {
        if let Some(c) = self.ch() {
            out.push(c);
        }
        self.skip();
    }

    /// Reads a line break, normalized to `\n` (the Unicode line/paragraph separators stay).
    fn read_line(&mut self, out: &mut String) {
        match self.ch() {
            Some('\r') | Some('\n') | Some('\u{85}') => out.push('\n'),
            Some(c @ ('\u{2028}' | '\u{2029}')) => out.push(c),
            _ => return,
        }
        self.skip_line();
    }

    fn err(&self, context: &'static str, context_mark: Mark, problem: &'static str) -> SyntaxError {
        SyntaxError::scanner(context, context_mark, problem, self.mark)
    }

    fn push(&mut self, kind: TokenKind, start: Mark) {
        let end = self.mark;
        self.tokens.push(Token { kind, start, end });
    }

    fn run(&mut self) -> ScanResult<()> {
        let start = self.mark;
        // A byte-order mark at the start of the stream is not content.
        if self.ch() == Some('\u{feff}') {
            self.mark.index += 1;
        }
        self.push(TokenKind::StreamStart, start);
        self.simple_key_allowed = true;
        loop {
            self.release_tokens()?;
            self.scan_to_next_token();
            self.unroll_indent(self.mark.column as i64);
            if self.fetch_next_token()? {
                return Ok(());
            }
        }
    }

    fn scan_to_next_token(&mut self) {
        loop {
            while self.ch() == Some(' ')
                || ((self.flow_level > 0 || !self.simple_key_allowed) && self.ch() == Some('\t'))
            {
                self.skip();
            }
            if self.ch() == Some('#') {
                while !is_breakz(self.ch()) {
                    self.skip();
                }
            }
            if is_break(self.ch()) {
                self.skip_line();
                if self.flow_level == 0 {
                    self.simple_key_allowed = true;
                }
            } else {
                return;
            }
        }
    }

    /// The simple key the parser is waiting on (the earliest one still holding back its token)
    /// is re-checked before each fetch, at the position right after the previous token: a
    /// key that became stale there is dropped, or is an error when it was required.
    /// Hands tokens to the (simulated) parser as go-yaml's `fetch_more_tokens` does: the next
    /// token is held back while the simple key recorded at its number is still valid (checked
    /// at the current position, which may drop a stale key or fail on a required one).
    fn release_tokens(&mut self) -> ScanResult<()> {
        while self.released < self.tokens.len() {
            if let Some(&level) = self.blocking.get(&self.released)
                && self.key_is_valid(level)?
            {
                return Ok(());
            }
            self.released += 1;
        }
        Ok(())
    }

    /// go-yaml checks a simple key lazily, where it is used: a key is stale once the scanner
    /// has left its line or gone 1024 characters past it. A stale key is dropped, or is an
    /// error when it was required.
    fn key_is_valid(&mut self, level: usize) -> ScanResult<bool> {
        let mark = self.mark;
        let Some(key) = self.simple_keys.get_mut(level) else {
            return Ok(false);
        };
        if !key.possible {
            return Ok(false);
        }
        if key.mark.line < mark.line || key.mark.index + MAX_SIMPLE_KEY_LEN < mark.index {
            if key.required {
                let context_mark = key.mark;
                return Err(SyntaxError::scanner(
                    "while scanning a simple key",
                    context_mark,
                    "could not find expected ':'",
                    mark,
                ));
            }
            key.possible = false;
            return Ok(false);
        }
        Ok(true)
    }

    /// Returns true at the end of the stream.
    fn fetch_next_token(&mut self) -> ScanResult<bool> {
        let c = match self.ch() {
            None => {
                self.fetch_stream_end()?;
                return Ok(true);
            }
            Some(c) => c,
        };
        let next = self.at(1);
        if self.mark.column == 0 {
            if c == '%' {
                self.fetch_directive()?;
                return Ok(false);
            }
            let three: String = (0..3).filter_map(|i| self.at(i)).collect();
            if (three == "---" || three == "...") && is_blankz(self.at(3)) {
                let kind = if three == "---" {
                    TokenKind::DocumentStart
                } else {
                    TokenKind::DocumentEnd
                };
                self.fetch_document_indicator(kind)?;
                return Ok(false);
            }
        }
        match c {
            '[' => self.fetch_flow_collection_start(TokenKind::FlowSequenceStart)?,
            '{' => self.fetch_flow_collection_start(TokenKind::FlowMappingStart)?,
            ']' => self.fetch_flow_collection_end(TokenKind::FlowSequenceEnd)?,
            '}' => self.fetch_flow_collection_end(TokenKind::FlowMappingEnd)?,
            ',' => self.fetch_flow_entry()?,
            '-' if is_blankz(next) => self.fetch_block_entry()?,
            '?' if self.flow_level > 0 || is_blankz(next) => self.fetch_key()?,
            ':' if self.flow_level > 0 || is_blankz(next) => self.fetch_value()?,
            '*' => self.fetch_anchor(true)?,
            '&' => self.fetch_anchor(false)?,
            '!' => self.fetch_tag()?,
            '|' if self.flow_level == 0 => self.fetch_block_scalar(true)?,
            '>' if self.flow_level == 0 => self.fetch_block_scalar(false)?,
            '\'' => self.fetch_flow_scalar(true)?,
            '"' => self.fetch_flow_scalar(false)?,
            _ => {
                let indicator = "-?:,[]{}#&*!|>'\"%@`".contains(c);
                let plain = !(is_blankz(Some(c)) || indicator)
                    || (c == '-' && !is_blank(next))
                    || (self.flow_level == 0 && (c == '?' || c == ':') && !is_blankz(next));
                if !plain {
                    return Err(self.err(
                        "while scanning for the next token",
                        self.mark,
                        "found character that cannot start any token",
                    ));
                }
                self.fetch_plain_scalar()?;
            }
        }
        Ok(false)
    }

    fn save_simple_key(&mut self) -> ScanResult<()> {
        let required = self.flow_level == 0 && self.indent == self.mark.column as i64;
        if self.simple_key_allowed {
            self.remove_simple_key()?;
            let key = SimpleKey {
                possible: true,
                required,
                token_number: self.tokens.len(),
                mark: self.mark,
            };
            if let Some(slot) = self.simple_keys.last_mut() {
                *slot = key;
            }
            self.blocking.insert(key.token_number, self.simple_keys.len() - 1);
        }
        Ok(())
    }

    fn remove_simple_key(&mut self) -> ScanResult<()> {
        let mark = self.mark;
        if let Some(key) = self.simple_keys.last_mut() {
            if key.possible && key.required {
                let context_mark = key.mark;
                return Err(SyntaxError::scanner(
                    "while scanning a simple key",
                    context_mark,
                    "could not find expected ':'",
                    mark,
                ));
            }
            if key.possible {
                key.possible = false;
                let number = key.token_number;
                self.blocking.remove(&number);
            }
        }
        Ok(())
    }

    fn roll_indent(
        &mut self,
        column: i64,
        number: Option<usize>,
        kind: TokenKind,
        mark: Mark,
    ) -> ScanResult<()> {
        if self.flow_level > 0 {
            return Ok(());
        }
        if self.indent < column {
            if self.indents.len() >= MAX_DEPTH {
                return Err(self.err("", Mark::default(), "exceeded max depth of 10000"));
            }
            self.indents.push(self.indent);
            self.indent = column;
            let token = Token {
                kind,
                start: mark,
                end: mark,
            };
            match number {
                Some(n) if n <= self.tokens.len() => self.tokens.insert(n, token),
                _ => self.tokens.push(token),
            }
        }
        Ok(())
    }

    fn unroll_indent(&mut self, column: i64) {
        if self.flow_level > 0 {
            return;
        }
        while self.indent > column {
            let mark = self.mark;
            self.push(TokenKind::BlockEnd, mark);
            self.indent = self.indents.pop().unwrap_or(-1);
        }
    }

    fn fetch_stream_end(&mut self) -> ScanResult<()> {
        if self.mark.column != 0 {
            self.mark.column = 0;
            self.mark.line += 1;
        }
        self.unroll_indent(-1);
        self.remove_simple_key()?;
        self.simple_key_allowed = false;
        let mark = self.mark;
        self.push(TokenKind::StreamEnd, mark);
        Ok(())
    }

    fn fetch_document_indicator(&mut self, kind: TokenKind) -> ScanResult<()> {
        self.unroll_indent(-1);
        self.remove_simple_key()?;
        self.simple_key_allowed = false;
        let start = self.mark;
        for _ in 0..3 {
            self.skip();
        }
        self.push(kind, start);
        Ok(())
    }

    fn fetch_flow_collection_start(&mut self, kind: TokenKind) -> ScanResult<()> {
        self.save_simple_key()?;
        if self.flow_level >= MAX_DEPTH {
            return Err(self.err("", Mark::default(), "exceeded max depth of 10000"));
        }
        // The new level's (empty) slot carries the number of the `[`/`{` token.
        self.simple_keys.push(SimpleKey {
            token_number: self.tokens.len(),
            mark: self.mark,
            ..SimpleKey::default()
        });
        self.flow_level += 1;
        self.simple_key_allowed = true;
        self.push_indicator(kind)
    }

    fn fetch_flow_collection_end(&mut self, kind: TokenKind) -> ScanResult<()> {
        self.remove_simple_key()?;
        if self.flow_level > 0 {
            self.flow_level -= 1;
            if let Some(slot) = self.simple_keys.pop() {
                self.blocking.remove(&slot.token_number);
            }
        }
        self.simple_key_allowed = false;
        self.push_indicator(kind)
    }

    fn fetch_flow_entry(&mut self) -> ScanResult<()> {
        self.remove_simple_key()?;
        self.simple_key_allowed = true;
        self.push_indicator(TokenKind::FlowEntry)
    }

    fn fetch_block_entry(&mut self) -> ScanResult<()> {
        self.open_block_collection(
            TokenKind::BlockSequenceStart,
            "block sequence entries are not allowed in this context",
        )?;
        self.remove_simple_key()?;
        self.simple_key_allowed = true;
        self.push_indicator(TokenKind::BlockEntry)
    }

    fn fetch_key(&mut self) -> ScanResult<()> {
        self.open_block_collection(
            TokenKind::BlockMappingStart,
            "mapping keys are not allowed in this context",
        )?;
        self.remove_simple_key()?;
        self.simple_key_allowed = self.flow_level == 0;
        self.push_indicator(TokenKind::Key)
    }

    /// In block context, an entry or key indicator may open a block collection at its column
    /// (`start`); where no simple key may start, it is the given error.
    fn open_block_collection(&mut self, start: TokenKind, not_allowed: &'static str) -> ScanResult<()> {
        if self.flow_level > 0 {
            return Ok(());
        }
        if !self.simple_key_allowed {
            return Err(self.err("", Mark::default(), not_allowed));
        }
        let mark = self.mark;
        self.roll_indent(self.mark.column as i64, None, start, mark)
    }

    /// Consumes a one-character indicator and emits its token.
    fn push_indicator(&mut self, kind: TokenKind) -> ScanResult<()> {
        let start = self.mark;
        self.skip();
        self.push(kind, start);
        Ok(())
    }

    fn fetch_value(&mut self) -> ScanResult<()> {
        let level = self.simple_keys.len().saturating_sub(1);
        let valid = self.key_is_valid(level)?;
        let key = self.simple_keys.last().copied().unwrap_or_default();
        if valid {
            let token = Token {
                kind: TokenKind::Key,
                start: key.mark,
                end: key.mark,
            };
            let n = key.token_number.min(self.tokens.len());
            self.tokens.insert(n, token);
            self.roll_indent(
                key.mark.column as i64,
                Some(n),
                TokenKind::BlockMappingStart,
                key.mark,
            )?;
            if let Some(slot) = self.simple_keys.last_mut() {
                slot.possible = false;
            }
            self.blocking.remove(&key.token_number);
            self.simple_key_allowed = false;
        } else {
            if self.flow_level == 0 {
                if !self.simple_key_allowed {
                    return Err(self.err(
                        "",
                        Mark::default(),
                        "mapping values are not allowed in this context",
                    ));
                }
                let mark = self.mark;
                self.roll_indent(self.mark.column as i64, None, TokenKind::BlockMappingStart, mark)?;
            }
            self.simple_key_allowed = self.flow_level == 0;
        }
        self.push_indicator(TokenKind::Value)
    }

    fn fetch_anchor(&mut self, alias: bool) -> ScanResult<()> {
        self.save_simple_key()?;
        self.simple_key_allowed = false;
        let start = self.mark;
        self.skip();
        let mut name = String::new();
        while is_alpha(self.ch()) {
            self.read(&mut name);
        }
        let c = self.ch();
        let ends_ok = is_blankz(c) || matches!(c, Some('?' | ':' | ',' | ']' | '}' | '%' | '@' | '`'));
        if name.is_empty() || !ends_ok {
            let context = if alias {
                "while scanning an alias"
            } else {
                "while scanning an anchor"
            };
            return Err(self.err(
                context,
                start,
                "did not find expected alphabetic or numeric character",
            ));
        }
        let kind = if alias {
            TokenKind::Alias(name)
        } else {
            TokenKind::Anchor(name)
        };
        self.push(kind, start);
        Ok(())
    }

    fn fetch_tag(&mut self) -> ScanResult<()> {
        self.save_simple_key()?;
        self.simple_key_allowed = false;
        let start = self.mark;
        let (handle, suffix);
        if self.at(1) == Some('<') {
            self.skip();
            self.skip();
            handle = String::new();
            suffix = self.scan_tag_uri(false, "", start)?;
            if self.ch() != Some('>') {
                return Err(self.err("while scanning a tag", start, "did not find the expected '>'"));
            }
            self.skip();
        } else {
            let first = self.scan_tag_handle(false, start)?;
            if first.len() > 1 && first.starts_with('!') && first.ends_with('!') {
                handle = first;
                suffix = self.scan_tag_uri(false, "", start)?;
            } else {
                let s = self.scan_tag_uri(false, &first, start)?;
                if s.is_empty() {
                    handle = String::new();
                    suffix = "!".to_string();
                } else {
                    handle = "!".to_string();
                    suffix = s;
                }
            }
        }
        let c = self.ch();
        if !is_blankz(c) && (self.flow_level == 0 || c != Some(',')) {
            return Err(self.err(
                "while scanning a tag",
                start,
                "did not find expected whitespace or line break",
            ));
        }
        self.push(
            TokenKind::Tag {
                handle: handle.into(),
                suffix: suffix.into(),
            },
            start,
        );
        Ok(())
    }

    fn scan_tag_handle(&mut self, directive: bool, start: Mark) -> ScanResult<String> {
        let context = if directive {
            "while scanning a tag directive"
        } else {
            "while scanning a tag"
        };
        if self.ch() != Some('!') {
            return Err(self.err(context, start, "did not find expected '!'"));
        }
        let mut handle = String::new();
        self.read(&mut handle);
        while is_alpha(self.ch()) {
            self.read(&mut handle);
        }
        if self.ch() == Some('!') {
            self.read(&mut handle);
        } else if directive && handle != "!" {
            return Err(self.err(context, start, "did not find expected '!'"));
        }
        Ok(handle)
    }

    /// A tag URI; `head` is a handle-looking prefix that turned out to be part of it.
    fn scan_tag_uri(&mut self, directive: bool, head: &str, start: Mark) -> ScanResult<String> {
        let context = if directive {
            "while parsing a %TAG directive"
        } else {
            "while parsing a tag"
        };
        // The leading '!' of the head is the tag indicator, not part of the URI.
        let mut out = head.get(1..).unwrap_or("").to_string();
        let mut bytes: Vec<u8> = Vec::new();
        while is_uri_char(self.ch()) {
            if self.ch() == Some('%') {
                bytes.clear();
                // Percent-escaped UTF-8 sequence.
                let mut width = 0usize;
                loop {
                    let (h1, h2) = (self.at(1), self.at(2));
                    let byte = match (h1.and_then(|c| c.to_digit(16)), h2.and_then(|c| c.to_digit(16))) {
                        (Some(a), Some(b)) if self.ch() == Some('%') => (a * 16 + b) as u8,
                        _ => {
                            return Err(self.err(context, start, "did not find URI escaped octet"));
                        }
                    };
                    if width == 0 {
                        width = match byte {
                            b if b & 0x80 == 0 => 1,
                            b if b & 0xE0 == 0xC0 => 2,
                            b if b & 0xF0 == 0xE0 => 3,
                            b if b & 0xF8 == 0xF0 => 4,
                            _ => {
                                return Err(self.err(
                                    context,
                                    start,
                                    "found an incorrect leading UTF-8 octet",
                                ));
                            }
                        };
                    } else if byte & 0xC0 != 0x80 {
                        return Err(self.err(context, start, "found an incorrect trailing UTF-8 octet"));
                    }
                    bytes.push(byte);
                    self.skip();
                    self.skip();
                    self.skip();
                    if bytes.len() >= width {
                        break;
                    }
                }
                out.push_str(&String::from_utf8_lossy(&bytes));
            } else {
                self.read(&mut out);
            }
        }
        if out.is_empty() && head.len() <= 1 {
            // libyaml's check is on the whole (handle + URI) length.
            if head.is_empty() {
                return Err(self.err(context, start, "did not find expected tag URI"));
            }
        }
        Ok(out)
    }

    fn fetch_directive(&mut self) -> ScanResult<()> {
        self.unroll_indent(-1);
        self.remove_simple_key()?;
        self.simple_key_allowed = false;
        let start = self.mark;
        self.skip();
        let mut name = String::new();
        while is_alpha(self.ch()) {
            self.read(&mut name);
        }
        if name.is_empty() {
            return Err(self.err(
                "while scanning a directive",
                start,
                "could not find expected directive name",
            ));
        }
        if !is_blankz(self.ch()) {
            return Err(self.err(
                "while scanning a directive",
                start,
                "found unexpected non-alphabetical character",
            ));
        }
        let kind = match name.as_str() {
            "YAML" => {
                self.skip_blanks();
                let major = self.scan_version_number(start)?;
                if self.ch() != Some('.') {
                    return Err(self.err(
                        "while scanning a %YAML directive",
                        start,
                        "did not find expected digit or '.' character",
                    ));
                }
                self.skip();
                let minor = self.scan_version_number(start)?;
                TokenKind::VersionDirective { major, minor }
            }
            "TAG" => {
                self.skip_blanks();
                let handle = self.scan_tag_handle(true, start)?;
                if !is_blank(self.ch()) {
                    return Err(self.err(
                        "while scanning a %TAG directive",
                        start,
                        "did not find expected whitespace",
                    ));
                }
                self.skip_blanks();
                let prefix = self.scan_tag_uri(true, "", start)?;
                if !is_blankz(self.ch()) {
                    return Err(self.err(
                        "while scanning a %TAG directive",
                        start,
                        "did not find expected whitespace or line break",
                    ));
                }
                TokenKind::TagDirective {
                    handle: handle.into(),
                    prefix: prefix.into(),
                }
            }
            _ => {
                return Err(self.err(
                    "while scanning a directive",
                    start,
                    "found unknown directive name",
                ));
            }
        };
        self.skip_blanks();
        if self.ch() == Some('#') {
            while !is_breakz(self.ch()) {
                self.skip();
            }
        }
        if !is_breakz(self.ch()) {
            return Err(self.err(
                "while scanning a directive",
                start,
                "did not find expected comment or line break",
            ));
        }
        self.skip_line();
        self.push(kind, start);
        Ok(())
    }

    fn skip_blanks(&mut self) {
        while is_blank(self.ch()) {
            self.skip();
        }
    }

    fn scan_version_number(&mut self, start: Mark) -> ScanResult<u32> {
        let mut n = 0;
        let mut value = 0u32;
        while let Some(d) = self.ch().and_then(|c| c.to_digit(10)) {
            value = value.saturating_mul(10).saturating_add(d);
            n += 1;
            // go-yaml allows at most two digits per version number.
            if n > 2 {
                return Err(self.err(
                    "while scanning a %YAML directive",
                    start,
                    "found extremely long version number",
                ));
            }
            self.skip();
        }
        if n == 0 {
            return Err(self.err(
                "while scanning a %YAML directive",
                start,
                "did not find expected version number",
            ));
        }
        Ok(value)
    }

    fn fetch_block_scalar(&mut self, literal: bool) -> ScanResult<()> {
        self.remove_simple_key()?;
        self.simple_key_allowed = true;
        let start = self.mark;
        let value = self.scan_block_scalar(literal, start)?;
        let style = if literal {
            ScalarStyle::Literal
        } else {
            ScalarStyle::Folded
        };
        self.push(TokenKind::Scalar { value, style }, start);
        Ok(())
    }

    fn scan_block_scalar(&mut self, literal: bool, start: Mark) -> ScanResult<String> {
        const CTX: &str = "while scanning a block scalar";
        self.skip();
        let mut chomping = 0i8;
        let mut increment = 0i64;
        let digit = |c: Option<char>| c.and_then(|c| c.to_digit(10));
        if matches!(self.ch(), Some('+' | '-')) {
            chomping = if self.ch() == Some('+') { 1 } else { -1 };
            self.skip();
            if let Some(d) = digit(self.ch()) {
                if d == 0 {
                    return Err(self.err(CTX, start, "found an indentation indicator equal to 0"));
                }
                increment = d as i64;
                self.skip();
            }
        } else if let Some(d) = digit(self.ch()) {
            if d == 0 {
                return Err(self.err(CTX, start, "found an indentation indicator equal to 0"));
            }
            increment = d as i64;
            self.skip();
            if matches!(self.ch(), Some('+' | '-')) {
                chomping = if self.ch() == Some('+') { 1 } else { -1 };
                self.skip();
            }
        }
        self.skip_blanks();
        if self.ch() == Some('#') {
            while !is_breakz(self.ch()) {
                self.skip();
            }
        }
        if !is_breakz(self.ch()) {
            return Err(self.err(CTX, start, "did not find expected comment or line break"));
        }
        if is_break(self.ch()) {
            self.skip_line();
        }
        let mut indent = if increment > 0 {
            if self.indent >= 0 {
                self.indent + increment
            } else {
                increment
            }
        } else {
            0
        };
        let mut out = String::new();
        let mut leading_break = String::new();
        let mut trailing_breaks = String::new();
        self.scan_block_scalar_breaks(&mut indent, &mut trailing_breaks, start)?;
        let mut leading_blank = false;
        while self.mark.column as i64 == indent && self.ch().is_some() {
            let trailing_blank = is_blank(self.ch());
            if !literal && leading_break.starts_with('\n') && !leading_blank && !trailing_blank {
                if trailing_breaks.is_empty() {
                    out.push(' ');
                }
                leading_break.clear();
            } else {
                out.push_str(&leading_break);
                leading_break.clear();
            }
            out.push_str(&trailing_breaks);
            trailing_breaks.clear();
            leading_blank = is_blank(self.ch());
            while !is_breakz(self.ch()) {
                self.read(&mut out);
            }
            if self.ch().is_none() {
                break;
            }
            self.read_line(&mut leading_break);
            self.scan_block_scalar_breaks(&mut indent, &mut trailing_breaks, start)?;
        }
        if chomping != -1 {
            out.push_str(&leading_break);
        }
        if chomping == 1 {
            out.push_str(&trailing_breaks);
        }
        Ok(out)
    }

    fn scan_block_scalar_breaks(
        &mut self,
        indent: &mut i64,
        breaks: &mut String,
        start: Mark,
    ) -> ScanResult<()> {
        let mut max_indent = 0i64;
        loop {
            while (*indent == 0 || (self.mark.column as i64) < *indent) && self.ch() == Some(' ') {
                self.skip();
            }
            if self.mark.column as i64 > max_indent {
                max_indent = self.mark.column as i64;
            }
            if (*indent == 0 || (self.mark.column as i64) < *indent) && self.ch() == Some('\t') {
                return Err(self.err(
                    "while scanning a block scalar",
                    start,
                    "found a tab character where an indentation space is expected",
                ));
            }
            if !is_break(self.ch()) {
                break;
            }
            self.read_line(breaks);
        }
        if *indent == 0 {
            *indent = max_indent.max(self.indent + 1).max(1);
        }
        Ok(())
    }

    fn fetch_flow_scalar(&mut self, single: bool) -> ScanResult<()> {
        self.save_simple_key()?;
        self.simple_key_allowed = false;
        let start = self.mark;
        let value = self.scan_flow_scalar(single, start)?;
        let style = if single {
            ScalarStyle::SingleQuoted
        } else {
            ScalarStyle::DoubleQuoted
        };
        self.push(TokenKind::Scalar { value, style }, start);
        Ok(())
    }

    fn at_document_indicator(&self) -> bool {
        if self.mark.column != 0 {
            return false;
        }
        let three: String = (0..3).filter_map(|i| self.at(i)).collect();
        (three == "---" || three == "...") && is_blankz(self.at(3))
    }

    fn scan_flow_scalar(&mut self, single: bool, start: Mark) -> ScanResult<String> {
        const CTX: &str = "while scanning a quoted scalar";
        self.skip();
        let mut out = String::new();
        let mut leading_break = String::new();
        let mut trailing_breaks = String::new();
        let mut whitespaces = String::new();
        loop {
            if self.at_document_indicator() {
                return Err(self.err(CTX, start, "found unexpected document indicator"));
            }
            if self.ch().is_none() {
                return Err(self.err(CTX, start, "found unexpected end of stream"));
            }
            let mut leading_blanks = false;
            while !is_blankz(self.ch()) {
                let c = self.ch();
                if single && c == Some('\'') && self.at(1) == Some('\'') {
                    out.push('\'');
                    self.skip();
                    self.skip();
                } else if c == Some(if single { '\'' } else { '"' }) {
                    break;
                } else if !single && c == Some('\\') && is_break(self.at(1)) {
                    self.skip();
                    self.skip_line();
                    leading_blanks = true;
                    break;
                } else if !single && c == Some('\\') {
                    self.scan_escape(&mut out, start)?;
                } else {
                    self.read(&mut out);
                }
            }
            if self.ch() == Some(if single { '\'' } else { '"' }) {
                break;
            }
            while is_blank(self.ch()) || is_break(self.ch()) {
                if is_blank(self.ch()) {
                    if leading_blanks {
                        self.skip();
                    } else {
                        self.read(&mut whitespaces);
                    }
                } else if !leading_blanks {
                    whitespaces.clear();
                    self.read_line(&mut leading_break);
                    leading_blanks = true;
                } else {
                    self.read_line(&mut trailing_breaks);
                }
            }
            if leading_blanks {
                if leading_break.starts_with('\n') {
                    if trailing_breaks.is_empty() {
                        out.push(' ');
                    } else {
                        out.push_str(&trailing_breaks);
                    }
                } else {
                    out.push_str(&leading_break);
                    out.push_str(&trailing_breaks);
                }
                leading_break.clear();
                trailing_breaks.clear();
            } else {
                out.push_str(&whitespaces);
                whitespaces.clear();
            }
        }
        self.skip();
        Ok(out)
    }

    fn scan_escape(&mut self, out: &mut String, start: Mark) -> ScanResult<()> {
        const CTX: &str = "while parsing a quoted scalar";
        let code_len = match self.at(1) {
            Some('0') => {
                out.push('\0');
                0
            }
            Some('a') => {
                out.push('\x07');
                0
            }
            Some('b') => {
                out.push('\x08');
                0
            }
            Some('t') | Some('\t') => {
                out.push('\t');
                0
            }
            Some('n') => {
                out.push('\n');
                0
            }
            Some('v') => {
                out.push('\x0b');
                0
            }
            Some('f') => {
                out.push('\x0c');
                0
            }
            Some('r') => {
                out.push('\r');
                0
            }
            Some('e') => {
                out.push('\x1b');
                0
            }
            Some(' ') => {
                out.push(' ');
                0
            }
            Some('"') => {
                out.push('"');
                0
            }
            Some('\'') => {
                out.push('\'');
                0
            }
            Some('\\') => {
                out.push('\\');
                0
            }
            Some('N') => {
                out.push('\u{85}');
                0
            }
            Some('_') => {
                out.push('\u{a0}');
                0
            }
            Some('L') => {
                out.push('\u{2028}');
                0
            }
            Some('P') => {
                out.push('\u{2029}');
                0
            }
            Some('x') => 2,
            Some('u') => 4,
            Some('U') => 8,
            _ => {
                return Err(self.err(
                    "while parsing a quoted scalar",
                    start,
                    "found unknown escape character",
                ));
            }
        };
        self.skip();
        self.skip();
        if code_len > 0 {
            let mut value: u32 = 0;
            for k in 0..code_len {
                match self.at(k).and_then(|c| c.to_digit(16)) {
                    Some(d) => value = (value << 4) + d,
                    None => {
                        return Err(self.err(CTX, start, "did not find expected hexdecimal number"));
                    }
                }
            }
            match char::from_u32(value) {
                Some(c) => out.push(c),
                None => {
                    return Err(self.err(CTX, start, "found invalid Unicode character escape code"));
                }
            }
            for _ in 0..code_len {
                self.skip();
            }
        }
        Ok(())
    }

    fn fetch_plain_scalar(&mut self) -> ScanResult<()> {
        self.save_simple_key()?;
        self.simple_key_allowed = false;
        let start = self.mark;
        let (value, end) = self.scan_plain_scalar(start)?;
        self.tokens.push(Token {
            kind: TokenKind::Scalar {
                value,
                style: ScalarStyle::Plain,
            },
            start,
            end,
        });
        Ok(())
    }

    fn scan_plain_scalar(&mut self, start: Mark) -> ScanResult<(String, Mark)> {
        let mut out = String::new();
        let mut leading_break = String::new();
        let mut trailing_breaks = String::new();
        let mut whitespaces = String::new();
        let mut leading_blanks = false;
        let mut end = self.mark;
        let indent = self.indent + 1;
        loop {
            if self.at_document_indicator() || self.ch() == Some('#') {
                break;
            }
            while !is_blankz(self.ch()) {
                let c = self.ch();
                let next = self.at(1);
                if (c == Some(':') && is_blankz(next))
                    || (self.flow_level > 0 && matches!(c, Some(',' | '?' | '[' | ']' | '{' | '}')))
                {
                    break;
                }
                if leading_blanks || !whitespaces.is_empty() {
                    if leading_blanks {
                        if leading_break.starts_with('\n') {
                            if trailing_breaks.is_empty() {
                                out.push(' ');
                            } else {
                                out.push_str(&trailing_breaks);
                            }
                        } else {
                            out.push_str(&leading_break);
                            out.push_str(&trailing_breaks);
                        }
                        leading_break.clear();
                        trailing_breaks.clear();
                        leading_blanks = false;
                    } else {
                        out.push_str(&whitespaces);
                        whitespaces.clear();
                    }
                }
                self.read(&mut out);
                end = self.mark;
            }
            if !(is_blank(self.ch()) || is_break(self.ch())) {
                break;
            }
            while is_blank(self.ch()) || is_break(self.ch()) {
                if is_blank(self.ch()) {
                    if leading_blanks && (self.mark.column as i64) < indent && self.ch() == Some('\t') {
                        return Err(self.err(
                            "while scanning a plain scalar",
                            start,
                            "found a tab character that violates indentation",
                        ));
                    }
                    if leading_blanks {
                        self.skip();
                    } else {
                        self.read(&mut whitespaces);
                    }
                } else if !leading_blanks {
                    whitespaces.clear();
                    self.read_line(&mut leading_break);
                    leading_blanks = true;
                } else {
                    self.read_line(&mut trailing_breaks);
                }
            }
            if self.flow_level == 0 && (self.mark.column as i64) < indent {
                break;
            }
        }
        if leading_blanks {
            self.simple_key_allowed = true;
        }
        Ok((out, end))
    }
}
