//! Sprig v3.3.0 functions: `urlParse` (a URL as a dict of its parts) and `urlJoin` (a dict
//! back to a URL), with Go `net/url`'s parsing, unescaping and escaping rules.

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::error::FuncError;
use crate::funcs::{Func, FuncEnv, FuncMap, arg_str};
use capstan_go::fmt::quote;
use capstan_go::value::{GoType, Value};

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    let _ = env;
    map.insert(
        "urlParse",
        Func::pure(&[GoType::String], |a| {
            let raw = arg_str(&a[0]);
            let u = Url::parse(raw)
                .map_err(|e| FuncError::msg(format!("unable to parse url: parse {}: {e}", quote(raw))))?;
            let entries = BTreeMap::from([
                ("scheme".to_string(), Value::from(u.scheme.as_str())),
                ("host".to_string(), Value::from(u.host.as_str())),
                ("hostname".to_string(), Value::from(u.hostname())),
                ("path".to_string(), Value::from(u.path.as_str())),
                ("query".to_string(), Value::from(u.raw_query.as_str())),
                ("opaque".to_string(), Value::from(u.opaque.as_str())),
                ("fragment".to_string(), Value::from(u.fragment.as_str())),
                (
                    "userinfo".to_string(),
                    Value::from(u.user.as_ref().map(Userinfo::render).unwrap_or_default()),
                ),
            ]);
            Ok(Value::map(entries))
        }),
    );
    map.insert(
        "urlJoin",
        Func::pure(&[GoType::MapAny], |a| {
            let get = |key: &str| -> Result<String, FuncError> {
                let Some(m) = a[0].as_map() else {
                    return Ok(String::new());
                };
                match m.get(key) {
                    None => Ok(String::new()),
                    Some(v @ (Value::String(_) | Value::ByteString(_))) => {
                        Ok(v.go_str_lossy().unwrap_or_default().into_owned())
                    }
                    Some(other) => Err(FuncError::msg(format!(
                        "unable to parse {key} key, must be of type string, but {} found",
                        other.kind_name()
                    ))),
                }
            };
            let userinfo = get("userinfo")?;
            let user = if userinfo.is_empty() {
                None
            } else {
                let temp = format!("proto://{userinfo}@host");
                let parsed = Url::parse(&temp).map_err(|e| {
                    FuncError::msg(format!(
                        "unable to parse userinfo in dict: parse {}: {e}",
                        quote(&temp)
                    ))
                })?;
                parsed.user
            };
            let u = Url {
                scheme: get("scheme")?,
                host: get("host")?,
                path: get("path")?,
                raw_query: get("query")?,
                opaque: get("opaque")?,
                fragment: get("fragment")?,
                user,
                ..Url::default()
            };
            Ok(Value::from(u.render()))
        }),
    );
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Path,
    Host,
    UserPassword,
    Fragment,
}

#[derive(Clone, Debug, Default)]
struct Userinfo {
    username: String,
    password: Option<String>,
}

impl Userinfo {
    fn render(&self) -> String {
        let mut s = escape(&self.username, Mode::UserPassword);
        if let Some(p) = &self.password {
            s.push(':');
            s.push_str(&escape(p, Mode::UserPassword));
        }
        s
    }
}

#[derive(Clone, Debug, Default)]
struct Url {
    scheme: String,
    opaque: String,
    user: Option<Userinfo>,
    host: String,
    path: String,
    raw_path: String,
    omit_host: bool,
    force_query: bool,
    raw_query: String,
    fragment: String,
    raw_fragment: String,
}

fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'~') {
        return false;
    }
    if mode == Mode::Host {
        return !matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        );
    }
    match c {
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::Path => c == b'?',
            Mode::UserPassword => matches!(c, b'@' | b'/' | b'?' | b':'),
            Mode::Fragment => false,
            Mode::Host => false,
        },
        b'!' | b'(' | b')' | b'*' if mode == Mode::Fragment => false,
        _ => true,
    }
}

fn escape(s: &str, mode: Mode) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        if should_escape(c, mode) {
            out.push_str(&format!("%{c:02X}"));
        } else {
            out.push(c as char);
        }
    }
    out
}

fn unhex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

fn unescape(s: &str, mode: Mode) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let (Some(h), Some(l)) = (
                    b.get(i + 1).and_then(|&c| unhex(c)),
                    b.get(i + 2).and_then(|&c| unhex(c)),
                ) else {
                    let end = (i + 3).min(b.len());
                    return Err(format!(
                        "invalid URL escape {}",
                        quote(&String::from_utf8_lossy(&b[i..end]))
                    ));
                };
                if mode == Mode::Host && h < 8 && &b[i..i + 3] != b"%25" {
                    return Err(format!(
                        "invalid URL escape {}",
                        quote(&String::from_utf8_lossy(&b[i..i + 3]))
                    ));
                }
                out.push(h * 16 + l);
                i += 3;
            }
            c if mode == Mode::Host && c < 0x80 && should_escape(c, mode) => {
                return Err(format!(
                    "invalid character {} in host name",
                    quote(&(c as char).to_string())
                ));
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Splits `scheme:` off, per RFC 3986 (`[A-Za-z][A-Za-z0-9+.-]*`).
fn split_scheme(raw: &str) -> Result<(String, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            c if c.is_ascii_alphabetic() => {}
            c if c.is_ascii_digit() || matches!(c, b'+' | b'-' | b'.') => {
                if i == 0 {
                    return Ok((String::new(), raw));
                }
            }
            b':' => {
                if i == 0 {
                    return Err("missing protocol scheme".into());
                }
                return Ok((raw[..i].to_ascii_lowercase(), &raw[i + 1..]));
            }
            _ => return Ok((String::new(), raw)),
        }
    }
    Ok((String::new(), raw))
}

fn valid_userinfo(s: &str) -> bool {
    s.bytes().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'.'
                    | b'_'
                    | b':'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b'%'
                    | b'@'
            )
    })
}

fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let Some(end) = host.rfind(']') else {
            return Err("missing ']' in host".into());
        };
        let port = &host[end + 1..];
        if !port.is_empty() && !valid_port(port) {
            return Err(format!("invalid port {} after host", quote(port)));
        }
    } else if let Some(i) = host.rfind(':') {
        let port = &host[i..];
        if !valid_port(port) {
            return Err(format!("invalid port {} after host", quote(port)));
        }
    }
    unescape(host, Mode::Host)
}

/// `:digits` (or just `:`).
fn valid_port(p: &str) -> bool {
    p.strip_prefix(':')
        .is_some_and(|d| d.bytes().all(|c| c.is_ascii_digit()))
}

impl Url {
    fn parse(raw: &str) -> Result<Url, String> {
        let (rest, frag) = match raw.split_once('#') {
            Some((r, f)) => (r, Some(f)),
            None => (raw, None),
        };
        let mut u = Url::parse_main(rest)?;
        if let Some(f) = frag {
            u.fragment = unescape(f, Mode::Fragment)?;
            if escape(&u.fragment, Mode::Fragment) != f {
                u.raw_fragment = f.to_string();
            }
        }
        Ok(u)
    }

    fn parse_main(raw: &str) -> Result<Url, String> {
        if raw.bytes().any(|c| c < 0x20 || c == 0x7f) {
            return Err("net/url: invalid control character in URL".into());
        }
        let mut u = Url::default();
        if raw == "*" {
            u.path = "*".into();
            return Ok(u);
        }
        let (scheme, mut rest) = split_scheme(raw)?;
        u.scheme = scheme;
        if rest.ends_with('?') && rest.matches('?').count() == 1 {
            u.force_query = true;
            rest = &rest[..rest.len() - 1];
        } else if let Some((r, q)) = rest.split_once('?') {
            u.raw_query = q.to_string();
            rest = r;
        }
        if !rest.starts_with('/') {
            if !u.scheme.is_empty() {
                u.opaque = rest.to_string();
                return Ok(u);
            }
            let first_segment = rest.split('/').next().unwrap_or("");
            if first_segment.contains(':') {
                return Err("first path segment in URL cannot contain colon".into());
            }
        }
        if (!u.scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
            let after = &rest[2..];
            let (authority, path) = match after.find('/') {
                Some(i) => (&after[..i], &after[i..]),
                None => (after, ""),
            };
            u.parse_authority(authority)?;
            rest = path;
        } else if !u.scheme.is_empty() && rest.starts_with('/') {
            u.omit_host = true;
        }
        u.path = unescape(rest, Mode::Path)?;
        if escape(&u.path, Mode::Path) != rest {
            u.raw_path = rest.to_string();
        }
        Ok(u)
    }

    fn parse_authority(&mut self, authority: &str) -> Result<(), String> {
        match authority.rfind('@') {
            None => self.host = parse_host(authority)?,
            Some(i) => {
                self.host = parse_host(&authority[i + 1..])?;
                let info = &authority[..i];
                if !valid_userinfo(info) {
                    return Err("net/url: invalid userinfo".into());
                }
                self.user = Some(match info.split_once(':') {
                    None => Userinfo {
                        username: unescape(info, Mode::UserPassword)?,
                        password: None,
                    },
                    Some((name, pass)) => Userinfo {
                        username: unescape(name, Mode::UserPassword)?,
                        password: Some(unescape(pass, Mode::UserPassword)?),
                    },
                });
            }
        }
        Ok(())
    }

    /// The host without a port (and without IPv6 brackets).
    fn hostname(&self) -> String {
        let h = &self.host;
        if let Some(rest) = h.strip_prefix('[') {
            return rest.split(']').next().unwrap_or("").to_string();
        }
        match h.rfind(':') {
            Some(i) if valid_port(&h[i..]) => h[..i].to_string(),
            _ => h.clone(),
        }
    }

    fn escaped_path(&self) -> String {
        if !self.raw_path.is_empty() && unescape(&self.raw_path, Mode::Path).is_ok_and(|p| p == self.path) {
            return self.raw_path.clone();
        }
        if self.path == "*" {
            return "*".into();
        }
        escape(&self.path, Mode::Path)
    }

    /// `URL.String()`.
    fn render(&self) -> String {
        let mut buf = String::new();
        if !self.scheme.is_empty() {
            buf.push_str(&self.scheme);
            buf.push(':');
        }
        if !self.opaque.is_empty() {
            buf.push_str(&self.opaque);
        } else {
            let no_authority = self.host.is_empty() && self.user.is_none();
            if !(no_authority && (self.scheme.is_empty() || self.omit_host)) {
                if !self.host.is_empty() || !self.path.is_empty() || self.user.is_some() {
                    buf.push_str("//");
                }
                if let Some(u) = &self.user {
                    buf.push_str(&u.render());
                    buf.push('@');
                }
                buf.push_str(&escape(&self.host, Mode::Host));
            }
            let path = self.escaped_path();
            if !path.is_empty() && !path.starts_with('/') && !self.host.is_empty() {
                buf.push('/');
            }
            if buf.is_empty() && path.split('/').next().is_some_and(|seg| seg.contains(':')) {
                buf.push_str("./");
            }
            buf.push_str(&path);
        }
        if self.force_query || !self.raw_query.is_empty() {
            buf.push('?');
            buf.push_str(&self.raw_query);
        }
        if !self.fragment.is_empty() {
            buf.push('#');
            let raw_ok = !self.raw_fragment.is_empty()
                && unescape(&self.raw_fragment, Mode::Fragment).is_ok_and(|f| f == self.fragment);
            if raw_ok {
                buf.push_str(&self.raw_fragment);
            } else {
                buf.push_str(&escape(&self.fragment, Mode::Fragment));
            }
        }
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_render() {
        let u = Url::parse("https://user:p%40ss@example.com:8443/a%20b/c?x=1&y=2#frag").unwrap_or_default();
        assert_eq!(u.scheme, "https");
        assert_eq!(u.host, "example.com:8443");
        assert_eq!(u.hostname(), "example.com");
        assert_eq!(u.path, "/a b/c");
        assert_eq!(u.raw_query, "x=1&y=2");
        assert_eq!(
            u.user.as_ref().map(Userinfo::render).as_deref(),
            Some("user:p%40ss")
        );
        assert_eq!(
            u.render(),
            "https://user:p%40ss@example.com:8443/a%20b/c?x=1&y=2#frag"
        );
        assert_eq!(Url::parse("mailto:a@b").map(|u| u.opaque).as_deref(), Ok("a@b"));
        assert!(Url::parse("http://x:y").is_err());
    }
}
