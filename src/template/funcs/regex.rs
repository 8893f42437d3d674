//! Sprig v3.3.0 functions: regex (`regexMatch`, `regexFind`, `regexFindAll`,
//! `regexReplaceAll`, `regexReplaceAllLiteral`, `regexSplit`, `regexQuoteMeta` and the `must*`
//! variants) with Go's RE2 syntax, matching rules, `$name` expansion and error texts.
//!
//! The plain variants compile with Go's `MustCompile`, so a bad pattern is an error calling the
//! function with the panic text (`regexp: Compile(…): …`); the `must*` variants report the
//! compile error itself; `regexMatch` swallows it and answers false.

mod syntax;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::template::error::FuncError;
use crate::template::funcs::{Func, FuncEnv, FuncMap, arg_int, arg_str};
use crate::template::gofmt;
use crate::template::value::{GoType, Value};

/// A compiled pattern with Go's group names.
struct Compiled {
    re: regex::Regex,
    names: Vec<String>,
}

/// Compiled patterns are cached: charts call the same regex in loops (bitnami's warnings).
const CACHE_LIMIT: usize = 256;

thread_local! {
    static CACHE: RefCell<HashMap<String, Rc<Compiled>>> = RefCell::new(HashMap::new());
}

/// Go's `regexp.Compile`: the compiled pattern or Go's error text.
fn compile(expr: &str) -> Result<Rc<Compiled>, String> {
    if let Some(hit) = CACHE.with(|c| c.borrow().get(expr).cloned()) {
        return Ok(hit);
    }
    let translated = syntax::translate(expr).map_err(|e| e.0)?;
    let re = regex::RegexBuilder::new(&translated.pattern)
        .size_limit(32 << 20)
        .build()
        .map_err(|_| format!("error parsing regexp: expression too large: `{expr}`"))?;
    let compiled = Rc::new(Compiled {
        re,
        names: translated.names,
    });
    CACHE.with(|c| {
        let mut cache = c.borrow_mut();
        if cache.len() >= CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(expr.to_string(), compiled.clone());
    });
    Ok(compiled)
}

/// Go's `regexp.MustCompile`, whose panic the template engine reports as the call's error.
fn must_compile(expr: &str) -> Result<Rc<Compiled>, FuncError> {
    compile(expr).map_err(|e| FuncError::msg(format!("regexp: Compile({}): {e}", backquote(expr))))
}

fn checked_compile(expr: &str) -> Result<Rc<Compiled>, FuncError> {
    compile(expr).map_err(FuncError::msg)
}

/// Go's `regexp` quoting in panic messages: backquotes when `strconv.CanBackquote`.
fn backquote(s: &str) -> String {
    let can = !s
        .chars()
        .any(|c| c == '`' || c == '\u{FEFF}' || (c.is_control() && c != '\t'));
    if can { format!("`{s}`") } else { gofmt::quote(s) }
}

/// Match spans like Go's `FindAll…Index(s, n)`: non-overlapping, an empty match right after
/// the previous match is skipped, at most `n` when `n >= 0`.
fn find_all(re: &regex::Regex, s: &str, n: i64) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    if n == 0 {
        return out;
    }
    let mut prev_end: Option<usize> = None;
    for m in re.find_iter(s) {
        if m.start() == m.end() && prev_end == Some(m.start()) {
            continue;
        }
        out.push((m.start(), m.end()));
        prev_end = Some(m.end());
        if n > 0 && out.len() as i64 >= n {
            break;
        }
    }
    out
}

/// Go's `Regexp.Expand` of `template` for one match.
fn expand(compiled: &Compiled, caps: &regex::Captures<'_>, template: &str, out: &mut String) {
    let mut rest = template;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        if rest.as_bytes().get(1) == Some(&b'$') {
            out.push('$');
            rest = &rest[2..];
            continue;
        }
        match extract_name(rest) {
            None => {
                out.push('$');
                rest = &rest[1..];
            }
            Some((name, after)) => {
                rest = after;
                let group = match name.parse::<usize>() {
                    Ok(num) if name.bytes().all(|b| b.is_ascii_digit()) => caps.get(num),
                    _ => compiled
                        .names
                        .iter()
                        .enumerate()
                        .filter(|(_, n)| n.as_str() == name)
                        .find_map(|(i, _)| caps.get(i)),
                };
                if let Some(g) = group {
                    out.push_str(g.as_str());
                }
            }
        }
    }
    out.push_str(rest);
}

/// `$name` or `${name}` at the start of `s` (which begins with `$`): the name and the rest.
fn extract_name(s: &str) -> Option<(&str, &str)> {
    let body = &s[1..];
    let (braced, body) = match body.strip_prefix('{') {
        Some(inner) => (true, inner),
        None => (false, body),
    };
    let end = body
        .char_indices()
        .find(|&(_, c)| !(c.is_alphanumeric() || c == '_'))
        .map_or(body.len(), |(i, _)| i);
    if end == 0 {
        return None;
    }
    let name = &body[..end];
    if braced {
        let after = body[end..].strip_prefix('}')?;
        Some((name, after))
    } else {
        Some((name, &body[end..]))
    }
}

/// Replaces every match like Go's `ReplaceAllString` (expanding) or `…LiteralString`.
fn replace_all(compiled: &Compiled, s: &str, repl: &str, literal: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    let mut prev_end: Option<usize> = None;
    for caps in compiled.re.captures_iter(s) {
        let Some(m) = caps.get(0) else { continue };
        if m.start() == m.end() && prev_end == Some(m.start()) {
            continue;
        }
        out.push_str(&s[last..m.start()]);
        if literal {
            out.push_str(repl);
        } else {
            expand(compiled, &caps, repl, &mut out);
        }
        last = m.end();
        prev_end = Some(m.end());
    }
    out.push_str(&s[last..]);
    out
}

/// Go's `Regexp.Split(s, n)`.
fn split(compiled: &Compiled, expr: &str, s: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if !expr.is_empty() && s.is_empty() {
        return vec![String::new()];
    }
    let matches = find_all(&compiled.re, s, n);
    let mut parts = Vec::new();
    let (mut beg, mut end) = (0, 0);
    for (start, stop) in matches {
        if n > 0 && parts.len() as i64 == n - 1 {
            break;
        }
        end = start;
        if stop != 0 {
            parts.push(s[beg..end].to_string());
        }
        beg = stop;
    }
    if end != s.len() {
        parts.push(s[beg..].to_string());
    }
    parts
}

/// Go's `regexp.QuoteMeta`.
fn quote_meta(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

type Compiler = fn(&str) -> Result<Rc<Compiled>, FuncError>;

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    let _ = env;
    use GoType::{Int, String};

    map.insert(
        "regexMatch",
        Func::pure(&[String, String], |a| {
            let ok = compile(arg_str(&a[0])).is_ok_and(|c| c.re.is_match(arg_str(&a[1])));
            Ok(Value::Bool(ok))
        }),
    );
    map.insert(
        "mustRegexMatch",
        Func::pure(&[String, String], |a| {
            let c = checked_compile(arg_str(&a[0]))?;
            Ok(Value::Bool(c.re.is_match(arg_str(&a[1]))))
        }),
    );
    let variants: [(&str, Compiler); 2] = [("", must_compile), ("must", checked_compile)];
    for (prefix, comp) in variants {
        let named = |base: &str| {
            if prefix.is_empty() {
                base.to_string()
            } else {
                let mut chars = base.chars();
                let first = chars.next().map(|c| c.to_ascii_uppercase()).unwrap_or_default();
                format!("{prefix}{first}{}", chars.as_str())
            }
        };
        map.insert(
            &named("regexFind"),
            Func::pure(&[String, String], move |a| {
                let c = comp(arg_str(&a[0]))?;
                let s = arg_str(&a[1]);
                Ok(Value::from(c.re.find(s).map_or("", |m| m.as_str())))
            }),
        );
        map.insert(
            &named("regexFindAll"),
            Func::pure(&[String, String, Int], move |a| {
                let c = comp(arg_str(&a[0]))?;
                let s = arg_str(&a[1]);
                let found = find_all(&c.re, s, arg_int(&a[2]));
                Ok(Value::string_list(
                    found.into_iter().map(|(b, e)| s[b..e].to_string()).collect(),
                ))
            }),
        );
        map.insert(
            &named("regexReplaceAll"),
            Func::pure(&[String, String, String], move |a| {
                let c = comp(arg_str(&a[0]))?;
                Ok(Value::from(replace_all(
                    &c,
                    arg_str(&a[1]),
                    arg_str(&a[2]),
                    false,
                )))
            }),
        );
        map.insert(
            &named("regexReplaceAllLiteral"),
            Func::pure(&[String, String, String], move |a| {
                let c = comp(arg_str(&a[0]))?;
                Ok(Value::from(replace_all(&c, arg_str(&a[1]), arg_str(&a[2]), true)))
            }),
        );
        map.insert(
            &named("regexSplit"),
            Func::pure(&[String, String, Int], move |a| {
                let expr = arg_str(&a[0]);
                let c = comp(expr)?;
                Ok(Value::string_list(split(
                    &c,
                    expr,
                    arg_str(&a[1]),
                    arg_int(&a[2]),
                )))
            }),
        );
    }
    map.insert(
        "regexQuoteMeta",
        Func::pure(&[String], |a| Ok(Value::from(quote_meta(arg_str(&a[0]))))),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_matches_after_a_match_are_skipped_like_go() {
        let c = compile("a*").unwrap();
        let found: Vec<_> = find_all(&c.re, "baaac", -1);
        assert_eq!(found, vec![(0, 0), (1, 4), (5, 5)]);
    }

    #[test]
    fn expansion_follows_go() {
        let c = compile("a(x*)b").unwrap();
        assert_eq!(replace_all(&c, "-ab-axxb-", "$1W", false), "---");
        assert_eq!(replace_all(&c, "-ab-axxb-", "${1}W", false), "-W-xxW-");
        let c = compile("a").unwrap();
        assert_eq!(replace_all(&c, "banana", "$-x", false), "b$-xn$-xn$-x");
    }

    #[test]
    fn split_follows_go() {
        let c = compile("a").unwrap();
        assert_eq!(split(&c, "a", "abca", -1), vec!["", "bc", ""]);
        assert_eq!(split(&c, "a", "banana", 2), vec!["b", "nana"]);
        let c = compile("").unwrap();
        assert_eq!(split(&c, "", "abc", -1), vec!["a", "b", "c"]);
    }
}
