//! `--set` style values (`a.b=1,list[0]=x,tags={a,b}`), typed like Helm's strvals:
//! `true`/`false` → bool, `null` → nil, integers without a leading zero → int64, the rest
//! strings (`--set-string` keeps everything a string).

use std::collections::BTreeMap;

use crate::coalesce::{new_table, table};
use capstan_go::value::{List, ListKind, Value};

/// Helm refuses list indexes above this.
const MAX_INDEX: usize = 65536;

/// A `--set` expression that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed parsing --set data {expr:?}: {msg}")]
pub struct SetError {
    pub expr: String,
    pub msg: String,
}

/// How the right-hand sides are typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Typing {
    /// `--set`: bools, nulls and int64s recognised.
    Typed,
    /// `--set-string`: everything is a string.
    Strings,
}

/// Applies one `--set`/`--set-string` argument to `values` (a table).
pub fn apply(values: &Value, expr: &str, typing: Typing) -> Result<(), SetError> {
    let err = |msg: String| SetError {
        expr: expr.to_string(),
        msg,
    };
    for assignment in split_unescaped(expr, ',', true) {
        if assignment.is_empty() {
            continue;
        }
        let Some((key, raw)) = split_once_unescaped(&assignment, '=') else {
            return Err(err(format!("key {assignment:?} has no value")));
        };
        let value = if raw.starts_with('{') && raw.ends_with('}') && raw.len() >= 2 {
            let inner = &raw[1..raw.len() - 1];
            let items = split_unescaped(inner, ',', false)
                .into_iter()
                .map(|s| typed(&unescape(&s), typing))
                .collect();
            Value::list(items)
        } else {
            typed(&unescape(&raw), typing)
        };
        let path = parse_key(&key).map_err(err)?;
        set_path(values, &path, value).map_err(err)?;
    }
    Ok(())
}

/// Applies a `--set-json` argument: `path=<json>`.
pub fn apply_json(values: &Value, expr: &str) -> Result<(), SetError> {
    let err = |msg: String| SetError {
        expr: expr.to_string(),
        msg,
    };
    let Some((key, raw)) = expr.split_once('=') else {
        return Err(err("missing '='".into()));
    };
    let json: serde_json::Value = serde_json::from_str(raw).map_err(|e| err(e.to_string()))?;
    let path = parse_key(key).map_err(err)?;
    set_path(values, &path, Value::from_json(&json)).map_err(err)
}

/// Applies a `--set-file` argument whose file content was read by the caller.
pub fn apply_file_content(values: &Value, key: &str, content: String) -> Result<(), SetError> {
    let path = parse_key(key).map_err(|msg| SetError {
        expr: key.to_string(),
        msg,
    })?;
    set_path(values, &path, Value::from(content)).map_err(|msg| SetError {
        expr: key.to_string(),
        msg,
    })
}

fn typed(s: &str, typing: Typing) -> Value {
    if typing == Typing::Strings {
        return Value::from(s);
    }
    if s.eq_ignore_ascii_case("true") {
        return Value::Bool(true);
    }
    if s.eq_ignore_ascii_case("false") {
        return Value::Bool(false);
    }
    if s.eq_ignore_ascii_case("null") {
        return Value::Nil;
    }
    if s == "0" {
        return Value::Int64(0);
    }
    if !s.is_empty()
        && !s.starts_with('0')
        && let Ok(i) = s.parse::<i64>()
    {
        // Go's ParseInt accepts a leading '+', Rust's too; both reject spaces.
        return Value::Int64(i);
    }
    Value::from(s)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// `a.b[0].c` → segments; `\.` escapes a dot in a key.
fn parse_key(key: &str) -> Result<Vec<Segment>, String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = key.chars().peekable();
    let mut after_index = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(n) => current.push(n),
                None => return Err("unexpected end of key after escape".into()),
            },
            '.' => {
                if !current.is_empty() {
                    out.push(Segment::Key(std::mem::take(&mut current)));
                } else if !after_index {
                    return Err(format!("key {key:?} has an empty segment"));
                }
                after_index = false;
            }
            '[' => {
                if !current.is_empty() {
                    out.push(Segment::Key(std::mem::take(&mut current)));
                }
                let mut digits = String::new();
                loop {
                    match chars.next() {
                        Some(']') => break,
                        Some(d) => digits.push(d),
                        None => return Err(format!("key {key:?} has an unclosed index")),
                    }
                }
                let idx: i64 = digits.parse().map_err(|_| format!("invalid index {digits:?}"))?;
                if idx < 0 {
                    return Err("negative index".into());
                }
                let idx = idx as usize;
                if idx > MAX_INDEX {
                    return Err(format!(
                        "index of {idx} is greater than maximum supported index {MAX_INDEX}"
                    ));
                }
                out.push(Segment::Index(idx));
                after_index = true;
            }
            other => current.push(other),
        }
    }
    if !current.is_empty() {
        out.push(Segment::Key(current));
    }
    if out.is_empty() {
        return Err(format!("key {key:?} is empty"));
    }
    Ok(out)
}

/// Sets `value` at `path`, creating tables and growing lists (with nils) as needed.
fn set_path(root: &Value, path: &[Segment], value: Value) -> Result<(), String> {
    let updated = set_in(Some(root.clone()), path, value)?;
    if let (Some(dst), Some(src)) = (table(root), table(&updated)) {
        for (k, v) in src.snapshot() {
            dst.insert(k, v);
        }
    }
    Ok(())
}

fn set_in(current: Option<Value>, path: &[Segment], value: Value) -> Result<Value, String> {
    let Some((first, rest)) = path.split_first() else {
        return Ok(value);
    };
    match first {
        Segment::Key(k) => {
            let node = match current {
                Some(v) if table(&v).is_some() => v,
                _ => new_table(),
            };
            let child = table(&node).and_then(|t| t.get(k));
            let new_child = set_in(child, rest, value)?;
            if let Some(t) = table(&node) {
                t.insert(k.clone(), new_child);
            }
            Ok(node)
        }
        Segment::Index(i) => {
            let mut items: Vec<Value> = match &current {
                Some(Value::List(l)) => l.items.as_ref().clone(),
                _ => Vec::new(),
            };
            if items.len() <= *i {
                items.resize(*i + 1, Value::Nil);
            }
            let existing = std::mem::replace(&mut items[*i], Value::Nil);
            let existing = if existing.is_nil() { None } else { Some(existing) };
            items[*i] = set_in(existing, rest, value)?;
            Ok(Value::List(List::new(ListKind::Any, items)))
        }
    }
}

/// Splits on `sep` outside `{…}` (when `braces`), honouring backslash escapes (kept).
fn split_unescaped(s: &str, sep: char, braces: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                current.push(c);
                if let Some(n) = chars.next() {
                    current.push(n);
                }
            }
            '{' if braces => {
                depth += 1;
                current.push(c);
            }
            '}' if braces => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            c if c == sep && depth == 0 => out.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    out.push(current);
    out
}

fn split_once_unescaped(s: &str, sep: char) -> Option<(String, String)> {
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            return Some((s[..i].to_string(), s[i + 1..].to_string()));
        }
    }
    None
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A fresh table for accumulating `--set` values.
pub fn empty() -> Value {
    Value::map(BTreeMap::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use capstan_go::fmt::format_value;

    fn set(exprs: &[&str]) -> Value {
        let v = empty();
        for e in exprs {
            apply(&v, e, Typing::Typed).expect("valid --set");
        }
        v
    }

    #[test]
    fn typing_follows_strvals() {
        let v = set(&["a=1,b=true,c=null,d=010,e=0,f=x"]);
        let m = v.as_map().expect("table");
        assert!(matches!(m.get("a"), Some(Value::Int64(1))));
        assert!(matches!(m.get("b"), Some(Value::Bool(true))));
        assert!(matches!(m.get("c"), Some(Value::Nil)));
        assert_eq!(
            m.get("d").and_then(|v| v.as_str().map(str::to_string)).as_deref(),
            Some("010")
        );
        assert!(matches!(m.get("e"), Some(Value::Int64(0))));
    }

    #[test]
    fn nested_keys_lists_and_escapes() {
        let v = set(&["a.b.c=1", "l[1]=x", "t={a,b}", "k\\.dot=v", "s=a\\,b"]);
        let m = v.as_map().expect("table");
        let a = m.get("a").expect("a");
        assert!(table(&a).is_some());
        let l = m.get("l").expect("l");
        assert_eq!(l.as_list().map(|l| l.items.len()), Some(2));
        assert_eq!(
            m.get("k.dot")
                .and_then(|v| v.as_str().map(str::to_string))
                .as_deref(),
            Some("v")
        );
        assert_eq!(
            m.get("s").and_then(|v| v.as_str().map(str::to_string)).as_deref(),
            Some("a,b")
        );
        let _ = format_value(&v);
    }

    #[test]
    fn errors_are_reported() {
        let v = empty();
        assert!(apply(&v, "novalue", Typing::Typed).is_err());
        assert!(apply(&v, "a[99999999]=1", Typing::Typed).is_err());
        assert!(apply(&v, "a[-1]=1", Typing::Typed).is_err());
    }
}
