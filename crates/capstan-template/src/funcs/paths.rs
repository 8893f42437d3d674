//! Sprig v3.3.0 functions: slash-separated paths (`base`, `dir`, `clean`, `ext`, `isAbs`,
//! Go's `path` package) and their `os*` twins (`path/filepath`, identical on Linux).

use std::rc::Rc;

use crate::funcs::{Func, FuncEnv, FuncMap, arg_str};
use capstan_go::value::{GoType, Value};

/// A path operation from text to text.
type PathFn = fn(&str) -> String;

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    let _ = env;
    let string_fns: [(&str, PathFn); 4] = [("base", base), ("dir", dir), ("clean", clean), ("ext", ext)];
    for (name, f) in string_fns {
        let os_name = format!("os{}{}", name[..1].to_uppercase(), &name[1..]);
        for n in [name, os_name.as_str()] {
            map.insert(
                n,
                Func::pure(&[GoType::String], move |a| Ok(Value::from(f(arg_str(&a[0]))))),
            );
        }
    }
    for n in ["isAbs", "osIsAbs"] {
        map.insert(
            n,
            Func::pure(&[GoType::String], |a| {
                Ok(Value::Bool(arg_str(&a[0]).starts_with('/')))
            }),
        );
    }
}

/// The shortest equivalent path: no `//`, no `.` elements, `..` resolved lexically.
pub fn clean(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for elem in path.split('/') {
        match elem {
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

/// The last element, trailing slashes ignored; `.` for "" and `/` for all slashes.
pub fn base(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".into();
    }
    match trimmed.rfind('/') {
        Some(i) => trimmed[i + 1..].to_string(),
        None => trimmed.to_string(),
    }
}

/// Everything but the last element, cleaned.
pub fn dir(path: &str) -> String {
    let head = match path.rfind('/') {
        Some(i) => &path[..=i],
        None => "",
    };
    clean(head)
}

/// The extension of the last element, with its dot; "" when there is none.
pub fn ext(path: &str) -> String {
    for (i, c) in path.char_indices().rev() {
        match c {
            '/' => break,
            '.' => return path[i..].to_string(),
            _ => {}
        }
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_path_semantics() {
        assert_eq!(clean("a//b/../c"), "a/c");
        assert_eq!(clean("/../a/./"), "/a");
        assert_eq!(clean("../../x/.."), "../..");
        assert_eq!(clean(""), ".");
        assert_eq!(base("/a/b/"), "b");
        assert_eq!(base("///"), "/");
        assert_eq!(base(""), ".");
        assert_eq!(dir("/a/b/c"), "/a/b");
        assert_eq!(dir("abc"), ".");
        assert_eq!(dir("/"), "/");
        assert_eq!(ext("b.tar.gz"), ".gz");
        assert_eq!(ext("a.d/b"), "");
    }
}
