//! A ClusterStack's `spec.dependencyPolicy`: what the chart dependencies of its releases must
//! carry, per repository, read from Secrets in the stack's namespace into the rules of
//! `capstan_source::charts::policy` (the ones `capstan render --dependency-policy` reads from a
//! file). [`rules_of`] is the pure mapping; [`of`] reads the Secrets around it. The rules win
//! over the operator's `--dependency-policy`, `--keyring` and `--verify-key` wherever one
//! covers a dependency's repository.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::Api;
use sha2::{Digest, Sha256};

use crate::api::{ClusterStack, DependencyRule, OidcIdentityMatch};
use crate::context::Context;
use crate::controller::error::{DependencyPolicyError, Problem, SourceConfigError};
use capstan_source::charts::RepositoryPolicy;
use capstan_source::verify::provenance::Keyring;
use capstan_source::verify::{Identity, KeyError, Policy, PublicKey, TrustedRoot, TrustedRootError};

/// The entry of a trusted-root Secret holding Sigstore's `trusted_root.json`.
pub const TRUSTED_ROOT_ENTRY: &str = "trusted_root.json";

/// A stack's rules, with a fingerprint of everything they were read from (the spec and the
/// Secrets' data): a release compiled under other rules is compiled again.
#[derive(Clone, Debug, Default)]
pub struct DependencyPolicy {
    pub rules: Vec<RepositoryPolicy>,
    /// Empty without rules.
    pub fingerprint: String,
}

/// The data of the Secrets a policy names, by name.
pub type SecretData = BTreeMap<String, BTreeMap<String, ByteString>>;

/// The Secret names `rules` refer to, each once.
fn secret_names(rules: &[DependencyRule]) -> Vec<String> {
    let mut names: Vec<String> = rules
        .iter()
        .flat_map(|r| [&r.keyring_secret_ref, &r.secret_ref, &r.trusted_root_secret_ref])
        .flatten()
        .map(|r| r.name.trim().to_string())
        .filter(|name| !name.is_empty())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The rules of `spec.dependencyPolicy` of a stack in `namespace`, with the Secrets they name
/// in `secrets`.
pub fn rules_of(
    namespace: &str,
    rules: &[DependencyRule],
    secrets: &SecretData,
) -> Result<Vec<RepositoryPolicy>, DependencyPolicyError> {
    rules
        .iter()
        .enumerate()
        .map(|(index, rule)| {
            rule_of(namespace, rule, secrets).map_err(|problem| DependencyPolicyError { index, problem })
        })
        .collect()
}

fn rule_of(
    namespace: &str,
    rule: &DependencyRule,
    secrets: &SecretData,
) -> Result<RepositoryPolicy, Problem> {
    let data = |name: &str| {
        secrets.get(name).ok_or_else(|| Problem::Unread {
            namespace: namespace.to_string(),
            name: name.to_string(),
        })
    };
    let named = |r: &Option<crate::api::SecretReference>| {
        r.as_ref()
            .map(|r| r.name.trim().to_string())
            .filter(|name| !name.is_empty())
    };
    let keyring = match named(&rule.keyring_secret_ref) {
        Some(name) => Some(keyring_of(namespace, &name, data(&name)?)?),
        None => None,
    };
    let mut cosign = match named(&rule.secret_ref) {
        Some(name) => Policy::keyed(keys_of(namespace, &name, data(&name)?)?),
        None => Policy::default(),
    };
    if !rule.match_oidc_identity.is_empty() {
        cosign.identities = identities_of_matches(&rule.match_oidc_identity)
            .map_err(|(index, message)| Problem::Identity { index, message })?;
        cosign.trusted_root = Some(match named(&rule.trusted_root_secret_ref) {
            Some(name) => trusted_root_entry(namespace, &name, data(&name)?).ok_or_else(|| {
                Problem::NoTrustedRoot {
                    namespace: namespace.to_string(),
                    name: name.clone(),
                }
            })??,
            None => TrustedRoot::public_good()?,
        });
    }
    Ok(RepositoryPolicy {
        repository: rule.repository.trim().to_string(),
        keyring,
        cosign,
    })
}

/// The keyless identities of `matches` (regexes of the whole issuer and subject); the index
/// and the error of the first that is not a regex. Also those of a stack's `spec.verify`.
pub fn identities_of_matches(matches: &[OidcIdentityMatch]) -> Result<Vec<Identity>, (usize, String)> {
    matches
        .iter()
        .enumerate()
        .map(|(index, m)| Identity::new(&m.issuer, &m.subject).map_err(|e| (index, e.to_string())))
        .collect()
}

/// The trusted root in the `trusted_root.json` entry of Secret `namespace/name`; `None`
/// without one. Also that of a stack's `spec.verify`.
pub fn trusted_root_entry(
    namespace: &str,
    name: &str,
    data: &BTreeMap<String, ByteString>,
) -> Option<Result<TrustedRoot, TrustedRootError>> {
    let bytes = data.get(TRUSTED_ROOT_ENTRY)?;
    let origin = format!("Secret {namespace}/{name} entry {TRUSTED_ROOT_ENTRY}");
    Some(TrustedRoot::from_json(&bytes.0, &origin))
}

/// The keyring of Secret `namespace/name`: its `*.gpg` and `*.asc` entries together.
fn keyring_of(namespace: &str, name: &str, data: &BTreeMap<String, ByteString>) -> Result<Keyring, Problem> {
    let mut keyrings = Vec::new();
    for (entry, value) in data
        .iter()
        .filter(|(entry, _)| entry.ends_with(".gpg") || entry.ends_with(".asc"))
    {
        let origin = format!("Secret {namespace}/{name} entry {entry}");
        keyrings.push(Keyring::parse(&value.0, &origin)?);
    }
    if keyrings.is_empty() {
        return Err(Problem::NoKeyring {
            namespace: namespace.to_string(),
            name: name.to_string(),
        });
    }
    Ok(Keyring::merge(keyrings))
}

/// The cosign keys of Secret `namespace/name`: its `*.pub` entries, in name order.
fn keys_of(
    namespace: &str,
    name: &str,
    data: &BTreeMap<String, ByteString>,
) -> Result<Vec<PublicKey>, Problem> {
    let keys = pub_entries(namespace, name, data)?;
    if keys.is_empty() {
        return Err(Problem::NoKeys {
            namespace: namespace.to_string(),
            name: name.to_string(),
        });
    }
    Ok(keys)
}

/// The `*.pub` entries of Secret `namespace/name` read as public keys (PEM, as `cosign
/// generate-key-pair` writes `cosign.pub`), in name order; none is no error here. Also the
/// keys of a stack's `spec.verify`.
pub fn pub_entries(
    namespace: &str,
    name: &str,
    data: &BTreeMap<String, ByteString>,
) -> Result<Vec<PublicKey>, KeyError> {
    data.iter()
        .filter(|(entry, _)| entry.ends_with(".pub"))
        .map(|(entry, value)| {
            PublicKey::from_pem(&value.0, &format!("Secret {namespace}/{name} entry {entry}"))
        })
        .collect()
}

/// A fingerprint of `rules` read with `secrets`: equal exactly when both are.
fn fingerprint(rules: &[DependencyRule], secrets: &SecretData) -> String {
    let mut hasher = Sha256::new();
    hasher.update(serde_json::to_vec(rules).unwrap_or_default());
    for (name, data) in secrets {
        hasher.update([0]);
        hasher.update(name.as_bytes());
        for (entry, value) in data {
            hasher.update([0]);
            hasher.update(entry.as_bytes());
            hasher.update([0]);
            hasher.update((value.0.len() as u64).to_be_bytes());
            hasher.update(&value.0);
        }
    }
    capstan_source::cache::hex(&hasher.finalize())
}

/// The dependency policy of `stack`: nothing read without `spec.dependencyPolicy`.
pub async fn of(stack: &ClusterStack, ctx: &Context) -> Result<DependencyPolicy, SourceConfigError> {
    let rules = &stack.spec.dependency_policy;
    if rules.is_empty() {
        return Ok(DependencyPolicy::default());
    }
    let namespace = stack.namespace().unwrap_or_default();
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &namespace);
    let mut secrets = SecretData::new();
    for name in secret_names(rules) {
        let secret = super::super::read_secret(&api, &namespace, &name).await?;
        secrets.insert(name, secret.data.unwrap_or_default());
    }
    Ok(DependencyPolicy {
        rules: rules_of(&namespace, rules, &secrets)?,
        fingerprint: fingerprint(rules, &secrets),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{OidcIdentityMatch, SecretReference};
    use capstan_source::verify::SigningKey;

    fn testdata(path: &str) -> Vec<u8> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata");
        std::fs::read(root.join(path)).expect("test data")
    }

    fn secret(entries: &[(&str, Vec<u8>)]) -> BTreeMap<String, ByteString> {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), ByteString(v.clone())))
            .collect()
    }

    fn reference(name: &str) -> Option<SecretReference> {
        Some(SecretReference { name: name.into() })
    }

    /// (repository, keyring fingerprints, cosign key fingerprints, identities, own root)
    type Read = (String, Vec<String>, Vec<String>, usize, bool);

    fn read(rules: &[RepositoryPolicy]) -> Vec<Read> {
        rules
            .iter()
            .map(|r| {
                (
                    r.repository.clone(),
                    r.keyring.as_ref().map(Keyring::fingerprints).unwrap_or_default(),
                    r.cosign
                        .keys
                        .iter()
                        .map(|k| k.fingerprint().to_string())
                        .collect(),
                    r.cosign.identities.len(),
                    r.cosign.trusted_root.is_some(),
                )
            })
            .collect()
    }

    #[test]
    fn each_rule_becomes_the_cli_s_rule_with_the_secrets_keys() {
        let signer = testdata("provenance/signer.pubring.gpg");
        let stranger = testdata("provenance/stranger.pubring.gpg");
        let armored = testdata("provenance/signer.pub.asc");
        let root = testdata("verify/keyless/trusted_root.json");
        let key = SigningKey::generate().unwrap();
        let pem = key.public_key().to_pem().into_bytes();
        let ring = |bytes: &[u8]| Keyring::parse(bytes, "test").unwrap().fingerprints();
        let secrets: SecretData = [
            (
                "signer".to_string(),
                secret(&[("pubring.gpg", signer.clone()), ("README", b"x".to_vec())]),
            ),
            (
                "both".to_string(),
                secret(&[("a.gpg", signer.clone()), ("b.asc", stranger.clone())]),
            ),
            ("armored".to_string(), secret(&[("signer.asc", armored)])),
            (
                "keys".to_string(),
                secret(&[("cosign.pub", pem), ("cosign.key", b"not read".to_vec())]),
            ),
            ("root".to_string(), secret(&[(TRUSTED_ROOT_ENTRY, root)])),
            ("empty".to_string(), BTreeMap::new()),
            ("junk".to_string(), secret(&[("pubring.gpg", b"junk".to_vec())])),
            (
                "junk-key".to_string(),
                secret(&[("cosign.pub", b"junk".to_vec())]),
            ),
        ]
        .into_iter()
        .collect();
        let rule = |repository: &str| DependencyRule {
            repository: repository.into(),
            ..DependencyRule::default()
        };
        let identity = || {
            vec![OidcIdentityMatch {
                issuer: "https://issuer".into(),
                subject: ".*".into(),
            }]
        };
        let both_rings: Vec<String> = ring(&signer).into_iter().chain(ring(&stranger)).collect();
        // (rule, Ok(what it reads as) or Err(the message))
        let table: Vec<(DependencyRule, Result<Read, &str>)> = vec![
            (
                DependencyRule {
                    keyring_secret_ref: reference("signer"),
                    ..rule(" https://charts.example/signed ")
                },
                Ok((
                    "https://charts.example/signed".into(),
                    ring(&signer),
                    vec![],
                    0,
                    false,
                )),
            ),
            (
                DependencyRule {
                    keyring_secret_ref: reference("both"),
                    ..rule("https://charts.example")
                },
                Ok(("https://charts.example".into(), both_rings, vec![], 0, false)),
            ),
            (
                DependencyRule {
                    keyring_secret_ref: reference("armored"),
                    ..rule("https://a.example")
                },
                Ok(("https://a.example".into(), ring(&signer), vec![], 0, false)),
            ),
            (
                DependencyRule {
                    secret_ref: reference("keys"),
                    match_oidc_identity: identity(),
                    trusted_root_secret_ref: reference("root"),
                    ..rule("oci://r.example/charts")
                },
                Ok((
                    "oci://r.example/charts".into(),
                    vec![],
                    vec![key.public_key().fingerprint().to_string()],
                    1,
                    true,
                )),
            ),
            (
                // Keyless without a root of its own: the shipped public-good root.
                DependencyRule {
                    match_oidc_identity: identity(),
                    ..rule("oci://r.example/keyless")
                },
                Ok(("oci://r.example/keyless".into(), vec![], vec![], 1, true)),
            ),
            // Nothing required: an exemption.
            (
                rule("https://charts.internal"),
                Ok(("https://charts.internal".into(), vec![], vec![], 0, false)),
            ),
            (
                DependencyRule {
                    keyring_secret_ref: reference("empty"),
                    ..rule("https://x")
                },
                Err("spec.dependencyPolicy[0]: Secret ns/empty has no *.gpg or *.asc entry"),
            ),
            (
                DependencyRule {
                    keyring_secret_ref: reference("junk"),
                    ..rule("https://x")
                },
                Err("spec.dependencyPolicy[0]: Secret ns/junk entry pubring.gpg: not an OpenPGP keyring"),
            ),
            (
                DependencyRule {
                    secret_ref: reference("signer"),
                    ..rule("oci://x")
                },
                Err("spec.dependencyPolicy[0]: Secret ns/signer has no *.pub entry"),
            ),
            (
                DependencyRule {
                    secret_ref: reference("junk-key"),
                    ..rule("oci://x")
                },
                Err("spec.dependencyPolicy[0]: Secret ns/junk-key entry cosign.pub: not a PEM file"),
            ),
            (
                DependencyRule {
                    match_oidc_identity: vec![OidcIdentityMatch {
                        issuer: "(".into(),
                        subject: "x".into(),
                    }],
                    ..rule("oci://x")
                },
                Err("spec.dependencyPolicy[0]: matchOIDCIdentity[0]: "),
            ),
            (
                DependencyRule {
                    match_oidc_identity: identity(),
                    trusted_root_secret_ref: reference("keys"),
                    ..rule("oci://x")
                },
                Err("spec.dependencyPolicy[0]: Secret ns/keys has no data.trusted_root.json"),
            ),
            (
                DependencyRule {
                    keyring_secret_ref: reference("missing"),
                    ..rule("https://x")
                },
                Err("spec.dependencyPolicy[0]: Secret ns/missing was not read"),
            ),
        ];
        for (i, (rule, want)) in table.into_iter().enumerate() {
            match (rules_of("ns", std::slice::from_ref(&rule), &secrets), want) {
                (Ok(rules), Ok(want)) => assert_eq!(read(&rules), [want], "row {i}"),
                (Err(e), Err(want)) => {
                    let message = e.to_string();
                    assert!(message.starts_with(want), "row {i}: {message}");
                }
                (got, want) => panic!("row {i}: got {:?}, want {want:?}", got.map(|r| read(&r))),
            }
        }
    }

    #[test]
    fn the_fingerprint_follows_the_rules_and_the_secrets_data() {
        let rules = vec![DependencyRule {
            repository: "https://charts.example".into(),
            keyring_secret_ref: reference("ring"),
            ..DependencyRule::default()
        }];
        let data = |bytes: &[u8]| -> SecretData {
            [("ring".to_string(), secret(&[("pubring.gpg", bytes.to_vec())]))]
                .into_iter()
                .collect()
        };
        let base = fingerprint(&rules, &data(b"a"));
        assert_eq!(base, fingerprint(&rules, &data(b"a")));
        assert_ne!(base, fingerprint(&rules, &data(b"b")), "another keyring");
        let mut other = rules.clone();
        other[0].repository = "https://charts.example/x".into();
        assert_ne!(base, fingerprint(&other, &data(b"a")), "another repository");
        assert_eq!(
            secret_names(&[
                rules[0].clone(),
                DependencyRule {
                    secret_ref: reference("keys"),
                    trusted_root_secret_ref: reference("ring"),
                    ..DependencyRule::default()
                },
            ]),
            ["keys", "ring"]
        );
    }
}
