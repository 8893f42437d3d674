//! Sprig v3.3.0 functions: paths. `base`, `dir`, `clean`, `ext`, `isAbs` follow Go's `path`
//! package; the `os*` variants use `path/filepath`, which is the same on Linux, where Helm's
//! output is defined.

use std::rc::Rc;

use crate::template::funcs::{Func, FuncEnv, FuncMap, arg_str};
use crate::template::value::{GoType, Value};

/// A path-to-path function body.
type PathFn = fn(&str) -> String;

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    let _ = env;
    let string_fns: [(&str, PathFn); 4] = [
        ("base", base),
        ("dir", dir),
        ("clean", clean),
        ("ext", |p| ext(p).to_string()),
    ];
    for (name, f) in string_fns {
        for full in [
            name.to_string(),
            format!("os{}{}", name[..1].to_uppercase(), &name[1..]),
        ] {
            map.insert(
                &full,
                Func::pure(&[GoType::String], move |a| Ok(Value::from(f(arg_str(&a[0]))))),
            );
        }
    }
    for name in ["isAbs", "osIsAbs"] {
        map.insert(
            name,
            Func::pure(&[GoType::String], |a| {
                Ok(Value::Bool(arg_str(&a[0]).starts_with('/')))
            }),
        );
    }
}

/// Go's `path.Clean`: the shortest equivalent path by lexical processing.
pub fn clean(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// Go's `path.Base`: the last element, trailing slashes removed.
pub fn base(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".into();
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}

/// Go's `path.Dir`: everything but the last element, cleaned.
pub fn dir(path: &str) -> String {
    let cut = path.rfind('/').map_or(0, |i| i + 1);
    clean(&path[..cut])
}

/// Go's `path.Ext`: the suffix from the final dot of the last element.
pub fn ext(path: &str) -> &str {
    for (i, c) in path.char_indices().rev() {
        match c {
            '/' => break,
            '.' => return &path[i..],
            _ => {}
        }
    }
    ""
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_go_path() {
        assert_eq!(clean("a//b/../c"), "a/c");
        assert_eq!(clean("/../a/"), "/a");
        assert_eq!(clean("../../a"), "../../a");
        assert_eq!(clean(""), ".");
        assert_eq!(base("a/b/"), "b");
        assert_eq!(base("///"), "/");
        assert_eq!(dir("a/b/c"), "a/b");
        assert_eq!(dir("abc"), ".");
        assert_eq!(dir("/abc"), "/");
        assert_eq!(ext("b.tar.gz"), ".gz");
        assert_eq!(ext("a.d/b"), "");
    }
}
