//! TOML output as Helm's `toToml` writes it (BurntSushi/toml `Encoder` with its default
//! two-space indent): plain keys first, then tables and arrays of tables, each group in byte
//! order of keys; floats always with a decimal point; nil entries skipped.

use std::fmt::Write as _;

use crate::toml_load::{LOCAL_DATE, LOCAL_DATETIME, LOCAL_TIME};
use capstan_go::time::{self as dates, GoTime, Zone};
use capstan_go::value::{Value, go_lossy};

/// Why a value cannot be written as TOML; `Display` is BurntSushi's error text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TomlError {
    #[error("toml: top-level values must be Go maps or structs")]
    NotATable,
    #[error("toml: cannot encode array with nil element")]
    NilInArray,
    #[error("toml: nesting too deep")]
    TooDeep,
    /// A table that contains itself (Go's encoder recurses until Helm crashes).
    #[error("toml: a table contains itself")]
    Cycle,
    /// Encoding a nil interface panics inside reflect; Helm reports the panic text.
    #[error("reflect: call of reflect.Value.Type on zero Value")]
    Nil,
}

const MAX_DEPTH: usize = 1_000;

/// Whether a table entry is left out: nil, or a nil map or slice (the encoder skips nils).
fn skipped(v: &Value) -> bool {
    v.is_nil() || v.is_typed_nil()
}

/// Encodes `v` as a TOML document (a map), or a non-table value as one inline value.
pub fn encode(v: &Value) -> Result<String, TomlError> {
    if v.is_nil() {
        return Err(TomlError::Nil);
    }
    let Some(entries) = entries_of(v) else {
        if kind(v)? == Kind::TableArray {
            return Err(TomlError::NotATable);
        }
        let mut out = String::new();
        element(&mut out, v, 0)?;
        return Ok(out);
    };
    let mut e = Encoder {
        out: String::new(),
        written: false,
        open: std::collections::HashSet::new(),
    };
    e.table_body(&[], &entries, 0)?;
    Ok(e.out)
}

fn entries_of(v: &Value) -> Option<Vec<(String, Value)>> {
    match v {
        Value::Map(m) => Some(m.snapshot()),
        // A struct: its exported fields in declaration order, by their Go names.
        Value::Object(o) if o.fmt_fields().is_some() => Some(
            o.fmt_fields()
                .unwrap_or_default()
                .into_iter()
                .filter(|(name, _)| name.starts_with(|c: char| c.is_ascii_uppercase()))
                .map(|(name, value)| (name.to_string(), value))
                .collect(),
        ),
        Value::Object(o) => o.entries().or_else(|| entries_of(&o.to_data())),
        _ => None,
    }
}

#[derive(PartialEq)]
enum Kind {
    Table,
    TableArray,
    Plain,
}

fn kind(v: &Value) -> Result<Kind, TomlError> {
    if entries_of(v).is_some() {
        return Ok(Kind::Table);
    }
    if let Value::List(l) = v
        && !l.items.is_empty()
    {
        let mut all_tables = true;
        for item in l.items.iter() {
            if item.is_nil() {
                return Err(TomlError::NilInArray);
            }
            all_tables &= entries_of(item).is_some();
        }
        if all_tables {
            return Ok(Kind::TableArray);
        }
    }
    Ok(Kind::Plain)
}

struct Encoder {
    out: String,
    written: bool,
    /// The maps whose tables are being written: meeting one again is a cycle.
    open: std::collections::HashSet<usize>,
}

impl Encoder {
    fn write(&mut self, s: &str) {
        self.out.push_str(s);
        self.written = true;
    }

    fn newline(&mut self) {
        if self.written {
            self.write("\n");
        }
    }

    fn table_body(
        &mut self,
        path: &[String],
        entries: &[(String, Value)],
        depth: usize,
    ) -> Result<(), TomlError> {
        if depth > MAX_DEPTH {
            return Err(TomlError::TooDeep);
        }
        let mut direct = Vec::new();
        let mut sub = Vec::new();
        for (k, v) in entries {
            if skipped(v) {
                continue;
            }
            match kind(v)? {
                Kind::Plain => direct.push((k, v)),
                _ => sub.push((k, v)),
            }
        }
        let indent = "  ".repeat(path.len());
        for (k, v) in direct {
            let mut line = format!("{indent}{} = ", quote_key(k));
            element(&mut line, v, depth)?;
            self.write(&line);
            self.newline();
        }
        for (k, v) in sub {
            let mut child = path.to_vec();
            child.push(k.clone());
            let header = child.iter().map(|c| quote_key(c)).collect::<Vec<_>>().join(".");
            if kind(v)? == Kind::TableArray {
                for item in v.as_list().map(|l| l.items.to_vec()).unwrap_or_default() {
                    self.newline();
                    self.write(&format!("{indent}[[{header}]]"));
                    self.newline();
                    let entries = entries_of(&item).unwrap_or_default();
                    self.table_body(&child, &entries, depth + 1)?;
                }
            } else {
                if child.len() == 1 {
                    self.newline();
                }
                self.write(&format!("{indent}[{header}]"));
                self.newline();
                let entries = entries_of(v).unwrap_or_default();
                let id = v
                    .as_map()
                    .map(|m| std::rc::Rc::as_ptr(&m.entries) as *const () as usize);
                if let Some(id) = id
                    && !self.open.insert(id)
                {
                    return Err(TomlError::Cycle);
                }
                let written = self.table_body(&child, &entries, depth + 1);
                if let Some(id) = id {
                    self.open.remove(&id);
                }
                written?;
            }
        }
        Ok(())
    }
}

fn quote_key(k: &str) -> String {
    let bare = !k.is_empty()
        && k.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-');
    if bare { k.to_string() } else { quote(k) }
}

fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if u32::from(c) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// An inline value: scalars, arrays `[a, b]`, inline tables `{k = v}`.
fn element(out: &mut String, v: &Value, depth: usize) -> Result<(), TomlError> {
    if depth > MAX_DEPTH {
        return Err(TomlError::TooDeep);
    }
    match v {
        Value::Nil => {}
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) | Value::Int64(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Uint8(u) => {
            let _ = write!(out, "{u}");
        }
        Value::Uint64(u) => {
            let _ = write!(out, "{u}");
        }
        Value::Float(f) => out.push_str(&float(*f)),
        Value::String(s) => out.push_str(&quote(s)),
        Value::ByteString(b) => out.push_str(&quote(&go_lossy(b))),
        Value::Bytes(b) => out.push_str(&quote(&String::from_utf8_lossy(b))),
        Value::List(l) => {
            out.push('[');
            for (i, item) in l.items.iter().enumerate() {
                if item.is_nil() {
                    return Err(TomlError::NilInArray);
                }
                if i > 0 {
                    out.push_str(", ");
                }
                element(out, item, depth + 1)?;
            }
            out.push(']');
        }
        Value::Object(_) if let Some(t) = dates::as_time(v) => out.push_str(&datetime(&t)),
        // A text marshaler (`*semver.Version`) encodes as the text it marshals to.
        Value::Object(o) if entries_of(v).is_none() => element(out, &o.to_data(), depth + 1)?,
        Value::Map(_) | Value::Object(_) => {
            // Inline tables keep the encoder's order too: plain values, then tables. A
            // separator follows every plain entry but the group's last (nil entries, skipped,
            // still count), and every one when tables follow: `{a = 1, }` happens.
            let entries = entries_of(v).unwrap_or_default();
            let (mut direct, mut tables) = (Vec::new(), Vec::new());
            for entry in &entries {
                if !skipped(&entry.1) && kind(&entry.1)? != Kind::Plain {
                    tables.push(entry);
                } else {
                    direct.push(entry);
                }
            }
            out.push('{');
            let has_tables = !tables.is_empty();
            for (group, trailing) in [(direct, has_tables), (tables, false)] {
                let last = group.len().saturating_sub(1);
                for (i, (k, item)) in group.into_iter().enumerate() {
                    if skipped(item) {
                        continue;
                    }
                    let _ = write!(out, "{} = ", quote_key(k));
                    element(out, item, depth + 1)?;
                    if trailing || i != last {
                        out.push_str(", ");
                    }
                }
            }
            out.push('}');
        }
    }
    Ok(())
}

/// A `time.Time` as the encoder writes it: RFC 3339 with nanoseconds, or, for the decoder's
/// local kinds, the TOML form of that kind (read in UTC).
fn datetime(t: &GoTime) -> String {
    let layout = match t.zone.name.as_str() {
        LOCAL_DATETIME => "2006-01-02T15:04:05.999999999",
        LOCAL_DATE => "2006-01-02",
        LOCAL_TIME => "15:04:05.999999999",
        _ => return t.format("2006-01-02T15:04:05.999999999Z07:00"),
    };
    t.in_zone(Zone::utc()).format(layout)
}

fn float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    // BurntSushi writes Go's shortest 'g' form and marks integral values with `.0`.
    let s = crate::yaml_emit::format_float_g(f);
    if s.contains(['.', 'e']) {
        s
    } else {
        format!("{s}.0")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use capstan_go::value::{Map, MapKind};

    #[test]
    fn a_table_that_contains_itself_is_an_error_not_endless_output() {
        let m = Map::new(MapKind::Any, BTreeMap::from([("x".to_string(), Value::Int(1))]));
        m.insert("self", Value::Map(m.clone()));
        assert_eq!(encode(&Value::Map(m.clone())), Err(TomlError::Cycle));
        // Break the cycle so the test does not leak it.
        m.entries.borrow_mut().clear();
    }

    #[test]
    fn a_table_shared_twice_is_written_twice() {
        let shared = Value::map(BTreeMap::from([("k".to_string(), Value::Int(1))]));
        let top = Value::map(BTreeMap::from([
            ("a".to_string(), shared.clone()),
            ("b".to_string(), shared),
        ]));
        assert_eq!(encode(&top).as_deref(), Ok("[a]\n  k = 1\n\n[b]\n  k = 1\n"));
    }
}
