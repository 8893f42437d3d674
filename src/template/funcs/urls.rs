//! Sprig v3.3.0 functions: urls. `urlParse` splits a URL the way Go's `net/url.Parse` does
//! into `{scheme, host, hostname, path, query, opaque, fragment, userinfo}`; `urlJoin` builds
//! one back like `url.URL.String()`.

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::template::error::FuncError;
use crate::template::funcs::{Func, FuncEnv, FuncMap, arg_str};
use crate::template::gofmt;
use crate::template::value::{GoType, Value};

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    let _ = env;
    map.insert(
        "urlParse",
        Func::pure(&[GoType::String], |a| {
            let raw = arg_str(&a[0]);
            let url = parse(raw).map_err(|e| {
                FuncError::msg(format!("unable to parse url: parse {}: {e}", gofmt::quote(raw)))
            })?;
            let fields = [
                ("scheme", url.scheme.clone()),
                ("host", url.host.clone()),
                ("hostname", hostname(&url.host).to_string()),
                ("path", url.path.clone()),
                ("query", url.raw_query.clone()),
                ("opaque", url.opaque.clone()),
                ("fragment", url.fragment.clone()),
                ("userinfo", url.userinfo.clone().unwrap_or_default()),
            ];
            Ok(Value::map(
                fields
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), Value::from(v)))
                    .collect::<BTreeMap<_, _>>(),
            ))
        }),
    );
    map.insert(
        "urlJoin",
        Func::pure(&[GoType::MapAny], |a| {
            let get = |key: &str| match a[0].as_map().and_then(|m| m.get(key)) {
                None | Some(Value::Nil) => String::new(),
                Some(v) => v.as_str().map_or_else(|| gofmt::format_value(&v), String::from),
            };
            let userinfo = get("userinfo");
            let url = Url {
                scheme: get("scheme"),
                host: get("host"),
                path: get("path"),
                raw_query: get("query"),
                opaque: get("opaque"),
                fragment: get("fragment"),
                userinfo: (!userinfo.is_empty()).then_some(userinfo),
            };
            Ok(Value::from(url.to_string()))
        }),
    );
}

/// The parts of a URL that sprig exposes.
#[derive(Debug, Default, Clone, PartialEq)]
struct Url {
    scheme: String,
    opaque: String,
    /// `user[:password]` as written (escaped form), when present.
    userinfo: Option<String>,
    host: String,
    path: String,
    raw_query: String,
    fragment: String,
}

fn parse(raw: &str) -> Result<Url, String> {
    let (rest, fragment) = match raw.split_once('#') {
        Some((u, f)) => (u, Some(f)),
        None => (raw, None),
    };
    let mut url = parse_without_fragment(rest)?;
    if let Some(f) = fragment {
        url.fragment = unescape(f)?;
    }
    Ok(url)
}

fn parse_without_fragment(raw: &str) -> Result<Url, String> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    let mut url = Url::default();
    if raw.is_empty() {
        return Ok(url);
    }
    let (scheme, mut rest) = split_scheme(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    if let Some((before, query)) = rest.split_once('?') {
        url.raw_query = query.to_string();
        rest = before;
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            url.opaque = rest.to_string();
            return Ok(url);
        }
        let first = rest.split('/').next().unwrap_or_default();
        if first.contains(':') {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    if (!url.scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let after = &rest[2..];
        let cut = after.find('/').unwrap_or(after.len());
        let authority = &after[..cut];
        rest = &after[cut..];
        match authority.rfind('@') {
            Some(i) => {
                url.userinfo = Some(authority[..i].to_string());
                url.host = parse_host(&authority[i + 1..])?;
            }
            None => url.host = parse_host(authority)?,
        }
    }
    url.path = unescape(rest)?;
    Ok(url)
}

fn split_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return Err("missing protocol scheme".into()),
            ':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

fn parse_host(host: &str) -> Result<String, String> {
    let port = if host.starts_with('[') {
        let end = host.find(']').ok_or("missing ']' in host")?;
        &host[end + 1..]
    } else {
        host.rfind(':').map_or("", |i| &host[i..])
    };
    if !port.is_empty() && (!port.starts_with(':') || !port[1..].bytes().all(|b| b.is_ascii_digit())) {
        return Err(format!("invalid port {} after host", gofmt::quote(port)));
    }
    if let Some(bad) = host
        .chars()
        .find(|&c| c.is_ascii() && !c.is_ascii_alphanumeric() && !"-_.~!$&'()*+,;=:[]<>\"%".contains(c))
    {
        return Err(format!(
            "invalid character {} in host name",
            gofmt::quote(&bad.to_string())
        ));
    }
    unescape(host)
}

/// The host without its port (and without IPv6 brackets), like `URL.Hostname()`.
fn hostname(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rfind(':') {
        Some(i) => &host[..i],
        None => host,
    }
}

/// Percent-decoding; an invalid escape is Go's error.
fn unescape(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = |b: Option<&u8>| b.and_then(|b| (*b as char).to_digit(16));
            match (hex(bytes.get(i + 1)), hex(bytes.get(i + 2))) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => {
                    let end = (i + 3).min(bytes.len());
                    return Err(format!(
                        "invalid URL escape {}",
                        gofmt::quote(&String::from_utf8_lossy(&bytes[i..end]))
                    ));
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Percent-encoding of the bytes Go's `shouldEscape` escapes in `extra_allowed` context.
fn escape(s: &str, extra_allowed: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        let c = b as char;
        if c.is_ascii_alphanumeric() || "-_.~".contains(c) || extra_allowed.contains(c) {
            out.push(c);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl std::fmt::Display for Url {
    /// `url.URL.String()`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut buf = String::new();
        if !self.opaque.is_empty() {
            buf.push_str(&self.scheme);
            buf.push(':');
            buf.push_str(&self.opaque);
        } else {
            if !self.scheme.is_empty() {
                buf.push_str(&self.scheme);
                buf.push(':');
            }
            if !self.scheme.is_empty() || !self.host.is_empty() || self.userinfo.is_some() {
                if !self.host.is_empty() || !self.path.is_empty() || self.userinfo.is_some() {
                    buf.push_str("//");
                }
                if let Some(user) = &self.userinfo {
                    buf.push_str(user);
                    buf.push('@');
                }
                buf.push_str(&escape(&self.host, "!$&'()*+,;=:[]<>\""));
            }
            let path = escape(&self.path, "$&+,/:;=@");
            if !path.is_empty() && !path.starts_with('/') && !self.host.is_empty() {
                buf.push('/');
            }
            if buf.is_empty() && path.split('/').next().is_some_and(|seg| seg.contains(':')) {
                buf.push_str("./");
            }
            buf.push_str(&path);
        }
        if !self.raw_query.is_empty() {
            buf.push('?');
            buf.push_str(&self.raw_query);
        }
        if !self.fragment.is_empty() {
            buf.push('#');
            buf.push_str(&escape(&self.fragment, "$&+,/:;=?@!()*"));
        }
        f.write_str(&buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_go() {
        let u = parse("https://user:pw@example.com:8443/a%20b/c?x=1&y=2#frag").unwrap();
        assert_eq!(u.scheme, "https");
        assert_eq!(u.host, "example.com:8443");
        assert_eq!(hostname(&u.host), "example.com");
        assert_eq!(u.path, "/a b/c");
        assert_eq!(u.raw_query, "x=1&y=2");
        assert_eq!(u.fragment, "frag");
        assert_eq!(u.userinfo.as_deref(), Some("user:pw"));
        assert_eq!(parse("mailto:a@b").unwrap().opaque, "a@b");
        assert!(parse("http://h:port/").is_err());
    }

    #[test]
    fn joins_like_go() {
        let u = Url {
            scheme: "https".into(),
            host: "example.com".into(),
            path: "a b".into(),
            raw_query: "x=1".into(),
            ..Url::default()
        };
        assert_eq!(u.to_string(), "https://example.com/a%20b?x=1");
    }
}
