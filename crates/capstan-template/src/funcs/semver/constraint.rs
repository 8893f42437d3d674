//! Masterminds/semver v3 constraints (`semverCompare`, chart dependency ranges,
//! `kubeVersion`): `||` alternatives of comma/space separated comparisons, hyphen ranges,
//! `x`/`*` wildcards, `~`/`^`, and the rule that a prerelease version only satisfies an
//! alternative in which some comparison names a prerelease.

use super::version::{Version, compare_prerelease, scan};

/// One comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    /// `""` and `=`: equality, or a tilde range when the version has wildcards.
    Equal,
    NotEqual,
    Greater,
    Less,
    GreaterEqual,
    LessEqual,
    /// `~` and `~>`
    Tilde,
    Caret,
}

/// Operators by spelling, longest first so `>=` wins over `>`.
const OPS: [(&str, Op); 11] = [
    (">=", Op::GreaterEqual),
    ("=>", Op::GreaterEqual),
    ("<=", Op::LessEqual),
    ("=<", Op::LessEqual),
    ("!=", Op::NotEqual),
    ("~>", Op::Tilde),
    (">", Op::Greater),
    ("<", Op::Less),
    ("=", Op::Equal),
    ("~", Op::Tilde),
    ("^", Op::Caret),
];

/// A single comparison; `dirty` marks wildcard or missing parts (`1.x`, `1.2`, `*`).
#[derive(Clone, Debug)]
struct Comparison {
    op: Op,
    con: Version,
    dirty: bool,
    minor_dirty: bool,
    patch_dirty: bool,
}

/// A parsed constraint: alternatives (`||`), each a conjunction of comparisons.
#[derive(Clone, Debug)]
pub struct Constraints {
    alternatives: Vec<Vec<Comparison>>,
}

/// Go's `\s` in these patterns: ASCII whitespace without `\v`.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0c)
}

/// Characters a constraint's version numbers may hold (wildcards, and a stray `|`).
fn is_wild_num(c: u8) -> bool {
    c.is_ascii_digit() || matches!(c, b'x' | b'X' | b'*' | b'|')
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_space(b[i]) {
        i += 1;
    }
    i
}

/// The version text of a constraint at `s[i..]`: its length, if any.
fn version_at(s: &str, i: usize) -> Option<usize> {
    scan(s.get(i..)?, is_wild_num).map(|(_, len)| len)
}

/// Rewrites hyphen ranges `A - B` into `>= A, <= B `, replacing the matched text (with the
/// whitespace around it) like the library does.
fn rewrite_ranges(s: &str) -> String {
    let b = s.as_bytes();
    let mut found: Vec<(String, String, String)> = Vec::new();
    let mut p = 0;
    while p < b.len() {
        match range_at(s, p) {
            Some((end, lo, hi)) => {
                found.push((s[p..end].to_string(), lo, hi));
                p = end.max(p + 1);
            }
            None => p += 1,
        }
    }
    let mut out = s.to_string();
    for (text, lo, hi) in found {
        out = out.replacen(&text, &format!(">= {lo}, <= {hi} "), 1);
    }
    out
}

/// Matches `\s* V \s+ - \s+ V \s*` at `p`: the end and the two versions.
fn range_at(s: &str, p: usize) -> Option<(usize, String, String)> {
    let b = s.as_bytes();
    let i = skip_space(b, p);
    let lo_len = version_at(s, i)?;
    let lo = &s[i..i + lo_len];
    let mut j = i + lo_len;
    let k = skip_space(b, j);
    if k == j || b.get(k) != Some(&b'-') {
        return None;
    }
    j = k + 1;
    let k = skip_space(b, j);
    if k == j {
        return None;
    }
    let hi_len = version_at(s, k)?;
    let hi = &s[k..k + hi_len];
    let end = skip_space(b, k + hi_len);
    Some((end, lo.to_string(), hi.to_string()))
}

/// The operator at `s[i..]` that is followed by a version, and where that version starts.
fn op_at(s: &str, i: usize) -> Option<(Op, usize)> {
    let b = s.as_bytes();
    let rest = s.get(i..)?;
    OPS.iter()
        .filter(|(spelling, _)| rest.starts_with(spelling))
        .map(|&(spelling, op)| (op, i + spelling.len()))
        .chain(std::iter::once((Op::Equal, i)))
        .map(|(op, after)| (op, skip_space(b, after)))
        .find(|&(_, v)| version_at(s, v).is_some())
}

fn improper(segment: &str) -> String {
    format!("improper constraint: {}", capstan_go::fmt::quote(segment))
}

fn is_x(s: &str) -> bool {
    matches!(s, "x" | "X" | "*")
}

/// Parses one alternative: comparisons separated by whitespace or a comma.
fn parse_alternative(segment: &str) -> Result<Vec<Comparison>, String> {
    let b = segment.as_bytes();
    let mut out = Vec::new();
    let mut i = skip_space(b, 0);
    loop {
        let (op, v) = op_at(segment, i).ok_or_else(|| improper(segment))?;
        let len = version_at(segment, v).ok_or_else(|| improper(segment))?;
        out.push(comparison(op, &segment[v..v + len])?);
        let after = skip_space(b, v + len);
        if after == b.len() {
            return Ok(out);
        }
        // A separator: a comma (with optional spaces), or at least one space.
        i = if b[after] == b',' {
            skip_space(b, after + 1)
        } else if after > v + len {
            after
        } else {
            return Err(improper(segment));
        };
    }
}

/// Builds a comparison, filling wildcard or missing parts with 0 and remembering them.
fn comparison(op: Op, text: &str) -> Result<Comparison, String> {
    let (p, _) = scan(text, is_wild_num).ok_or("constraint parser error")?;
    let (minor, patch) = (p.minor.get(1..).unwrap_or(""), p.patch.get(1..).unwrap_or(""));
    let (version, dirty, minor_dirty, patch_dirty) = if is_x(p.major) {
        (format!("0.0.0{}", p.pre), true, false, false)
    } else if minor.is_empty() || is_x(minor) {
        (format!("{}.0.0{}", p.major, p.pre), true, true, false)
    } else if patch.is_empty() || is_x(patch) {
        (format!("{}{}.0{}", p.major, p.minor, p.pre), true, false, true)
    } else {
        (text.to_string(), false, false, false)
    };
    let con = Version::parse(&version).map_err(|_| "constraint parser error".to_string())?;
    Ok(Comparison {
        op,
        con,
        dirty,
        minor_dirty,
        patch_dirty,
    })
}

impl Constraints {
    /// `semver.NewConstraint`.
    pub fn parse(text: &str) -> Result<Constraints, String> {
        let rewritten = rewrite_ranges(text);
        let alternatives = rewritten
            .split("||")
            .map(parse_alternative)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Constraints { alternatives })
    }

    /// Whether `v` satisfies every comparison of at least one alternative.
    pub fn check(&self, v: &Version) -> bool {
        // A prerelease version is only considered by alternatives where some comparison
        // names a prerelease; then every comparison of that alternative applies normally.
        self.alternatives.iter().any(|all| {
            (v.pre.is_empty() || all.iter().any(|c| !c.con.pre.is_empty())) && all.iter().all(|c| c.check(v))
        })
    }
}

impl Comparison {
    fn check(&self, v: &Version) -> bool {
        let c = &self.con;
        let ord = v.compare(c);
        match self.op {
            Op::Equal => {
                if self.dirty {
                    self.tilde(v)
                } else {
                    ord.is_eq()
                }
            }
            Op::NotEqual => self.not_equal(v),
            Op::Greater => {
                if !self.dirty || v.major != c.major {
                    return ord.is_gt();
                }
                if self.minor_dirty {
                    false
                } else if self.patch_dirty {
                    v.minor > c.minor
                } else {
                    ord.is_gt()
                }
            }
            Op::Less => ord.is_lt(),
            Op::GreaterEqual => ord.is_ge(),
            Op::LessEqual => {
                if !self.dirty {
                    return ord.is_le();
                }
                !(v.major > c.major || (v.major == c.major && v.minor > c.minor && !self.minor_dirty))
            }
            Op::Tilde => self.tilde(v),
            Op::Caret => self.caret(v),
        }
    }

    fn not_equal(&self, v: &Version) -> bool {
        let c = &self.con;
        if self.dirty {
            if c.major != v.major {
                return true;
            }
            if self.minor_dirty {
                return false;
            }
            if c.minor != v.minor {
                return true;
            }
            if self.patch_dirty {
                return (!v.pre.is_empty() || !c.pre.is_empty())
                    && compare_prerelease(&v.pre, &c.pre).is_ne();
            }
        }
        !v.compare(c).is_eq()
    }

    /// `~1.2.3` = `>=1.2.3 <1.3.0`; `~1` = `>=1.0.0 <2.0.0`; `~0`/`~*` match everything.
    fn tilde(&self, v: &Version) -> bool {
        let c = &self.con;
        if v.compare(c).is_lt() {
            return false;
        }
        if c.major == 0 && c.minor == 0 && c.patch == 0 && !self.minor_dirty && !self.patch_dirty {
            return true;
        }
        v.major == c.major && (v.minor == c.minor || self.minor_dirty)
    }

    /// `^1.2.3` = `>=1.2.3 <2.0.0`; `^0.2.3` = `>=0.2.3 <0.3.0`; `^0.0.3` = `=0.0.3`.
    fn caret(&self, v: &Version) -> bool {
        let c = &self.con;
        if v.compare(c).is_lt() {
            return false;
        }
        if c.major > 0 || self.minor_dirty {
            return v.major == c.major;
        }
        if v.major > 0 {
            return false;
        }
        if c.minor > 0 || self.patch_dirty {
            return v.minor == c.minor;
        }
        if v.minor > 0 {
            return false;
        }
        v.patch == c.patch
    }
}

/// Whether `version` satisfies `constraint` (Masterminds/semver v3, as Helm uses it for
/// `semverCompare`, dependency version ranges and `kubeVersion`). Errors carry the library's
/// messages (`improper constraint: "…"`, `invalid semantic version`, …).
pub fn constraint_matches(constraint: &str, version: &str) -> Result<bool, String> {
    let constraints = Constraints::parse(constraint)?;
    let version = Version::parse(version)?;
    Ok(constraints.check(&version))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(c: &str, v: &str) -> bool {
        constraint_matches(c, v).unwrap_or_else(|e| panic!("{c} {v}: {e}"))
    }

    #[test]
    fn kube_version_idioms() {
        assert!(matches(">=1.21-0", "v1.29.3-gke.100"));
        assert!(!matches(">=1.21", "v1.29.3-gke.100"));
        assert!(matches(">= 1.19-0 < 1.21-0", "1.20.5-eks-123"));
        assert!(!matches(">=1.21-0", "1.20.0"));
    }

    #[test]
    fn ranges_and_wildcards() {
        let cases = [
            ("~1.2", "1.3.0", false),
            ("~1.2", "1.2.9", true),
            ("^1.2", "1.9.0", true),
            ("^1.2", "2.0.0", false),
            ("^0.2.3", "0.3.0", false),
            ("^0.0.3", "0.0.4", false),
            ("^0.0", "0.0.9", true),
            ("^0.0", "0.1.0", false),
            (">= 1.2, < 2", "1.9.9", true),
            ("<1 || >=3", "2.0.0", false),
            ("1.2 - 1.4.5", "1.4.6", false),
            ("1.2 - 1.4", "1.4.9", true),
            ("*", "5.0.0-rc1", false),
            ("^*", "3.0.0", false),
            ("~*", "2.3.4", true),
            ("!=1.2", "1.2.4", false),
            (">1.2", "1.2.5", false),
            (">1", "1.9.0", false),
            ("<=1.2", "1.2.9", true),
            ("<1.x", "1.0.0", false),
            ("!=1.x", "2.0.0", true),
            ("1.2.x-beta", "1.2.5-beta", true),
            (">=1.x.3", "1.0.0", true),
            (">=1.0 , <2.0", "1.5.0", true),
        ];
        for (c, v, want) in cases {
            assert_eq!(matches(c, v), want, "{c} {v}");
        }
    }

    #[test]
    fn errors_use_the_library_texts() {
        let err = |c: &str, v: &str| constraint_matches(c, v).err().unwrap_or_default();
        assert_eq!(err("", "1.0.0"), "improper constraint: \"\"");
        assert_eq!(err("foo", "1.0.0"), "improper constraint: \"foo\"");
        assert_eq!(err(">=1.2.3 ||", "1.0.0"), "improper constraint: \"\"");
        assert_eq!(err(">=1.2.3-01", "1.2.3"), "constraint parser error");
        assert_eq!(err(">=1.2.3", "foo"), "invalid semantic version");
        assert_eq!(err("1.0 -1.2", "1.0.0"), "improper constraint: \"1.0 -1.2\"");
        assert_eq!(
            err(">= 1.2.3 - 1.4.0", "1.3.0"),
            "improper constraint: \">=>= 1.2.3, <= 1.4.0 \""
        );
    }
}
