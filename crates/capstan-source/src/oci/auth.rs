//! Registry credentials and the `WWW-Authenticate` challenges a registry answers with.
//!
//! Credentials are only ever sent to the registry's own origin and, for the Bearer token
//! exchange, to the token endpoint (`realm`) the registry names; they are never printed
//! (`Debug` redacts them).

use base64::Engine;

/// What the client authenticates with.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub enum Credentials {
    /// No credentials; a Bearer challenge is still answered with an anonymous token, as
    /// Harbor, GHCR and Docker Hub require even for public repositories.
    #[default]
    Anonymous,
    /// User name and password: sent as Basic when the registry asks for Basic, or to the
    /// token endpoint when it asks for a Bearer token.
    Basic { username: String, password: String },
    /// A registry token, sent as `Authorization: Bearer` from the first request.
    Token(String),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Anonymous => f.write_str("Anonymous"),
            Credentials::Basic { username, .. } => write!(f, "Basic({username:?}, <redacted>)"),
            Credentials::Token(_) => f.write_str("Token(<redacted>)"),
        }
    }
}

impl Credentials {
    /// The cluster-stack operator's variables: `OCI_ACCESS_TOKEN`, else `OCI_USERNAME` with
    /// `OCI_PASSWORD`, else anonymous. Empty values count as unset.
    pub fn from_env() -> Credentials {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Credentials::from_parts(var("OCI_USERNAME"), var("OCI_PASSWORD"), var("OCI_ACCESS_TOKEN"))
    }

    /// A token wins over a user name; a user name without password has an empty one.
    pub fn from_parts(
        username: Option<String>,
        password: Option<String>,
        token: Option<String>,
    ) -> Credentials {
        match (token, username) {
            (Some(token), _) => Credentials::Token(token.trim().to_string()),
            (None, Some(username)) => Credentials::Basic {
                username,
                password: password.unwrap_or_default(),
            },
            (None, None) => Credentials::Anonymous,
        }
    }

    /// `Basic …` for user name and password.
    pub(super) fn basic_header(&self) -> Option<String> {
        match self {
            Credentials::Basic { username, password } => Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"))
            )),
            _ => None,
        }
    }
}

/// One parsed `WWW-Authenticate` challenge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Challenge {
    Basic,
    Bearer {
        realm: String,
        service: Option<String>,
        scope: Option<String>,
    },
}

/// Parses `WWW-Authenticate` (`Bearer realm="…",service="…",scope="…"` or `Basic realm="…"`).
/// Parameter values may be quoted (with `\` escapes) or bare tokens; names are case-insensitive.
/// `None` for a scheme the client does not speak or a Bearer challenge without realm.
pub fn parse_challenge(header: &str) -> Option<Challenge> {
    let header = header.trim();
    let (scheme, rest) = header.split_once(char::is_whitespace).unwrap_or((header, ""));
    if scheme.eq_ignore_ascii_case("basic") {
        return Some(Challenge::Basic);
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let params = parse_params(rest);
    let get = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let realm = get("realm").filter(|r| !r.is_empty())?;
    Some(Challenge::Bearer {
        realm,
        service: get("service"),
        scope: get("scope"),
    })
}

fn parse_params(mut s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    loop {
        s = s.trim_start_matches(|c: char| c == ',' || c.is_whitespace());
        let Some(eq) = s.find('=') else { break };
        let name = s[..eq].trim().to_string();
        s = s[eq + 1..].trim_start();
        let mut value = String::new();
        if let Some(quoted) = s.strip_prefix('"') {
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, next)) = chars.next() {
                            value.push(next);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => value.push(c),
                }
            }
            s = &quoted[end.min(quoted.len())..];
        } else {
            let end = s.find(',').unwrap_or(s.len());
            value = s[..end].trim().to_string();
            s = &s[end..];
        }
        out.push((name, value));
    }
    out
}

/// The token of a token endpoint's JSON answer (`token`, else `access_token`) and its
/// lifetime in seconds (`expires_in`, default 60 as the distribution spec says).
pub fn parse_token_response(body: &[u8]) -> Option<(String, u64)> {
    #[derive(serde::Deserialize)]
    struct Answer {
        #[serde(default)]
        token: Option<String>,
        #[serde(default)]
        access_token: Option<String>,
        #[serde(default)]
        expires_in: Option<u64>,
    }
    let a: Answer = serde_json::from_slice(body).ok()?;
    let token = a.token.filter(|t| !t.is_empty()).or(a.access_token)?;
    (!token.is_empty()).then(|| (token, a.expires_in.unwrap_or(60).max(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges() {
        let bearer = |realm: &str, service: Option<&str>, scope: Option<&str>| {
            Some(Challenge::Bearer {
                realm: realm.into(),
                service: service.map(str::to_string),
                scope: scope.map(str::to_string),
            })
        };
        let table: &[(&str, Option<Challenge>)] = &[
            (
                r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/ubuntu:pull""#,
                bearer(
                    "https://auth.docker.io/token",
                    Some("registry.docker.io"),
                    Some("repository:library/ubuntu:pull"),
                ),
            ),
            (
                r#"bearer REALM="https://h/t", scope="repository:a/b:pull,push""#,
                bearer("https://h/t", None, Some("repository:a/b:pull,push")),
            ),
            (
                r#"Bearer realm=https://h/t,service=reg"#,
                bearer("https://h/t", Some("reg"), None),
            ),
            (r#"Bearer realm="a\"b""#, bearer("a\"b", None, None)),
            (r#"Basic realm="Registry Realm""#, Some(Challenge::Basic)),
            (r#"Bearer service="x""#, None),
            (r#"Negotiate"#, None),
            ("", None),
        ];
        for (header, want) in table {
            assert_eq!(&parse_challenge(header), want, "{header}");
        }
    }

    proptest::proptest! {
        /// Headers come from the network: any text is parsed or ignored, never a panic.
        #[test]
        fn any_challenge_header_is_parsed_or_ignored(header in "\\PC{0,80}") {
            let _ = parse_challenge(&header);
            let _ = parse_token_response(header.as_bytes());
        }
    }

    #[test]
    fn token_answers() {
        assert_eq!(
            parse_token_response(br#"{"token":"t","expires_in":300}"#),
            Some(("t".into(), 300))
        );
        assert_eq!(
            parse_token_response(br#"{"access_token":"a"}"#),
            Some(("a".into(), 60))
        );
        assert_eq!(
            parse_token_response(br#"{"token":"","access_token":"a"}"#),
            Some(("a".into(), 60))
        );
        assert_eq!(parse_token_response(br#"{"token":""}"#), None);
        assert_eq!(parse_token_response(b"not json"), None);
    }

    #[test]
    fn credentials_are_never_printed() {
        let basic = Credentials::from_parts(Some("u".into()), Some("secret-pw".into()), None);
        let token = Credentials::from_parts(Some("u".into()), None, Some("secret-tok".into()));
        assert!(matches!(token, Credentials::Token(_)), "a token wins");
        for c in [basic, token] {
            let shown = format!("{c:?}");
            assert!(!shown.contains("secret"), "{shown}");
        }
    }
}
