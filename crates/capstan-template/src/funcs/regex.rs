//! Sprig v3.3.0 functions: Go `regexp` (RE2) matching, finding, replacing and splitting.
//! Patterns are checked and translated by [`syntax`]; the plain variants fail the way Go's
//! `MustCompile` panics (`regexp: Compile(…): …`), the `must*` variants return the parse error.

mod syntax;

use std::rc::Rc;

use crate::error::FuncError;
use crate::funcs::{Func, FuncEnv, FuncMap, arg_int, arg_str};
use capstan_go::value::{GoType, ListKind, Value};

/// A compiled Go regexp.
pub struct GoRegex {
    re: regex::Regex,
    names: Vec<Option<String>>,
}

/// Compiles with Go's syntax and error texts (`error parsing regexp: …`).
pub fn compile(pattern: &str) -> Result<Rc<GoRegex>, String> {
    if let Some(hit) = CACHE.with(|c| c.borrow().get(pattern).cloned()) {
        return Ok(hit);
    }
    let compiled = Rc::new(compile_uncached(pattern)?);
    CACHE.with(|c| {
        let mut cache = c.borrow_mut();
        // Charts use a handful of patterns, often inside loops; bound the cache anyway.
        if cache.len() >= CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(pattern.to_string(), Rc::clone(&compiled));
    });
    Ok(compiled)
}

const CACHE_LIMIT: usize = 256;

thread_local! {
    /// Compiled patterns by source text (compiling is far costlier than matching).
    static CACHE: std::cell::RefCell<std::collections::HashMap<String, Rc<GoRegex>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

fn compile_uncached(pattern: &str) -> Result<GoRegex, String> {
    let t = syntax::translate(pattern).map_err(|e| e.to_string())?;
    let re = regex::RegexBuilder::new(&t.pattern)
        .size_limit(64 << 20)
        .build()
        .map_err(|_| format!("error parsing regexp: expression too large: `{pattern}`"))?;
    Ok(GoRegex { re, names: t.names })
}

/// Go's `MustCompile` panic text.
fn must_compile(pattern: &str) -> Result<Rc<GoRegex>, FuncError> {
    compile(pattern)
        .map_err(|e| FuncError::msg(format!("regexp: Compile({}): {e}", go_regexp_quote(pattern))))
}

fn compile_err(pattern: &str) -> Result<Rc<GoRegex>, FuncError> {
    compile(pattern).map_err(FuncError::msg)
}

/// How `regexp` quotes a pattern in messages: back quotes when possible.
fn go_regexp_quote(s: &str) -> String {
    let backquotable = !s.contains('`')
        && s.chars()
            .all(|c| c == '\t' || !(c.is_control() || c == '\u{FEFF}'));
    if backquotable {
        format!("`{s}`")
    } else {
        capstan_go::fmt::quote(s)
    }
}

type Compiler = fn(&str) -> Result<Rc<GoRegex>, FuncError>;

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    let _ = env;
    use GoType::{Int, String};
    map.insert(
        "regexMatch",
        Func::pure(&[String, String], |a| {
            Ok(Value::Bool(
                compile(arg_str(&a[0])).is_ok_and(|r| r.re.is_match(arg_str(&a[1]))),
            ))
        }),
    );
    map.insert(
        "mustRegexMatch",
        Func::pure(&[String, String], |a| {
            Ok(Value::Bool(
                compile_err(arg_str(&a[0]))?.re.is_match(arg_str(&a[1])),
            ))
        }),
    );
    map.insert(
        "regexQuoteMeta",
        Func::pure(&[String], |a| Ok(Value::from(quote_meta(arg_str(&a[0]))))),
    );
    for (prefix, comp) in [
        ("regex", must_compile as Compiler),
        ("mustRegex", compile_err as Compiler),
    ] {
        map.insert(
            &format!("{prefix}Find"),
            Func::pure(&[String, String], move |a| {
                let r = comp(arg_str(&a[0]))?;
                Ok(Value::from(r.re.find(arg_str(&a[1])).map_or("", |m| m.as_str())))
            }),
        );
        map.insert(
            &format!("{prefix}FindAll"),
            Func::pure(&[String, String, Int], move |a| {
                let r = comp(arg_str(&a[0]))?;
                let s = arg_str(&a[1]);
                Ok(match find_all(&r, s, arg_int(&a[2])) {
                    None => nil_strings(),
                    Some(found) => {
                        Value::string_list(found.iter().map(|&(b, e)| s[b..e].to_string()).collect())
                    }
                })
            }),
        );
        map.insert(
            &format!("{prefix}ReplaceAll"),
            Func::pure(&[String, String, String], move |a| {
                let r = comp(arg_str(&a[0]))?;
                Ok(Value::from(replace_all(
                    &r,
                    arg_str(&a[1]),
                    arg_str(&a[2]),
                    false,
                )))
            }),
        );
        map.insert(
            &format!("{prefix}ReplaceAllLiteral"),
            Func::pure(&[String, String, String], move |a| {
                let r = comp(arg_str(&a[0]))?;
                Ok(Value::from(replace_all(&r, arg_str(&a[1]), arg_str(&a[2]), true)))
            }),
        );
        map.insert(
            &format!("{prefix}Split"),
            Func::pure(&[String, String, Int], move |a| {
                let pattern = arg_str(&a[0]);
                let r = comp(pattern)?;
                Ok(match split(&r, pattern, arg_str(&a[1]), arg_int(&a[2])) {
                    None => nil_strings(),
                    Some(parts) => Value::string_list(parts),
                })
            }),
        );
    }
}

/// A nil `[]string` (prints `[]`, encodes as `null`).
fn nil_strings() -> Value {
    Value::nil_list(ListKind::String)
}

/// `FindAllStringIndex(s, n)`: `None` (nil) when `n == 0` or nothing matches.
fn find_all(r: &GoRegex, s: &str, n: i64) -> Option<Vec<(usize, usize)>> {
    if n == 0 {
        return None;
    }
    let limit = usize::try_from(n).unwrap_or(usize::MAX);
    let found: Vec<(usize, usize)> =
        r.re.find_iter(s)
            .take(limit)
            .map(|m| (m.start(), m.end()))
            .collect();
    if found.is_empty() { None } else { Some(found) }
}

/// `Regexp.Split(s, n)`.
fn split(r: &GoRegex, pattern: &str, s: &str, n: i64) -> Option<Vec<String>> {
    if n == 0 {
        return None;
    }
    if !pattern.is_empty() && s.is_empty() {
        return Some(vec![String::new()]);
    }
    let matches = find_all(r, s, n).unwrap_or_default();
    let mut out = Vec::new();
    let (mut begin, mut end) = (0, 0);
    for (m_start, m_end) in matches {
        if n > 0 && out.len() as i64 == n - 1 {
            break;
        }
        end = m_start;
        if m_end != 0 {
            out.push(s[begin..end].to_string());
        }
        begin = m_end;
    }
    if end != s.len() {
        out.push(s[begin..].to_string());
    }
    Some(out)
}

fn replace_all(r: &GoRegex, s: &str, template: &str, literal: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for caps in r.re.captures_iter(s) {
        let Some(m) = caps.get(0) else { continue };
        out.push_str(&s[last..m.start()]);
        if literal {
            out.push_str(template);
        } else {
            expand(&mut out, template, &caps, &r.names);
        }
        last = m.end();
    }
    out.push_str(&s[last..]);
    out
}

/// Go's `Regexp.Expand`: `$$`, `$name`/`${name}` (the longest run of letters, digits and
/// `_`), numbers without leading zeros as group indexes; unknown groups expand to nothing
/// and a `$` that starts no valid reference is kept.
fn expand(out: &mut String, template: &str, caps: &regex::Captures<'_>, names: &[Option<String>]) {
    let mut rest = template;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        if let Some(after) = rest.strip_prefix('$') {
            out.push('$');
            rest = after;
            continue;
        }
        let is_name_char = |c: char| c.is_alphanumeric() || c == '_';
        let (name, after) = if let Some(braced) = rest.strip_prefix('{') {
            match braced.find('}') {
                Some(end) if end > 0 && braced[..end].chars().all(is_name_char) => {
                    (&braced[..end], &braced[end + 1..])
                }
                _ => {
                    out.push('$');
                    continue;
                }
            }
        } else {
            let end = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
            if end == 0 {
                out.push('$');
                continue;
            }
            (&rest[..end], &rest[end..])
        };
        rest = after;
        let index = if name.bytes().all(|b| b.is_ascii_digit()) && !(name.len() > 1 && name.starts_with('0'))
        {
            name.parse::<usize>().ok()
        } else {
            names.iter().position(|n| n.as_deref() == Some(name))
        };
        if let Some(m) = index.and_then(|i| caps.get(i)) {
            out.push_str(m.as_str());
        }
    }
    out.push_str(rest);
}

/// `regexp.QuoteMeta`: escapes exactly `\.+*?()|[]{}^$`.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn replace(p: &str, s: &str, t: &str) -> String {
        compile(p)
            .map(|r| replace_all(&r, s, t, false))
            .unwrap_or_default()
    }

    #[test]
    fn expansion_follows_go() {
        assert_eq!(replace("a(x*)b", "-ab-axxb-", "$1W"), "---");
        assert_eq!(replace("a(x*)b", "-ab-axxb-", "${1}W"), "-W-xxW-");
        assert_eq!(replace("a(?P<name>x*)b", "-ab-axxb-", "${name}x"), "-x-xxx-");
        assert_eq!(replace("a(x*)b", "-ab-axxb-", "$01"), "---");
        assert_eq!(replace("a(x*)b", "-ab-axxb-", "${"), "-${-${-");
        assert_eq!(replace("a(x*)b", "-ab-axxb-", "$-"), "-$--$--");
        assert_eq!(replace("a*", "baaac", "-"), "-b-c-");
    }

    #[test]
    fn split_follows_go() {
        let sp = |p: &str, s: &str, n: i64| compile(p).ok().and_then(|r| split(&r, p, s, n));
        assert_eq!(sp("a*", "baaac", -1), Some(vec!["b".into(), "c".into()]));
        assert_eq!(sp("ab", "ab", -1), Some(vec!["".into(), "".into()]));
        assert_eq!(sp("a", "banana", 2), Some(vec!["b".into(), "nana".into()]));
        assert_eq!(sp(",", "", -1), Some(vec!["".into()]));
        assert_eq!(sp(",", "a", 0), None);
    }

    #[test]
    fn ascii_perl_classes() {
        let all = |p: &str, s: &str| {
            compile(p)
                .ok()
                .and_then(|r| {
                    find_all(&r, s, -1)
                        .map(|v| v.iter().map(|&(b, e)| s[b..e].to_string()).collect::<Vec<_>>())
                })
                .unwrap_or_default()
        };
        assert_eq!(all("\\d+", "12٣4"), vec!["12", "4"]);
        assert_eq!(all("\\w+", "héllo"), vec!["h", "llo"]);
        assert_eq!(replace("\\bx", "éx x", "Y"), "éY Y");
    }
}
