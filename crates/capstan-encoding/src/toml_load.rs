//! TOML decoding as Helm's `fromToml` sees it (BurntSushi/toml into `map[string]interface {}`):
//! integers are `int64`, floats `float64`, tables maps, arrays `[]interface {}`, arrays of
//! tables `[]map[string]interface {}`, date-times `time.Time` (local ones in the library's
//! [`LOCAL_DATETIME`], [`LOCAL_DATE`] and [`LOCAL_TIME`] locations). Error texts follow the
//! library's `toml: line N (last key "k"): …` shape for the common mistakes.

use std::collections::BTreeMap;

use capstan_go::time::{self as dates, Zone};
use capstan_go::value::{List, ListKind, Value};

/// The location of a local date-time (`1979-05-27T07:32:00`): a fixed zone at offset 0 whose
/// name prints where a zone abbreviation would.
pub const LOCAL_DATETIME: &str = "datetime-local";
/// The location of a local date (`1979-05-27`, midnight).
pub const LOCAL_DATE: &str = "date-local";
/// The location of a local time (`07:32:00`, on January 1 of year 0).
pub const LOCAL_TIME: &str = "time-local";

/// A document that cannot be decoded; `Display` is the library's message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("toml: line {line}{}: {msg}", last_key.as_ref().map(|k| format!(" (last key {k:?})")).unwrap_or_default())]
pub struct TomlParseError {
    pub line: usize,
    pub last_key: Option<String>,
    pub msg: String,
}

/// Containers nested deeper than this are refused (arrays and inline tables recurse).
const MAX_DEPTH: usize = 1_000;

/// Decodes a TOML document into a `map[string]interface {}`.
pub fn parse(text: &str) -> Result<Value, TomlParseError> {
    let mut p = Parser {
        s: text.chars().collect(),
        i: 0,
        line: 1,
        last_key: None,
    };
    let mut root = Table::default();
    // The path of the table that key/value lines currently go to.
    let mut current: Vec<String> = Vec::new();
    loop {
        p.skip_blank_lines();
        let Some(c) = p.peek() else { break };
        if c == '[' {
            let array = p.peek_at(1) == Some('[');
            p.i += if array { 2 } else { 1 };
            let path = p.key_path(if array { "]]" } else { "]" }, None)?;
            let end = if array { "]]" } else { "]" };
            p.skip_ws();
            if !p.eat(end) {
                // At the end of input the library's lexer reads a NUL rune.
                let got = capstan_go::fmt::quote_rune(p.peek().unwrap_or('\0'), false);
                // The library reports the line after a newline it has already read.
                if p.peek() == Some('\n') {
                    p.line += 1;
                }
                return Err(p.err_plain(&format!(
                    "expected '.' or '{end}' to end table name, but got {got} instead"
                )));
            }
            p.define_table(&mut root, &path, array)?;
            current = path;
        } else {
            // The library names the table being filled as the last key.
            let context = (!current.is_empty()).then(|| current.join("."));
            let path = p.key_path("=", context.clone())?;
            p.skip_ws();
            if !p.eat("=") {
                return Err(p.missing_separator(context));
            }
            p.last_key = Some(path.join("."));
            p.skip_ws();
            let v = p.value(0)?;
            let table = p.table_at(&mut root, &current)?;
            p.insert_dotted(table, &path, v)?;
        }
        p.skip_ws();
        p.skip_comment();
        match p.peek() {
            None => break,
            Some('\n') => {}
            Some('\r') if p.peek_at(1) == Some('\n') => {}
            Some(c) => {
                return Err(p.err_plain(&format!(
                    "expected a top-level item to end with a newline, comment, or EOF, but got '{c}' instead"
                )));
            }
        }
    }
    Ok(root.into_value())
}

#[derive(Default)]
struct Table {
    entries: BTreeMap<String, Item>,
    /// Defined by a `[header]` (a second header for it is an error).
    explicit: bool,
    /// Closed to further keys (inline tables, plain values).
    frozen: bool,
}

enum Item {
    Value(Value),
    Table(Table),
    Array(Vec<Table>),
}

impl Table {
    fn into_value(self) -> Value {
        Value::map(
            self.entries
                .into_iter()
                .map(|(k, item)| {
                    let v = match item {
                        Item::Value(v) => v,
                        Item::Table(t) => t.into_value(),
                        Item::Array(ts) => table_array(ts),
                    };
                    (k, v)
                })
                .collect(),
        )
    }
}

/// An array of tables (`[[name]]`): a `[]map[string]interface {}`.
fn table_array(tables: Vec<Table>) -> Value {
    Value::List(List::new(
        ListKind::MapAny,
        tables.into_iter().map(Table::into_value).collect(),
    ))
}

struct Parser {
    s: Vec<char>,
    i: usize,
    line: usize,
    last_key: Option<String>,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }

    fn peek_at(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).copied()
    }

    fn eat(&mut self, word: &str) -> bool {
        let n = word.chars().count();
        if self
            .s
            .get(self.i..self.i + n)
            .is_some_and(|w| w.iter().copied().eq(word.chars()))
        {
            self.i += n;
            true
        } else {
            false
        }
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.i += 1;
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn err(&self, msg: &str) -> TomlParseError {
        self.err_naming(self.last_key.clone(), msg)
    }

    fn err_plain(&self, msg: &str) -> TomlParseError {
        self.err_naming(None, msg)
    }

    /// An error on the current line that names `last_key` as the key being defined.
    fn err_naming(&self, last_key: Option<String>, msg: impl Into<String>) -> TomlParseError {
        TomlParseError {
            line: self.line,
            last_key,
            msg: msg.into(),
        }
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.i += 1;
        }
    }

    fn skip_comment(&mut self) {
        if self.peek() == Some('#') {
            while self.peek().is_some_and(|c| c != '\n') {
                self.i += 1;
            }
        }
    }

    fn skip_blank_lines(&mut self) {
        loop {
            self.skip_ws();
            self.skip_comment();
            match self.peek() {
                Some('\n') => {
                    self.bump();
                }
                Some('\r') if self.peek_at(1) == Some('\n') => {
                    self.i += 1;
                    self.bump();
                }
                _ => return,
            }
        }
    }

    /// A dotted key up to (not including) `end`.
    /// The error for a key not followed by `=`, in the library's words.
    fn missing_separator(&self, last_key: Option<String>) -> TomlParseError {
        let msg = match self.peek() {
            None => "unexpected EOF; expected key separator '='".to_string(),
            Some(c) => format!(
                "expected '.' or '=', but got {} instead",
                capstan_go::fmt::quote_rune(c, false)
            ),
        };
        self.err_naming(last_key, msg)
    }

    /// A dotted key up to `end` (`=` of a key/value pair, `]`/`]]` of a table header).
    /// `last_key` is what errors name as the key being defined.
    fn key_path(&mut self, end: &str, last_key: Option<String>) -> Result<Vec<String>, TomlParseError> {
        let mut path = Vec::new();
        loop {
            self.skip_ws();
            let key = match self.peek() {
                Some('"') => {
                    self.i += 1;
                    self.basic_string()?
                }
                Some('\'') => {
                    self.i += 1;
                    self.literal_string()?
                }
                Some(c) if c.is_ascii_alphanumeric() || c == '_' || c == '-' => {
                    let start = self.i;
                    while self
                        .peek()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                    {
                        self.i += 1;
                    }
                    self.s[start..self.i].iter().collect()
                }
                Some(c) if !end.starts_with(c) => {
                    let quoted = capstan_go::fmt::quote_rune(c, false);
                    let msg = if end == "=" {
                        format!("expected '.' or '=', but got {quoted} instead")
                    } else {
                        format!("expected '.' or '{end}' to end table name, but got {quoted} instead")
                    };
                    return Err(self.err_naming(last_key, msg));
                }
                // A missing key (the end of the key, or of the input, where one should be).
                _ => {
                    let msg = if end != "=" {
                        "unexpected end of table name (table names cannot be empty)"
                    } else if path.is_empty() {
                        "unexpected '=': key name appears blank"
                    } else {
                        "unexpected '='"
                    };
                    return Err(self.err_naming(last_key, msg));
                }
            };
            path.push(key);
            self.skip_ws();
            if self.peek() == Some('.') {
                self.i += 1;
                continue;
            }
            return Ok(path);
        }
    }

    fn already_defined(&self, key: &str, with_key: bool) -> TomlParseError {
        let msg = format!("Key '{key}' has already been defined.");
        if with_key {
            self.err(&msg)
        } else {
            self.err_plain(&msg)
        }
    }

    /// The table a header or dotted key path leads to, creating implicit tables.
    fn walk<'t>(&self, mut t: &'t mut Table, path: &[String]) -> Result<&'t mut Table, TomlParseError> {
        for (n, key) in path.iter().enumerate() {
            let full = path[..=n].join(".");
            let item = t
                .entries
                .entry(key.clone())
                .or_insert_with(|| Item::Table(Table::default()));
            t = match item {
                Item::Table(next) => next,
                Item::Array(tables) => match tables.last_mut() {
                    Some(last) => last,
                    None => return Err(self.already_defined(&full, false)),
                },
                Item::Value(_) => return Err(self.already_defined(&full, false)),
            };
        }
        Ok(t)
    }

    fn define_table(&self, root: &mut Table, path: &[String], array: bool) -> Result<(), TomlParseError> {
        let (last, parents) = path
            .split_last()
            .ok_or_else(|| self.err_plain("empty table name"))?;
        let parent = self.walk(root, parents)?;
        let full = path.join(".");
        match parent.entries.get_mut(last) {
            None => {
                let item = if array {
                    Item::Array(vec![Table::default()])
                } else {
                    Item::Table(Table {
                        explicit: true,
                        ..Table::default()
                    })
                };
                parent.entries.insert(last.clone(), item);
            }
            Some(Item::Array(tables)) if array => tables.push(Table::default()),
            Some(Item::Table(t)) if !array && !t.explicit && !t.frozen => t.explicit = true,
            Some(_) => return Err(self.already_defined(&full, false)),
        }
        Ok(())
    }

    fn table_at<'t>(&self, root: &'t mut Table, path: &[String]) -> Result<&'t mut Table, TomlParseError> {
        self.walk(root, path)
    }

    fn insert_dotted(&self, table: &mut Table, path: &[String], v: Item) -> Result<(), TomlParseError> {
        let (last, parents) = path.split_last().ok_or_else(|| self.err_plain("empty key"))?;
        let mut t = table;
        for key in parents {
            let item = t
                .entries
                .entry(key.clone())
                .or_insert_with(|| Item::Table(Table::default()));
            t = match item {
                Item::Table(next) if !next.frozen => next,
                _ => return Err(self.already_defined(&path.join("."), true)),
            };
        }
        if t.entries.contains_key(last) {
            return Err(self.already_defined(last, true));
        }
        t.entries.insert(last.clone(), v);
        Ok(())
    }

    fn value(&mut self, depth: usize) -> Result<Item, TomlParseError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        let Some(c) = self.peek() else {
            return Err(self.err("unexpected EOF; expected value"));
        };
        match c {
            '"' => {
                let s = if self.eat("\"\"\"") {
                    self.multiline_basic()?
                } else {
                    self.i += 1;
                    self.basic_string()?
                };
                Ok(Item::Value(Value::from(s)))
            }
            '\'' => {
                let s = if self.eat("'''") {
                    self.multiline_literal()?
                } else {
                    self.i += 1;
                    self.literal_string()?
                };
                Ok(Item::Value(Value::from(s)))
            }
            '[' => {
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_array_space();
                    if self.peek() == Some(']') {
                        self.i += 1;
                        break;
                    }
                    let item = self.value(depth + 1)?;
                    items.push(match item {
                        Item::Value(v) => v,
                        Item::Table(t) => t.into_value(),
                        Item::Array(ts) => table_array(ts),
                    });
                    self.skip_array_space();
                    match self.bump() {
                        Some(',') => {}
                        Some(']') => break,
                        None => return Err(self.err("unexpected EOF; expected ']'")),
                        Some(c) => {
                            return Err(self.err(&format!(
                                "expected a comma (',') or array terminator (']'), but got '{c}'"
                            )));
                        }
                    }
                }
                Ok(Item::Value(Value::list(items)))
            }
            '{' => {
                self.i += 1;
                let mut t = Table::default();
                self.skip_ws();
                if self.peek() == Some('}') {
                    self.i += 1;
                } else {
                    let outer = self.last_key.clone();
                    loop {
                        let path = self.key_path("=", self.last_key.clone())?;
                        self.skip_ws();
                        if !self.eat("=") {
                            return Err(self.missing_separator(self.last_key.clone()));
                        }
                        // Errors from here on name the entry's full key (`x.a`).
                        let mut full = outer.clone().map(|k| vec![k]).unwrap_or_default();
                        full.extend(path.iter().cloned());
                        self.last_key = Some(full.join("."));
                        self.skip_ws();
                        let v = self.value(depth + 1)?;
                        self.insert_dotted(&mut t, &path, v)?;
                        self.skip_ws();
                        match self.bump() {
                            Some(',') => continue,
                            Some('}') => break,
                            None => {
                                return Err(self.err(
                                    "expected a comma or an inline table terminator '}', but got end of file instead",
                                ));
                            }
                            Some(c) => {
                                return Err(self.err(&format!(
                                    "expected a comma or an inline table terminator '}}', but got '{c}' instead"
                                )));
                            }
                        }
                    }
                }
                t.frozen = true;
                Ok(Item::Table(t))
            }
            _ => self.scalar(),
        }
    }

    fn skip_array_space(&mut self) {
        loop {
            self.skip_ws();
            self.skip_comment();
            match self.peek() {
                Some('\n') => {
                    self.bump();
                }
                Some('\r') => self.i += 1,
                _ => return,
            }
        }
    }

    /// Booleans, numbers and date-times: a bare run of characters.
    fn scalar(&mut self) -> Result<Item, TomlParseError> {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '_' | '.' | ':'))
        {
            self.i += 1;
        }
        // A date and a time may be separated by one space.
        if self.peek() == Some(' ')
            && self.s[start..self.i].iter().filter(|&&c| c == '-').count() == 2
            && self.peek_at(1).is_some_and(|c| c.is_ascii_digit())
        {
            self.i += 1;
            while self
                .peek()
                .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.' | ':'))
            {
                self.i += 1;
            }
        }
        let word: String = self.s[start..self.i].iter().collect();
        if word.is_empty() {
            return match self.peek() {
                None | Some('\n') => Err(self.err("unexpected EOF; expected value")),
                Some(c) => Err(self.err(&format!("expected value but found '{c}' instead"))),
            };
        }
        match word.as_str() {
            "true" => return Ok(Item::Value(Value::Bool(true))),
            "false" => return Ok(Item::Value(Value::Bool(false))),
            "inf" | "+inf" => return Ok(Item::Value(Value::Float(f64::INFINITY))),
            "-inf" => return Ok(Item::Value(Value::Float(f64::NEG_INFINITY))),
            "nan" | "+nan" | "-nan" => return Ok(Item::Value(Value::Float(f64::NAN))),
            _ => {}
        }
        if let Some(v) = self.integer(&word)? {
            return Ok(Item::Value(v));
        }
        if is_float(&word) {
            let f: f64 = word
                .replace('_', "")
                .parse()
                .map_err(|_| self.err(&format!("Invalid float value: {word:?}")))?;
            return Ok(Item::Value(Value::Float(f)));
        }
        if is_datetime(&word) {
            return self.datetime(&word).map(Item::Value);
        }
        Err(self.err(&format!("expected value but found {word:?} instead")))
    }

    /// A date-time, date or time as a `time.Time`: the library tries these layouts in turn
    /// (the ones without seconds are TOML 1.1), after upper-casing `t`/`z` and turning the
    /// space between date and time into `T`.
    fn datetime(&self, word: &str) -> Result<Value, TomlParseError> {
        let text: String = word
            .chars()
            .map(|c| match c {
                't' | ' ' => 'T',
                'z' => 'Z',
                c => c,
            })
            .collect();
        let local = |name: &str| Zone::fixed(name, 0, name);
        let layouts = [
            ("2006-01-02T15:04:05.999999999Z07:00", dates::local_zone()),
            ("2006-01-02T15:04:05.999999999", local(LOCAL_DATETIME)),
            ("2006-01-02", local(LOCAL_DATE)),
            ("15:04:05.999999999", local(LOCAL_TIME)),
            ("2006-01-02T15:04Z07:00", dates::local_zone()),
            ("2006-01-02T15:04", local(LOCAL_DATETIME)),
            ("15:04", local(LOCAL_TIME)),
        ];
        for (layout, zone) in layouts {
            if let Ok(t) = dates::parse_in_location(layout, &text, &zone) {
                if missing_leading_zero(&text, layout) {
                    break;
                }
                return Ok(dates::time_value(t));
            }
        }
        Err(self.err(&format!("invalid datetime: {}", capstan_go::fmt::quote(&text))))
    }

    fn integer(&self, word: &str) -> Result<Option<Value>, TomlParseError> {
        let (radix, digits) = match word.get(..2) {
            Some("0x") => (16, &word[2..]),
            Some("0o") => (8, &word[2..]),
            Some("0b") => (2, &word[2..]),
            _ => (10, word),
        };
        let body = digits.strip_prefix(['+', '-']).unwrap_or(digits);
        let valid = !body.is_empty()
            && body.chars().all(|c| c.is_digit(radix) || c == '_')
            && !body.starts_with('_')
            && !body.ends_with('_')
            && !body.contains("__")
            && (radix == 10 || digits == body);
        if !valid {
            return Ok(None);
        }
        if radix == 10 && body.len() > 1 && body.starts_with('0') {
            return Err(self.err(&format!("Invalid integer {word:?}: cannot have leading zeroes")));
        }
        let clean = digits.replace('_', "");
        match i64::from_str_radix(&clean, radix) {
            Ok(i) => Ok(Some(Value::Int64(i))),
            Err(_) => Err(self.err(&format!("{word} is out of range for int64"))),
        }
    }

    fn escape(&mut self) -> Result<char, TomlParseError> {
        let Some(e) = self.bump() else {
            return Err(self.err("unexpected EOF; expected '\"'"));
        };
        Ok(match e {
            'b' => '\u{8}',
            't' => '\t',
            'n' => '\n',
            'f' => '\u{c}',
            'r' => '\r',
            'e' => '\u{1b}',
            '"' => '"',
            '\\' => '\\',
            'u' | 'U' => {
                let n = if e == 'u' { 4 } else { 8 };
                let hex: String = self.s.get(self.i..self.i + n).unwrap_or(&[]).iter().collect();
                self.i += n.min(self.s.len() - self.i);
                u32::from_str_radix(&hex, 16)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| self.err(&format!("invalid unicode escape: '\\{e}{hex}'")))?
            }
            other => return Err(self.err(&format!("invalid escape character {other:?}"))),
        })
    }

    fn basic_string(&mut self) -> Result<String, TomlParseError> {
        let mut out = String::new();
        loop {
            match self.peek() {
                None | Some('\n') => return Err(self.err("unexpected EOF; expected '\"'")),
                Some('"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some('\\') => {
                    self.i += 1;
                    out.push(self.escape()?);
                }
                Some(c) => {
                    self.i += 1;
                    out.push(c);
                }
            }
        }
    }

    fn literal_string(&mut self) -> Result<String, TomlParseError> {
        let mut out = String::new();
        loop {
            match self.peek() {
                None | Some('\n') => return Err(self.err("unexpected EOF; expected \"'\"")),
                Some('\'') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(c) => {
                    self.i += 1;
                    out.push(c);
                }
            }
        }
    }

    fn trim_first_newline(&mut self) {
        if self.peek() == Some('\r') && self.peek_at(1) == Some('\n') {
            self.i += 1;
        }
        if self.peek() == Some('\n') {
            self.bump();
        }
    }

    fn multiline_basic(&mut self) -> Result<String, TomlParseError> {
        self.trim_first_newline();
        let mut out = String::new();
        loop {
            if self.eat("\"\"\"") {
                // Up to two more quotes belong to the content.
                while self.peek() == Some('"') && out.len() < usize::MAX {
                    if self.peek_at(1) == Some('"') && self.peek_at(2) == Some('"') {
                        break;
                    }
                    out.push('"');
                    self.i += 1;
                }
                return Ok(out);
            }
            match self.bump() {
                None => return Err(self.err("unexpected EOF; expected '\"\"\"'")),
                Some('\\') => {
                    // A backslash at the end of a line trims the break and leading blanks.
                    let mut j = self.i;
                    while matches!(self.s.get(j), Some(' ' | '\t')) {
                        j += 1;
                    }
                    if matches!(self.s.get(j), Some('\n' | '\r')) {
                        self.i = j;
                        while matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r')) {
                            self.bump();
                        }
                    } else {
                        out.push(self.escape()?);
                    }
                }
                Some(c) => out.push(c),
            }
        }
    }

    fn multiline_literal(&mut self) -> Result<String, TomlParseError> {
        self.trim_first_newline();
        let mut out = String::new();
        loop {
            if self.eat("'''") {
                while self.peek() == Some('\'') {
                    if self.peek_at(1) == Some('\'') && self.peek_at(2) == Some('\'') {
                        break;
                    }
                    out.push('\'');
                    self.i += 1;
                }
                return Ok(out);
            }
            match self.bump() {
                None => return Err(self.err("unexpected EOF; expected \"'''\"")),
                Some(c) => out.push(c),
            }
        }
    }
}

fn is_float(word: &str) -> bool {
    let body = word.strip_prefix(['+', '-']).unwrap_or(word);
    let has_digits = body.chars().any(|c| c.is_ascii_digit());
    has_digits
        && body.contains(['.', 'e', 'E'])
        && body
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-' | '_'))
        && !body.starts_with('.')
        && !body.ends_with('.')
}

/// Go's parser accepts one-digit hours; TOML does not. The separators of the layout must sit
/// at the same places in the text, up to the fraction or the zone.
fn missing_leading_zero(text: &str, layout: &str) -> bool {
    for (i, c) in layout.bytes().enumerate() {
        if c == b'.' || c == b'Z' {
            return false;
        }
        if !c.is_ascii_digit() && text.as_bytes().get(i) != Some(&c) {
            return true;
        }
    }
    false
}

/// The lexer takes digits followed by `-` or `:` for a date-time (the parser then checks it
/// against the layouts), and reads on over digits and `-:.+ TtZz`.
fn is_datetime(word: &str) -> bool {
    let first_other = word.bytes().find(|c| !c.is_ascii_digit());
    word.starts_with(|c: char| c.is_ascii_digit())
        && matches!(first_other, Some(b'-' | b':'))
        && word
            .bytes()
            .all(|c| c.is_ascii_digit() || b"-:.+ TtZz".contains(&c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json;

    fn j(text: &str) -> String {
        match parse(text) {
            Ok(v) => json::marshal(&v).unwrap(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn documents() {
        assert_eq!(
            j("a = 1\nb = \"x\"\nc = 1.5\n[t]\nk = 'v'\n[[arr]]\nq = 1\n[[arr]]\nq = 2\n"),
            r#"{"a":1,"arr":[{"q":1},{"q":2}],"b":"x","c":1.5,"t":{"k":"v"}}"#
        );
        assert_eq!(
            j("a.b.c = 1\nit = {x = 1, y = {z = 2}}"),
            r#"{"a":{"b":{"c":1}},"it":{"x":1,"y":{"z":2}}}"#
        );
        assert_eq!(
            j("ml = \"\"\"\nl1\nl2\"\"\"\nh = 0xff"),
            r#"{"h":255,"ml":"l1\nl2"}"#
        );
    }

    #[test]
    fn arrays_of_tables_are_map_slices() {
        let Ok(Value::Map(m)) = parse("[[arr]]\nq = 1\n[[arr]]\nq = 2\ninline = [{q = 1}]\n") else {
            panic!("a table");
        };
        let arr = m.get("arr").map(|v| v.type_name());
        assert_eq!(arr.as_deref(), Some("[]map[string]interface {}"));
        let inline = m
            .get("arr")
            .and_then(|v| v.as_list().and_then(|l| l.items.get(1).cloned()));
        let inline = inline.and_then(|t| t.as_map().and_then(|t| t.get("inline")));
        assert_eq!(inline.map(|v| v.type_name()).as_deref(), Some("[]interface {}"));
    }

    #[test]
    fn datetimes_are_times_in_their_locations() {
        let shown = |text: &str| match parse(text) {
            Ok(Value::Map(m)) => m
                .snapshot()
                .into_iter()
                .map(|(k, v)| format!("{k}={}", capstan_go::fmt::format_value(&v)))
                .collect::<Vec<_>>()
                .join("|"),
            Ok(_) => "not a table".into(),
            Err(e) => e.to_string(),
        };
        assert_eq!(
            shown(
                "a = 1979-05-27T07:32:00+07:00\nb = 1979-05-27 07:32:00z\nc = 1979-05-27\nd = 07:32:00.5\ne = 1979-05-27T07:32"
            ),
            "a=1979-05-27 07:32:00 +0700 +0700|b=1979-05-27 07:32:00 +0000 UTC|\
             c=1979-05-27 00:00:00 +0000 date-local|d=0000-01-01 07:32:00.5 +0000 time-local|\
             e=1979-05-27 07:32:00 +0000 datetime-local"
        );
        assert_eq!(
            shown("a = 7:32:00"),
            "toml: line 1 (last key \"a\"): invalid datetime: \"7:32:00\""
        );
        assert_eq!(
            shown("a = 2023-02-29 10:00:00"),
            "toml: line 1 (last key \"a\"): invalid datetime: \"2023-02-29T10:00:00\""
        );
        assert_eq!(
            j("d = 1979-05-27T07:32:00.999"),
            r#"{"d":"1979-05-27T07:32:00.999Z"}"#
        );
    }

    #[test]
    fn errors() {
        assert_eq!(
            j("a = "),
            "toml: line 1 (last key \"a\"): unexpected EOF; expected value"
        );
        assert_eq!(
            j("a = 1\na = 2"),
            "toml: line 2 (last key \"a\"): Key 'a' has already been defined."
        );
        assert_eq!(j("[a]\n[a]"), "toml: line 2: Key 'a' has already been defined.");
        assert_eq!(
            j("a = 01"),
            "toml: line 1 (last key \"a\"): Invalid integer \"01\": cannot have leading zeroes"
        );
        assert_eq!(j("= 1"), "toml: line 1: unexpected '=': key name appears blank");
        assert_eq!(
            j("a = tru"),
            "toml: line 1 (last key \"a\"): expected value but found \"tru\" instead"
        );
    }
}
