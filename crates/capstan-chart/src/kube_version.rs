//! The Kubernetes version of `--kube-version`, read the way Helm v4.2.3 reads it: Kubernetes'
//! "generic" version form — optional leading ASCII blanks, an optional `v`, two or more
//! dot-separated decimal numbers, then anything on the same line (ignored). `1.30` and
//! `1.2.3.4` are versions; `v1`, `abc` and `01.2` are not. The version prints as `v` and
//! its numbers (`v1.30`, `v1.2.3.4`); templates also see the text as given, with a `v` in
//! front when it had none.

use capstan_go::fmt::quote;

/// Why a text is not a Kubernetes version; the messages are Helm's (Kubernetes').
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubeVersionError {
    #[error("could not parse {} as version", quote(.text))]
    Unparsable { text: String },
    /// Fewer than two numbers.
    #[error("illegal version string {}", quote(.text))]
    TooShort { text: String },
    /// The first number has a leading zero.
    #[error("illegal zero-prefixed version component {} in {}", quote(.component), quote(.text))]
    ZeroPrefixed { component: String, text: String },
    /// A number past 2⁶⁴−1 (Go's `strconv.ParseUint` error follows).
    #[error(
        "illegal non-numeric version component {} in {}: strconv.ParseUint: parsing {}: value out of range",
        quote(.component),
        quote(.text),
        quote(.component)
    )]
    OutOfRange { component: String, text: String },
}

/// A parsed version: its numbers, in order (at least two).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenericVersion {
    pub components: Vec<u64>,
}

impl GenericVersion {
    /// `v` and the numbers joined by dots, as Helm prints `.Capabilities.KubeVersion`.
    pub fn normalized(&self) -> String {
        let numbers: Vec<String> = self.components.iter().map(u64::to_string).collect();
        format!("v{}", numbers.join("."))
    }
}

/// Go's `\s`: ASCII space, tab, newline, form feed, carriage return (not vertical tab).
fn is_go_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0c' | b'\r')
}

/// Parses `text` like Kubernetes' `version.ParseGeneric`, which Helm's `ParseKubeVersion`
/// uses.
pub fn parse_generic(text: &str) -> Result<GenericVersion, KubeVersionError> {
    let unparsable = || KubeVersionError::Unparsable { text: text.into() };
    let bytes = text.as_bytes();
    let mut at = bytes.iter().take_while(|b| is_go_space(**b)).count();
    if bytes.get(at) == Some(&b'v') {
        at += 1;
    }
    // The numbers: digits, then as many `.digits` as follow.
    let start = at;
    let digits = |from: usize| bytes[from..].iter().take_while(|b| b.is_ascii_digit()).count();
    let first = digits(at);
    if first == 0 {
        return Err(unparsable());
    }
    at += first;
    while bytes.get(at) == Some(&b'.') && digits(at + 1) > 0 {
        at += 1 + digits(at + 1);
    }
    // The rest is matched by `(.*)*$`: anything but a line break, to the end.
    if bytes[at..].contains(&b'\n') {
        return Err(unparsable());
    }
    let numbers: Vec<&str> = text[start..at].split('.').collect();
    if numbers.len() < 2 {
        return Err(KubeVersionError::TooShort { text: text.into() });
    }
    if numbers[0].len() > 1 && numbers[0].starts_with('0') {
        return Err(KubeVersionError::ZeroPrefixed {
            component: numbers[0].into(),
            text: text.into(),
        });
    }
    let components = numbers
        .iter()
        .map(|n| {
            n.parse::<u64>().map_err(|_| KubeVersionError::OutOfRange {
                component: (*n).into(),
                text: text.into(),
            })
        })
        .collect::<Result<Vec<u64>, _>>()?;
    Ok(GenericVersion { components })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_their_normal_form() {
        for (text, normal) in [
            ("1.30", "v1.30"),
            ("v1.30", "v1.30"),
            ("1.2.3.4", "v1.2.3.4"),
            (" 1.30.0", "v1.30.0"),
            ("\t1.30 ", "v1.30"),
            ("v1.30.0-rc.1", "v1.30.0"),
            ("1.30.0+build", "v1.30.0"),
            ("1.30.0foo", "v1.30.0"),
            ("1..2.3", "n/a"),
            ("1.02.3", "v1.2.3"),
            ("0.0", "v0.0"),
            ("18446744073709551615.1", "v18446744073709551615.1"),
        ] {
            match parse_generic(text) {
                Ok(v) => assert_eq!(v.normalized(), normal, "{text:?}"),
                Err(e) => assert_eq!(normal, "n/a", "{text:?}: {e}"),
            }
        }
    }

    #[test]
    fn refusals_in_helms_words() {
        for (text, message) in [
            ("v1", r#"illegal version string "v1""#),
            ("1.", r#"illegal version string "1.""#),
            ("1..2", r#"illegal version string "1..2""#),
            ("abc", r#"could not parse "abc" as version"#),
            ("", r#"could not parse "" as version"#),
            ("V1.30", r#"could not parse "V1.30" as version"#),
            ("1.30\n", r#"could not parse "1.30\n" as version"#),
            (
                "01.2.3",
                r#"illegal zero-prefixed version component "01" in "01.2.3""#,
            ),
            (
                "1.99999999999999999999",
                r#"illegal non-numeric version component "99999999999999999999" in "1.99999999999999999999": strconv.ParseUint: parsing "99999999999999999999": value out of range"#,
            ),
        ] {
            assert_eq!(parse_generic(text).unwrap_err().to_string(), message, "{text:?}");
        }
    }
}
