//! Cluster-stack versions: `vN` (stable), `vN-<channel>.<patch>` (e.g. `v1-alpha.3`) and hash
//! versions `v0-sha.<hash>` (the custom channel of releases built from a git commit).
//!
//! A version has two spellings. The **dot form** (`v1-alpha.3`, `v0-sha.hipstsw`) is the
//! canonical one: `metadata.yaml`, ClusterClass names and asset file names use it, and it is
//! what [`Version`]'s `Display` prints. The **dash form** (`v1-alpha-3`) appears only inside
//! release tags, because a tag's parts are separated by `-` and a GitHub tag should not carry a
//! dot there. [`Version::parse`] reads the dot form, [`Version::parse_dashed`] the dash form;
//! neither accepts the other, so a version can never be misread.
//!
//! Ordering (a total order, unlike the reference operator's, which refuses to compare channels
//! and compares patches as strings): major numerically; then, within one major, pre-releases
//! before the stable version; then by channel name; then by patch — numerically when both
//! patches are numbers (`beta.10` > `beta.9`), numbers before other patches, other patches as
//! strings. Hash versions share major 0 and the channel `sha`, so they order by hash only, which
//! says nothing about age: sort them by commit time instead.

use std::cmp::Ordering;
use std::fmt;

/// The channel name of hash versions (`v0-sha.<hash>`).
pub const HASH_CHANNEL: &str = "sha";

/// A parsed cluster-stack version.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Version {
    major: u64,
    prerelease: Option<Prerelease>,
}

/// The `<channel>.<patch>` part of a non-stable version.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Prerelease {
    /// `alpha`, `beta`, `rc`, `sha`, …: lowercase letters and digits.
    pub channel: String,
    /// A number (`3`) or, for hash versions, the hash (`hipstsw`): lowercase letters and digits.
    pub patch: String,
}

/// Why a version string was refused; the message names the offending part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid cluster-stack version {input:?}: {problem}")]
pub struct VersionError {
    /// The text that was parsed.
    pub input: String,
    /// What is wrong, naming the part (`major version "x1" is not a number`).
    pub problem: String,
}

impl Version {
    /// A stable version `vN`.
    pub fn stable(major: u64) -> Version {
        Version {
            major,
            prerelease: None,
        }
    }

    /// A hash version `v0-sha.<hash>` (the hash: lowercase letters and digits).
    pub fn hash(hash: &str) -> Result<Version, VersionError> {
        Version::parse(&format!("v0-{HASH_CHANNEL}.{hash}"))
    }

    /// Parses the dot form: `v1`, `v1-alpha.3`, `v0-sha.hipstsw`.
    pub fn parse(text: &str) -> Result<Version, VersionError> {
        Version::parse_with(text, '.')
    }

    /// Parses the dash form used inside release tags: `v1`, `v1-alpha-3`, `v0-sha-hipstsw`.
    pub fn parse_dashed(text: &str) -> Result<Version, VersionError> {
        Version::parse_with(text, '-')
    }

    fn parse_with(text: &str, separator: char) -> Result<Version, VersionError> {
        let fail = |problem: String| VersionError {
            input: text.to_string(),
            problem,
        };
        let Some(rest) = text.strip_prefix('v') else {
            return Err(fail(if text.is_empty() {
                "it is empty (expected vN, vN-<channel>.<patch> or v0-sha.<hash>)".into()
            } else {
                "it must start with \"v\" (expected vN, vN-<channel>.<patch> or v0-sha.<hash>)".into()
            }));
        };
        let (major_text, pre_text) = match rest.split_once('-') {
            Some((m, p)) => (m, Some(p)),
            None => (rest, None),
        };
        let major =
            parse_number(major_text).map_err(|why| fail(format!("major version {major_text:?} {why}")))?;
        let Some(pre_text) = pre_text else {
            return Ok(Version::stable(major));
        };
        let form = if separator == '.' {
            "vN-<channel>.<patch>"
        } else {
            "vN-<channel>-<patch> (the dash form of a release tag)"
        };
        let Some((channel, patch)) = pre_text.split_once(separator) else {
            let other = if separator == '.' { '-' } else { '.' };
            let hint = if pre_text.contains(other) {
                format!(
                    "; {:?} is the {} form, which is not accepted here",
                    text,
                    if other == '.' { "dot" } else { "dash" }
                )
            } else {
                String::new()
            };
            return Err(fail(format!(
                "pre-release part {pre_text:?} has no {separator:?} between channel and patch (expected {form}){hint}"
            )));
        };
        check_word(channel).map_err(|why| fail(format!("channel {channel:?} {why}")))?;
        check_word(patch).map_err(|why| fail(format!("patch {patch:?} {why}")))?;
        if channel.bytes().all(|b| b.is_ascii_digit()) {
            return Err(fail(format!("channel {channel:?} must contain a letter")));
        }
        Ok(Version {
            major,
            prerelease: Some(Prerelease {
                channel: channel.to_string(),
                patch: patch.to_string(),
            }),
        })
    }

    /// The major version `N` of `vN…`.
    pub fn major(&self) -> u64 {
        self.major
    }

    /// The channel and patch; `None` for a stable version.
    pub fn prerelease(&self) -> Option<&Prerelease> {
        self.prerelease.as_ref()
    }

    /// The channel name: `stable` for `vN`, else the pre-release channel (`alpha`, `sha`, …).
    pub fn channel(&self) -> &str {
        self.prerelease.as_ref().map_or("stable", |p| p.channel.as_str())
    }

    /// Whether this is a stable version `vN`.
    pub fn is_stable(&self) -> bool {
        self.prerelease.is_none()
    }

    /// Whether this is a hash version `v0-sha.<hash>` (the custom channel).
    pub fn is_hash(&self) -> bool {
        self.prerelease
            .as_ref()
            .is_some_and(|p| p.channel == HASH_CHANNEL)
    }

    /// The dash form used inside release tags (`v1-alpha-3`).
    pub fn dashed(&self) -> String {
        match &self.prerelease {
            None => format!("v{}", self.major),
            Some(p) => format!("v{}-{}-{}", self.major, p.channel, p.patch),
        }
    }
}

/// The dot form (`v1-alpha.3`), as in `metadata.yaml` and ClusterClass names.
impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.prerelease {
            None => write!(f, "v{}", self.major),
            Some(p) => write!(f, "v{}-{}.{}", self.major, p.channel, p.patch),
        }
    }
}

impl std::str::FromStr for Version {
    type Err = VersionError;
    fn from_str(s: &str) -> Result<Version, VersionError> {
        Version::parse(s)
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Version) -> Ordering {
        self.major
            .cmp(&other.major)
            .then_with(|| match (&self.prerelease, &other.prerelease) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Greater,
                (Some(_), None) => Ordering::Less,
                (Some(a), Some(b)) => a
                    .channel
                    .cmp(&b.channel)
                    .then_with(|| compare_patches(&a.patch, &b.patch)),
            })
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Version) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Numeric patches numerically (`10` > `9`), numbers before words, words as strings; ties
/// between equal numbers spelled differently (`01`, `1`) broken by the text.
fn compare_patches(a: &str, b: &str) -> Ordering {
    let numeric = |s: &str| s.bytes().all(|c| c.is_ascii_digit());
    match (numeric(a), numeric(b)) {
        (true, true) => {
            let (ta, tb) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
            ta.len()
                .cmp(&tb.len())
                .then_with(|| ta.cmp(tb))
                .then_with(|| a.cmp(b))
        }
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => a.cmp(b),
    }
}

/// A decimal number without sign or leading zeros, fitting `u64`.
pub(crate) fn parse_number(text: &str) -> Result<u64, &'static str> {
    if text.is_empty() {
        return Err("is empty");
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err("is not a number");
    }
    if text.len() > 1 && text.starts_with('0') {
        return Err("has a leading zero");
    }
    text.parse().map_err(|_| "is too large")
}

/// Lowercase ASCII letters and digits, non-empty (valid inside a Kubernetes object name).
fn check_word(text: &str) -> Result<(), &'static str> {
    if text.is_empty() {
        return Err("is empty");
    }
    if !text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
        return Err("may only contain lowercase letters and digits");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn parses_and_prints_both_forms() {
        for (dot, dash) in [
            ("v1", "v1"),
            ("v12", "v12"),
            ("v1-alpha.3", "v1-alpha-3"),
            ("v0-sha.hipstsw", "v0-sha-hipstsw"),
            ("v2-rc.10", "v2-rc-10"),
        ] {
            let parsed = v(dot);
            assert_eq!(parsed.to_string(), dot);
            assert_eq!(parsed.dashed(), dash);
            assert_eq!(Version::parse_dashed(dash).unwrap(), parsed);
        }
        assert!(v("v0-sha.hipstsw").is_hash());
        assert_eq!(v("v0-sha.hipstsw").channel(), "sha");
        assert_eq!(v("v3").channel(), "stable");
        assert!(v("v3").is_stable());
        assert_eq!(Version::hash("abc1234").unwrap(), v("v0-sha.abc1234"));
    }

    #[test]
    fn errors_name_the_offending_part() {
        let cases = [
            ("", "it is empty"),
            ("1", "must start with \"v\""),
            ("vx", "major version \"x\" is not a number"),
            ("v", "major version \"\" is empty"),
            ("v01", "major version \"01\" has a leading zero"),
            ("v99999999999999999999", "is too large"),
            ("v1-alpha", "pre-release part \"alpha\" has no '.'"),
            ("v1-alpha-3", "is the dash form"),
            ("v1-Alpha.3", "channel \"Alpha\" may only contain lowercase"),
            ("v1-alpha.", "patch \"\" is empty"),
            ("v1-.3", "channel \"\" is empty"),
            ("v1-alpha.3.4", "patch \"3.4\" may only contain"),
            ("v1-1.3", "channel \"1\" must contain a letter"),
        ];
        for (input, expected) in cases {
            let err = Version::parse(input).unwrap_err().to_string();
            assert!(err.contains(expected), "{input:?}: {err}");
            assert!(err.contains(&format!("{input:?}")), "{input:?}: {err}");
        }
        let err = Version::parse_dashed("v1-alpha.3").unwrap_err().to_string();
        assert!(err.contains("is the dot form"), "{err}");
    }

    #[test]
    fn orders_numerically() {
        assert!(v("v10") > v("v9"));
        assert!(v("v1-beta.10") > v("v1-beta.9"));
        assert!(v("v1-beta.2") > v("v1-alpha.9"));
        assert!(v("v1") > v("v1-rc.3"));
        assert!(v("v2-alpha.0") > v("v1"));
        assert!(v("v1-beta.x") > v("v1-beta.100"));
        assert!(v("v1-beta.01") != v("v1-beta.1"));
        assert_eq!(v("v1-beta.01").cmp(&v("v1-beta.1")), Ordering::Less);
        let mut list = [v("v1-beta.10"), v("v2"), v("v1-beta.9"), v("v1"), v("v0-sha.abc")];
        list.sort();
        let printed: Vec<String> = list.iter().map(ToString::to_string).collect();
        assert_eq!(printed, ["v0-sha.abc", "v1-beta.9", "v1-beta.10", "v1", "v2"]);
    }
}
