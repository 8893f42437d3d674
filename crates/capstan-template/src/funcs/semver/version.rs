//! Masterminds/semver v3 versions as Helm sees them: the lax parser behind `NewVersion`
//! (optional `v`, missing minor/patch coerced to 0) and the comparison order.

use std::cmp::Ordering;

/// A parsed semantic version; `original` is the text it came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: String,
    pub metadata: String,
    pub original: String,
}

/// The library's error texts.
pub const INVALID_SEMVER: &str = "invalid semantic version";
pub const SEGMENT_STARTS_ZERO: &str = "version segment starts with 0";
pub const INVALID_METADATA: &str = "invalid metadata string";
pub const INVALID_PRERELEASE: &str = "invalid prerelease string";

/// The pieces of version-like text, as written.
#[derive(Debug, Default, PartialEq)]
pub struct Pieces<'a> {
    pub major: &'a str,
    /// Each includes its leading `.`, `-` or `+`; empty when absent.
    pub minor: &'a str,
    pub patch: &'a str,
    pub pre: &'a str,
    pub metadata: &'a str,
}

/// Scans `v? N (.N)? (.N)? (-ident(.ident)*)? (+ident(.ident)*)?` at the start of `s`, where
/// `is_num` decides which characters make up a number. Returns the pieces and the length
/// consumed, or `None` when there is no number.
pub fn scan(s: &str, is_num: fn(u8) -> bool) -> Option<(Pieces<'_>, usize)> {
    let b = s.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'v'));
    let take = |from: usize, pred: &dyn Fn(u8) -> bool| {
        let mut j = from;
        while j < b.len() && pred(b[j]) {
            j += 1;
        }
        j
    };
    let start = i;
    i = take(i, &|c| is_num(c));
    if i == start {
        return None;
    }
    let mut pieces = Pieces {
        major: &s[start..i],
        ..Pieces::default()
    };
    for slot in [&mut pieces.minor, &mut pieces.patch] {
        if b.get(i) == Some(&b'.') {
            let end = take(i + 1, &|c| is_num(c));
            if end > i + 1 {
                *slot = &s[i..end];
                i = end;
                continue;
            }
        }
        break;
    }
    for (mark, slot) in [(b'-', &mut pieces.pre), (b'+', &mut pieces.metadata)] {
        if b.get(i) == Some(&mark) {
            let end = idents_end(b, i + 1);
            if end > i + 1 {
                *slot = &s[i..end];
                i = end;
            }
        }
    }
    Some((pieces, i))
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}

/// The end of `ident(.ident)*` starting at `from` (`from` itself when there is none).
fn idents_end(b: &[u8], from: usize) -> usize {
    let ident = |at: usize| {
        let mut j = at;
        while j < b.len() && is_ident_char(b[j]) {
            j += 1;
        }
        j
    };
    let mut end = ident(from);
    if end == from {
        return from;
    }
    while b.get(end) == Some(&b'.') {
        let next = ident(end + 1);
        if next == end + 1 {
            break;
        }
        end = next;
    }
    end
}

fn parse_segment(digits: &str) -> Result<u64, String> {
    digits.parse::<u64>().map_err(|_| {
        format!("error parsing version segment: strconv.ParseUint: parsing \"{digits}\": value out of range")
    })
}

/// Numeric prerelease identifiers must not have leading zeros.
pub fn validate_prerelease(pre: &str) -> Result<(), String> {
    for part in pre.split('.') {
        if part.is_empty() || !part.bytes().all(is_ident_char) {
            return Err(INVALID_PRERELEASE.into());
        }
        if part.bytes().all(|c| c.is_ascii_digit()) && part.len() > 1 && part.starts_with('0') {
            return Err(SEGMENT_STARTS_ZERO.into());
        }
    }
    Ok(())
}

pub fn validate_metadata(meta: &str) -> Result<(), String> {
    if meta
        .split('.')
        .all(|p| !p.is_empty() && p.bytes().all(is_ident_char))
    {
        Ok(())
    } else {
        Err(INVALID_METADATA.into())
    }
}

impl Version {
    /// `semver.NewVersion`: lax parsing of the whole string.
    pub fn parse(s: &str) -> Result<Version, String> {
        let (p, len) = scan(s, |c| c.is_ascii_digit()).ok_or(INVALID_SEMVER)?;
        if len != s.len() {
            return Err(INVALID_SEMVER.into());
        }
        let segment = |piece: &str| {
            if piece.is_empty() {
                Ok(0)
            } else {
                parse_segment(&piece[1..])
            }
        };
        let v = Version {
            major: parse_segment(p.major)?,
            minor: segment(p.minor)?,
            patch: segment(p.patch)?,
            pre: p.pre.get(1..).unwrap_or_default().to_string(),
            metadata: p.metadata.get(1..).unwrap_or_default().to_string(),
            original: s.to_string(),
        };
        if !v.pre.is_empty() {
            validate_prerelease(&v.pre)?;
        }
        Ok(v)
    }

    /// The canonical form (`1.2.3-pre+meta`, no `v`).
    pub fn render(&self) -> String {
        let mut s = format!("{}.{}.{}", self.major, self.minor, self.patch);
        if !self.pre.is_empty() {
            s.push('-');
            s.push_str(&self.pre);
        }
        if !self.metadata.is_empty() {
            s.push('+');
            s.push_str(&self.metadata);
        }
        s
    }

    /// Precedence: numbers, then a release above its prereleases, then prerelease parts;
    /// metadata never counts.
    pub fn compare(&self, other: &Version) -> Ordering {
        self.major
            .cmp(&other.major)
            .then(self.minor.cmp(&other.minor))
            .then(self.patch.cmp(&other.patch))
            .then_with(|| match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => compare_prerelease(&self.pre, &other.pre),
            })
    }

    /// The same version with `original` rewritten after a change (keeping a `v` prefix).
    pub fn with_new_original(mut self) -> Version {
        let prefix = if self.original.starts_with('v') { "v" } else { "" };
        self.original = format!("{prefix}{}", self.render());
        self
    }

    /// `IncPatch`: a prerelease or build becomes its release; otherwise patch + 1.
    pub fn inc_patch(&self) -> Version {
        let mut v = self.clone();
        if v.pre.is_empty() && v.metadata.is_empty() {
            v.patch += 1;
        }
        v.pre.clear();
        v.metadata.clear();
        v.with_new_original()
    }

    pub fn inc_minor(&self) -> Version {
        let mut v = self.clone();
        v.minor += 1;
        v.patch = 0;
        v.pre.clear();
        v.metadata.clear();
        v.with_new_original()
    }

    pub fn inc_major(&self) -> Version {
        let mut v = self.clone();
        v.major += 1;
        v.minor = 0;
        v.patch = 0;
        v.pre.clear();
        v.metadata.clear();
        v.with_new_original()
    }
}

/// Dot-separated parts compared pairwise: numbers numerically and below words, words by
/// bytes, and a missing part below a present one.
pub fn compare_prerelease(a: &str, b: &str) -> Ordering {
    let (pa, pb): (Vec<&str>, Vec<&str>) = (a.split('.').collect(), b.split('.').collect());
    for i in 0..pa.len().max(pb.len()) {
        let (x, y) = (pa.get(i).copied().unwrap_or(""), pb.get(i).copied().unwrap_or(""));
        let ord = compare_part(x, y);
        if ord != Ordering::Equal {
            return ord;
        }
    }
    Ordering::Equal
}

fn compare_part(x: &str, y: &str) -> Ordering {
    if x == y {
        return Ordering::Equal;
    }
    if x.is_empty() {
        return Ordering::Less;
    }
    if y.is_empty() {
        return Ordering::Greater;
    }
    match (x.parse::<u64>(), y.parse::<u64>()) {
        (Ok(a), Ok(b)) => {
            if a > b {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        (Err(_), Err(_)) => x.cmp(y),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lax_parsing() {
        let v = Version::parse("v1.2").map(|v| v.render());
        assert_eq!(v.as_deref(), Ok("1.2.0"));
        assert_eq!(
            Version::parse("01.02.3").map(|v| v.render()).as_deref(),
            Ok("1.2.3")
        );
        assert_eq!(
            Version::parse("1.2.3-beta.1+build.5").map(|v| (v.pre, v.metadata)),
            Ok(("beta.1".into(), "build.5".into()))
        );
        for bad in [
            "",
            "V1.2.3",
            " 1.2.3",
            "1.2.3 ",
            "1.2.3.4",
            "1.2.3-",
            "1.2.3+",
            "1.2.3-a..b",
            "=1.2.3",
            "1.2.3-alpha_1",
        ] {
            assert_eq!(Version::parse(bad), Err(INVALID_SEMVER.into()), "{bad:?}");
        }
        assert_eq!(Version::parse("1.2.3-01"), Err(SEGMENT_STARTS_ZERO.into()));
        assert!(Version::parse("1.2.3-0a").is_ok());
        assert_eq!(
            Version::parse("99999999999999999999.1.1").err().as_deref(),
            Some(
                "error parsing version segment: strconv.ParseUint: parsing \"99999999999999999999\": value out of range"
            )
        );
    }

    #[test]
    fn precedence() {
        let v = |s: &str| Version::parse(s).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v("1.0.0-alpha.9").compare(&v("1.0.0-alpha.10")), Ordering::Less);
        assert_eq!(v("1.0.0-beta.11").compare(&v("1.0.0-rc.1")), Ordering::Less);
        assert_eq!(v("1.0.0").compare(&v("1.0.0-rc.1")), Ordering::Greater);
        assert_eq!(v("1.0.0-alpha").compare(&v("1.0.0-alpha.1")), Ordering::Less);
        assert_eq!(v("1.2.3+a").compare(&v("1.2.3+b")), Ordering::Equal);
    }
}
