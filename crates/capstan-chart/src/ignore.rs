//! `.helmignore` rules with Helm v4.2.3's semantics (`pkg/ignore`), which are simpler than
//! `.gitignore`:
//!
//! - one shell glob per line (Go `filepath.Match`: `*`, `?`, `[...]`, `\` escapes; `*` never
//!   crosses `/`); blank lines and `#` comments are skipped, lines are trimmed;
//! - `**` is rejected; a malformed glob fails the whole file (`syntax error in pattern`);
//! - a trailing `/` restricts the rule to directories; a leading `/` anchors it at the
//!   chart root; a rule containing `/` matches the whole relative path, one without `/`
//!   only the base name;
//! - `!rule` is a *negative* rule, and Helm evaluates it literally: every path the rule does
//!   **not** match is ignored (so `!Chart.yaml` ignores everything else, verified).
//!
//! Rules are checked in order and the first verdict wins.

/// Why a `.helmignore` could not be parsed; the text is Helm's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IgnoreError {
    #[error("double-star (**) syntax is not supported")]
    DoubleStar,
    #[error("syntax error in pattern")]
    BadPattern,
}

/// The rule Helm always adds: hidden files directly inside `templates/`.
const DEFAULT_RULE: &str = "templates/.?*";

/// What part of the path a rule's glob is matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The base name only (the rule has no `/`).
    BaseName,
    /// The whole path relative to the chart root.
    Path,
}

#[derive(Debug, Clone)]
struct Rule {
    glob: Glob,
    scope: Scope,
    negate: bool,
    dirs_only: bool,
}

/// A parsed `.helmignore` (plus Helm's default rule once [`Rules::add_defaults`] ran).
#[derive(Debug, Clone, Default)]
pub struct Rules {
    rules: Vec<Rule>,
}

impl Rules {
    /// No rules at all (archives are loaded without `.helmignore`).
    pub fn empty() -> Rules {
        Rules::default()
    }

    /// Parses the text of a `.helmignore` file.
    pub fn parse(text: &str) -> Result<Rules, IgnoreError> {
        let mut rules = Rules::default();
        for line in text.lines() {
            rules.add(line)?;
        }
        Ok(rules)
    }

    /// Appends Helm's built-in rule (`templates/.?*`).
    pub fn add_defaults(&mut self) {
        // The default rule is well-formed; an error here would be a programming mistake.
        let _ = self.add(DEFAULT_RULE);
    }

    fn add(&mut self, line: &str) -> Result<(), IgnoreError> {
        let mut rule = line.trim();
        if rule.is_empty() || rule.starts_with('#') {
            return Ok(());
        }
        if rule.contains("**") {
            return Err(IgnoreError::DoubleStar);
        }
        // Helm validates the rule as written, before stripping `!` and slashes.
        Glob::compile(rule)?;
        let negate = rule.starts_with('!');
        if negate {
            rule = &rule[1..];
        }
        let dirs_only = rule.ends_with('/');
        if dirs_only {
            rule = &rule[..rule.len() - 1];
        }
        let scope = if rule.contains('/') {
            Scope::Path
        } else {
            Scope::BaseName
        };
        // A leading `/` only anchors the rule; paths are always relative to the root.
        let rule = rule.strip_prefix('/').unwrap_or(rule);
        self.rules.push(Rule {
            glob: Glob::compile(rule)?,
            scope,
            negate,
            dirs_only,
        });
        Ok(())
    }

    /// Whether `path` (relative to the chart root, `/`-separated) is ignored.
    pub fn ignore(&self, path: &str, is_dir: bool) -> bool {
        if path.is_empty() || path == "." || path == "./" {
            return false;
        }
        for rule in &self.rules {
            let subject = match rule.scope {
                Scope::BaseName => path.rsplit('/').next().unwrap_or(path),
                Scope::Path => path,
            };
            if rule.negate {
                // Helm's literal reading of a negative rule: non-matches are ignored.
                if (rule.dirs_only && !is_dir) || !rule.glob.matches(subject) {
                    return true;
                }
                continue;
            }
            if rule.dirs_only && !is_dir {
                continue;
            }
            if rule.glob.matches(subject) {
                return true;
            }
        }
        false
    }
}

/// One element of a compiled Go `filepath.Match` pattern.
#[derive(Debug, Clone)]
enum Token {
    Literal(char),
    /// `?`: one character other than `/`.
    AnyChar,
    /// `*`: any run of characters other than `/`.
    Star,
    /// `[...]`: one character in (or, negated, not in) the ranges.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

/// A Go `filepath.Match` glob with `/` as the separator.
#[derive(Debug, Clone)]
pub struct Glob {
    tokens: Vec<Token>,
}

impl Glob {
    /// Compiles `pattern`, rejecting what Go reports as `ErrBadPattern`.
    pub fn compile(pattern: &str) -> Result<Glob, IgnoreError> {
        let mut tokens = Vec::new();
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '*' => tokens.push(Token::Star),
                '?' => tokens.push(Token::AnyChar),
                '\\' => tokens.push(Token::Literal(chars.next().ok_or(IgnoreError::BadPattern)?)),
                '[' => {
                    let negated = chars.next_if_eq(&'^').is_some();
                    let mut ranges = Vec::new();
                    loop {
                        if !ranges.is_empty() && chars.next_if_eq(&']').is_some() {
                            break;
                        }
                        let lo = class_char(&mut chars)?;
                        let hi = if chars.next_if_eq(&'-').is_some() {
                            class_char(&mut chars)?
                        } else {
                            lo
                        };
                        if hi < lo {
                            return Err(IgnoreError::BadPattern);
                        }
                        ranges.push((lo, hi));
                    }
                    tokens.push(Token::Class { negated, ranges });
                }
                other => tokens.push(Token::Literal(other)),
            }
        }
        Ok(Glob { tokens })
    }

    /// Whether the whole of `name` matches. Linear-space dynamic programming over
    /// (token, character) positions, so hostile patterns cannot blow up.
    pub fn matches(&self, name: &str) -> bool {
        let text: Vec<char> = name.chars().collect();
        // reach[i]: the first `i` characters can be consumed by the tokens seen so far.
        let mut reach = vec![false; text.len() + 1];
        reach[0] = true;
        for token in &self.tokens {
            let mut next = vec![false; text.len() + 1];
            match token {
                Token::Star => {
                    let mut open = false;
                    for i in 0..=text.len() {
                        open = reach[i] || (open && i > 0 && text[i - 1] != '/');
                        next[i] = open;
                    }
                }
                single => {
                    for i in 0..text.len() {
                        if reach[i] && single_matches(single, text[i]) {
                            next[i + 1] = true;
                        }
                    }
                }
            }
            reach = next;
            if !reach.contains(&true) {
                return false;
            }
        }
        reach[text.len()]
    }
}

fn single_matches(token: &Token, c: char) -> bool {
    match token {
        Token::Literal(l) => *l == c,
        Token::AnyChar => c != '/',
        Token::Class { negated, ranges } => {
            let inside = ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c));
            inside != *negated
        }
        Token::Star => false,
    }
}

/// One (possibly escaped) character inside `[...]`; `-` and `]` must be escaped there.
fn class_char(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Result<char, IgnoreError> {
    match chars.next() {
        None | Some('-') | Some(']') => Err(IgnoreError::BadPattern),
        Some('\\') => chars.next().ok_or(IgnoreError::BadPattern),
        Some(c) => Ok(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glob(p: &str, s: &str) -> bool {
        Glob::compile(p).unwrap().matches(s)
    }

    #[test]
    fn go_filepath_match_semantics() {
        assert!(glob("*.md", "a.md"));
        assert!(!glob("*.md", "x/a.md"));
        assert!(glob("x?z", "xyz"));
        assert!(!glob("x?z", "x/z"));
        assert!(glob("[ab].c", "b.c"));
        assert!(!glob("[^ab].c", "b.c"));
        assert!(glob("[a-c]x", "bx"));
        assert!(glob("\\*", "*"));
        assert!(!glob("\\*", "a"));
        assert!(glob("dir/*.txt", "dir/a.txt"));
        assert!(!glob("dir/*.txt", "dir/deep/b.txt"));
        assert!(glob("templates/.?*", "templates/.hidden"));
        assert!(!glob("templates/.?*", "templates/d/.h2"));
        assert!(glob("a*b*c", "aXbYbZc"));
        assert!(glob("", ""));
        assert!(!glob("", "a"));
    }

    #[test]
    fn malformed_patterns_are_rejected() {
        for bad in ["a[", "[]", "[-a]", "a\\", "[z-a]"] {
            assert_eq!(Glob::compile(bad).err(), Some(IgnoreError::BadPattern), "{bad}");
        }
        assert_eq!(Rules::parse("a/**\n").err(), Some(IgnoreError::DoubleStar));
        assert_eq!(Rules::parse("ok\na[\n").err(), Some(IgnoreError::BadPattern));
    }

    #[test]
    fn helm_rule_scopes_match_real_helm() {
        // Verified against Helm 4.2.3 (same .helmignore, same tree).
        let mut rules =
            Rules::parse("*.md\n  # comment\nsub/\n/top.txt\ndir/*.txt\n  x?z  \n[ab].c\nnotdir.txt/\n")
                .unwrap();
        rules.add_defaults();
        let ignored = |p: &str, dir: bool| rules.ignore(p, dir);
        for p in [
            "a.md",
            "x/b.md",
            "top.txt",
            "dir/a.txt",
            "xyz",
            "q/xyz",
            "a.c",
            "q/b.c",
            "templates/.hidden",
        ] {
            assert!(ignored(p, false), "{p} should be ignored");
        }
        assert!(ignored("sub", true) && ignored("x/sub", true));
        for p in [
            ".helmignore",
            ".top",
            "dir/deep/b.txt",
            "notdir.txt",
            "x/top.txt",
            "templates/d/.h2",
            "Chart.yaml",
        ] {
            assert!(!ignored(p, false), "{p} should be kept");
        }
    }

    #[test]
    fn negative_rules_ignore_every_non_match() {
        let rules = Rules::parse("!Chart.yaml\n").unwrap();
        assert!(!rules.ignore("Chart.yaml", false));
        assert!(rules.ignore("templates", true));
        assert!(rules.ignore("values.yaml", false));
    }

    #[test]
    fn long_hostile_pattern_is_fast() {
        let pattern = "*a".repeat(200);
        let text = "a".repeat(5000) + "b";
        assert!(!glob(&pattern, &text));
    }
}
