//! Glob patterns as `.Files.Glob` understands them (gobwas/glob with `/` as separator):
//! `*` matches within one path segment, `**` across segments, `?` one non-separator
//! character, `[abc]`/`[a-z]`/`[!a-z]` character classes, `{a,b}` alternatives, `\` escapes.

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(char),
    /// `*`: any run of non-separator characters.
    Star,
    /// `**`: any run of characters.
    SuperStar,
    /// `?`: one non-separator character.
    Any,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    Alternatives(Vec<Glob>),
}

const SEPARATOR: char = '/';

/// Why a pattern does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid glob pattern {pattern:?}: {reason}")]
pub struct GlobError {
    pub pattern: String,
    pub reason: &'static str,
}

impl Glob {
    pub fn compile(pattern: &str) -> Result<Glob, GlobError> {
        let chars: Vec<char> = pattern.chars().collect();
        let (glob, rest) = parse_seq(&chars, false).map_err(|reason| GlobError {
            pattern: pattern.into(),
            reason,
        })?;
        if !rest.is_empty() {
            return Err(GlobError {
                pattern: pattern.into(),
                reason: "unexpected character",
            });
        }
        Ok(glob)
    }

    pub fn matches(&self, text: &str) -> bool {
        let chars: Vec<char> = text.chars().collect();
        match_tokens(&self.tokens, &chars)
    }
}

/// Parses tokens until the end, or (inside `{}`) until `,` or `}`.
fn parse_seq(mut chars: &[char], in_braces: bool) -> Result<(Glob, &[char]), &'static str> {
    let mut tokens = Vec::new();
    while let Some((&c, rest)) = chars.split_first() {
        if in_braces && (c == ',' || c == '}') {
            break;
        }
        chars = rest;
        match c {
            '*' => {
                if chars.first() == Some(&'*') {
                    chars = &chars[1..];
                    tokens.push(Token::SuperStar);
                } else {
                    tokens.push(Token::Star);
                }
            }
            '?' => tokens.push(Token::Any),
            '\\' => match chars.split_first() {
                Some((&escaped, rest)) => {
                    tokens.push(Token::Literal(escaped));
                    chars = rest;
                }
                None => return Err("trailing escape"),
            },
            '[' => {
                let (token, rest) = parse_class(chars)?;
                tokens.push(token);
                chars = rest;
            }
            '{' => {
                let mut alternatives = Vec::new();
                loop {
                    let (alt, rest) = parse_seq(chars, true)?;
                    alternatives.push(alt);
                    match rest.split_first() {
                        Some((',', rest)) => chars = rest,
                        Some(('}', rest)) => {
                            chars = rest;
                            break;
                        }
                        _ => return Err("unclosed alternatives"),
                    }
                }
                tokens.push(Token::Alternatives(alternatives));
            }
            '}' | ']' if !in_braces => return Err("unexpected closing bracket"),
            other => tokens.push(Token::Literal(other)),
        }
    }
    Ok((Glob { tokens }, chars))
}

fn parse_class(mut chars: &[char]) -> Result<(Token, &[char]), &'static str> {
    let negated = chars.first() == Some(&'!');
    if negated {
        chars = &chars[1..];
    }
    let mut ranges = Vec::new();
    loop {
        match chars {
            [']', rest @ ..] => return Ok((Token::Class { negated, ranges }, rest)),
            [lo, '-', hi, rest @ ..] if *hi != ']' => {
                ranges.push((*lo, *hi));
                chars = rest;
            }
            [c, rest @ ..] => {
                ranges.push((*c, *c));
                chars = rest;
            }
            [] => return Err("unclosed character class"),
        }
    }
}

/// Backtracking matcher; patterns are short, so the simple approach is fine.
fn match_tokens(tokens: &[Token], text: &[char]) -> bool {
    let Some((first, rest)) = tokens.split_first() else {
        return text.is_empty();
    };
    match first {
        Token::Literal(c) => text.first() == Some(c) && match_tokens(rest, &text[1..]),
        Token::Any => text.first().is_some_and(|&c| c != SEPARATOR) && match_tokens(rest, &text[1..]),
        Token::Class { negated, ranges } => {
            text.first().is_some_and(|&c| {
                let inside = ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
                inside != *negated
            }) && match_tokens(rest, &text[1..])
        }
        Token::Star => {
            for i in 0..=text.len() {
                if match_tokens(rest, &text[i..]) {
                    return true;
                }
                if text.get(i) == Some(&SEPARATOR) {
                    break;
                }
            }
            false
        }
        Token::SuperStar => (0..=text.len()).any(|i| match_tokens(rest, &text[i..])),
        Token::Alternatives(alts) => alts.iter().any(|alt| {
            let mut joined = alt.tokens.clone();
            joined.extend_from_slice(rest);
            match_tokens(&joined, text)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::Glob;

    fn m(p: &str, t: &str) -> bool {
        Glob::compile(p).expect("pattern compiles").matches(t)
    }

    #[test]
    fn star_stays_in_segment() {
        assert!(m("files/*", "files/a.txt"));
        assert!(!m("files/*", "files/sub/a.txt"));
        assert!(m("files/**", "files/sub/a.txt"));
        assert!(m("**.yaml", "a/b/c.yaml"));
        assert!(m("*", "a.txt"));
        assert!(!m("*", "a/b"));
    }

    #[test]
    fn classes_alternatives_escapes() {
        assert!(m("{a,b}.txt", "b.txt"));
        assert!(!m("{a,b}.txt", "c.txt"));
        assert!(m("[a-c]?.txt", "bx.txt"));
        assert!(!m("[!a-c]?.txt", "bx.txt"));
        assert!(m("a\\*", "a*"));
        assert!(!m("a?", "a/"));
    }

    #[test]
    fn invalid_patterns_are_errors() {
        assert!(Glob::compile("[abc").is_err());
        assert!(Glob::compile("{a,b").is_err());
        assert!(Glob::compile("a\\").is_err());
    }
}
