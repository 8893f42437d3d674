//! Which signatures a chart dependency must carry, per repository (`--dependency-policy`): a
//! pure choice over the repository as Chart.yaml writes it (never the mirror it is fetched
//! from, so a policy follows the chart into an air gap). The rule whose URL is the longest
//! prefix of the repository (at a path-segment boundary) wins; without one, the settings'
//! default (`--keyring`, `--verify-key`). A rule that requires nothing exempts its repository.

use crate::verify::Policy;
use crate::verify::provenance::Keyring;

/// What the charts below one repository URL must carry.
#[derive(Clone, Debug, Default)]
pub struct RepositoryPolicy {
    /// `https://HOST/PATH` or `oci://HOST/PATH`; the charts of this repository and of those
    /// below it.
    pub repository: String,
    /// A Helm provenance signed by one of these keys (`None`: no provenance required).
    pub keyring: Option<Keyring>,
    /// A cosign signature (keyed or keyless) of `oci://` charts; empty: none required.
    pub cosign: Policy,
}

/// The policy a chart of one repository is checked against: borrowed from the settings.
#[derive(Clone, Copy, Debug)]
pub struct Chosen<'a> {
    /// The rule's URL, or `None` for the default.
    pub rule: Option<&'a str>,
    pub keyring: Option<&'a Keyring>,
    pub cosign: &'a Policy,
}

impl Chosen<'_> {
    /// Nothing to check.
    pub fn is_empty(&self) -> bool {
        self.keyring.is_none() && self.cosign.is_empty()
    }
}

/// The policy of `repository`: the longest matching rule of `rules`, else the default.
pub fn choose<'a>(
    rules: &'a [RepositoryPolicy],
    default_keyring: Option<&'a Keyring>,
    default_cosign: &'a Policy,
    repository: &str,
) -> Chosen<'a> {
    choose_layered(&[rules], default_keyring, default_cosign, repository)
}

/// [`choose`] over layers of rules: the longest matching rule of the first layer that has
/// one (the operator: a ClusterStack's rules, then the operator's), else the default.
pub fn choose_layered<'a>(
    layers: &[&'a [RepositoryPolicy]],
    default_keyring: Option<&'a Keyring>,
    default_cosign: &'a Policy,
    repository: &str,
) -> Chosen<'a> {
    let wanted = normalized(repository);
    layers
        .iter()
        .find_map(|rules| {
            rules
                .iter()
                .filter(|rule| covers(&normalized(&rule.repository), &wanted))
                .max_by_key(|rule| normalized(&rule.repository).len())
        })
        .map(|rule| Chosen {
            rule: Some(&rule.repository),
            keyring: rule.keyring.as_ref(),
            cosign: &rule.cosign,
        })
        .unwrap_or(Chosen {
            rule: None,
            keyring: default_keyring,
            cosign: default_cosign,
        })
}

/// `url` without trailing slashes, its scheme and host lower-cased (they are case-insensitive;
/// the path is not).
fn normalized(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            format!(
                "{}://{}{path}",
                scheme.to_ascii_lowercase(),
                host.to_ascii_lowercase()
            )
        }
        None => url.to_string(),
    }
}

/// Whether the rule `base` covers `repository` (both normalized): the same, or below it.
fn covers(base: &str, repository: &str) -> bool {
    !base.is_empty()
        && (repository == base
            || repository
                .strip_prefix(base)
                .is_some_and(|rest| rest.starts_with('/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(repository: &str, keyring: bool) -> RepositoryPolicy {
        RepositoryPolicy {
            repository: repository.into(),
            keyring: keyring.then(Keyring::default),
            cosign: Policy::default(),
        }
    }

    #[test]
    fn the_longest_rule_covering_the_repository_wins_else_the_default() {
        let rules = [
            rule("https://charts.example/", true),
            rule("https://charts.example/internal", false),
            rule("oci://registry.example/charts", true),
            rule("https://other.example/a", true),
        ];
        // (repository as Chart.yaml writes it, the rule chosen or None for the default)
        let table: &[(&str, Option<&str>)] = &[
            ("https://charts.example", Some("https://charts.example/")),
            ("https://charts.example/stable/", Some("https://charts.example/")),
            ("https://CHARTS.example/stable", Some("https://charts.example/")),
            (
                "HTTPS://charts.example/internal",
                Some("https://charts.example/internal"),
            ),
            (
                "https://charts.example/internal/team",
                Some("https://charts.example/internal"),
            ),
            // A prefix that is not a path segment is another repository.
            (
                "https://charts.example/internals",
                Some("https://charts.example/"),
            ),
            ("https://other.example/ab", None),
            ("https://other.example/A", None),
            ("https://other.example/a/b", Some("https://other.example/a")),
            (
                "oci://registry.example/charts",
                Some("oci://registry.example/charts"),
            ),
            (
                "oci://registry.example/charts/cilium",
                Some("oci://registry.example/charts"),
            ),
            // Another scheme is another repository.
            ("https://registry.example/charts", None),
            ("https://charts.example.evil/x", None),
            ("", None),
            ("@stable", None),
        ];
        let default_cosign = Policy::default();
        let default_keyring = Keyring::default();
        for (repository, want) in table {
            let chosen = choose(&rules, Some(&default_keyring), &default_cosign, repository);
            assert_eq!(chosen.rule, *want, "{repository}");
            if chosen.rule.is_none() {
                assert!(chosen.keyring.is_some(), "{repository}: the default keyring");
            }
        }
        // A rule that requires nothing exempts its repository from the default.
        let exempt = choose(
            &rules,
            Some(&default_keyring),
            &default_cosign,
            "https://charts.example/internal",
        );
        assert!(exempt.is_empty());
        assert!(!choose(&rules, None, &default_cosign, "https://charts.example/x").is_empty());
        assert!(choose(&[], None, &default_cosign, "https://charts.example/x").is_empty());
    }

    #[test]
    fn a_rule_of_the_first_layer_that_covers_the_repository_beats_every_later_one() {
        let first = [
            rule("https://charts.example/team", true),
            rule("https://exempt.example", false),
        ];
        let second = [
            rule("https://charts.example/team/deep", false),
            rule("https://charts.example", false),
            rule("https://other.example", true),
        ];
        // (repository, the rule chosen or None for the default)
        let table: &[(&str, Option<&str>)] = &[
            // The first layer's shorter rule beats the second's longer one.
            (
                "https://charts.example/team/deep/x",
                Some("https://charts.example/team"),
            ),
            ("https://charts.example/team", Some("https://charts.example/team")),
            // Not covered by the first layer: the second decides.
            ("https://charts.example/teams", Some("https://charts.example")),
            ("https://other.example/a", Some("https://other.example")),
            ("https://exempt.example/a", Some("https://exempt.example")),
            // Covered by neither: the default.
            ("https://else.example", None),
        ];
        let default_cosign = Policy::default();
        for (repository, want) in table {
            let chosen = choose_layered(&[&first, &second], None, &default_cosign, repository);
            assert_eq!(chosen.rule, *want, "{repository}");
        }
        // An empty first layer is the second alone.
        let alone = choose_layered(&[&[], &second], None, &default_cosign, "https://other.example");
        assert_eq!(alone.rule, Some("https://other.example"));
    }
}
