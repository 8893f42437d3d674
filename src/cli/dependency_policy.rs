//! `--dependency-policy FILE`: what the chart dependencies of each repository must carry, as
//! YAML (paths relative to the file):
//!
//! ```yaml
//! repositories:
//!   - url: https://charts.example/stable      # and the repositories below it
//!     keyring: stable.gpg                     # Helm provenance (.prov) signed by one of these keys
//!   - url: oci://registry.example/charts
//!     keys: [cosign.pub]                      # cosign signatures, keyed ...
//!     identities:                             # ... or keyless (regexes of the whole text)
//!       - {issuer: https://token\.actions\.githubusercontent\.com, subject: https://github\.com/org/.*}
//!     trustedRoot: trusted_root.json          # default: Sigstore's public-good instance
//!   - url: https://charts.internal            # nothing required: exempt from --keyring/--verify-key
//! ```

use std::path::{Path, PathBuf};

use anyhow::Context;

use capstan_source::charts::RepositoryPolicy;
use capstan_source::verify::Identity;
use capstan_source::verify::provenance::Keyring;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    repositories: Vec<Entry>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Entry {
    url: String,
    #[serde(default)]
    keyring: Option<PathBuf>,
    #[serde(default)]
    keys: Vec<PathBuf>,
    #[serde(default)]
    identities: Vec<IdentityEntry>,
    #[serde(default)]
    trusted_root: Option<PathBuf>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct IdentityEntry {
    issuer: String,
    subject: String,
}

/// The rules of the policy file `path`.
pub fn read(path: &Path) -> anyhow::Result<Vec<RepositoryPolicy>> {
    let what = format!("--dependency-policy {}", path.display());
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {what}"))?;
    let file = parse(&text).with_context(|| what.clone())?;
    let base = path.parent().unwrap_or(Path::new("."));
    file.repositories
        .into_iter()
        .enumerate()
        .map(|(i, entry)| rule(entry, base).with_context(|| format!("{what}: repositories[{i}]")))
        .collect()
}

fn parse(text: &str) -> anyhow::Result<File> {
    let value = capstan_encoding::yaml_load::load_document(text)?;
    let json = capstan_encoding::json::marshal(&value)?;
    if json == "null" {
        return Ok(File {
            repositories: Vec::new(),
        });
    }
    Ok(serde_json::from_str(&json)?)
}

fn rule(entry: Entry, base: &Path) -> anyhow::Result<RepositoryPolicy> {
    let url = entry.url.trim();
    if !(url.starts_with("https://") || url.starts_with("http://") || url.starts_with("oci://")) {
        anyhow::bail!("url: {url:?} is not an https://, http:// or oci:// repository URL");
    }
    let keyring = match &entry.keyring {
        Some(file) => {
            let path = base.join(file);
            let bytes =
                std::fs::read(&path).with_context(|| format!("keyring: reading {}", path.display()))?;
            Some(Keyring::parse(&bytes, &path.display().to_string()).context("keyring")?)
        }
        None => None,
    };
    let identities = entry
        .identities
        .iter()
        .enumerate()
        .map(|(i, id)| {
            Identity::new(&id.issuer, &id.subject).with_context(|| format!("identities[{i}]: not a regex"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let keys: Vec<PathBuf> = entry.keys.iter().map(|k| base.join(k)).collect();
    let trusted_root = entry.trusted_root.as_ref().map(|r| base.join(r));
    let cosign = super::source_args::read_policy(&keys, &identities, trusted_root.as_deref())?;
    Ok(RepositoryPolicy {
        repository: url.to_string(),
        keyring,
        cosign,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_file_is_read_or_refused_naming_the_entry_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let keys = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
        std::fs::copy(
            keys.join("provenance/signer.pub.asc"),
            dir.path().join("signer.asc"),
        )
        .unwrap();
        std::fs::copy(
            keys.join("verify/cosign-made-empty-password.pub"),
            dir.path().join("cosign.pub"),
        )
        .unwrap();
        // (file, Ok(rules as (url, keyring?, keys, identities)) or Err(part of the message))
        type Rules = Vec<(&'static str, bool, usize, usize)>;
        let table: Vec<(&str, Result<Rules, &str>)> = vec![
            ("", Ok(vec![])),
            ("repositories: []", Ok(vec![])),
            (
                "repositories:\n- url: https://charts.example/a/\n  keyring: signer.asc\n- url: oci://r.example/c\n  keys: [cosign.pub]\n  identities:\n  - {issuer: 'https://issuer', subject: '.*@example\\.com'}\n- url: http://internal\n",
                Ok(vec![
                    ("https://charts.example/a/", true, 0, 0),
                    ("oci://r.example/c", false, 1, 1),
                    ("http://internal", false, 0, 0),
                ]),
            ),
            (
                "repositories:\n- url: ftp://x\n",
                Err("repositories[0]: url: \"ftp://x\" is not"),
            ),
            (
                "repositories:\n- url: https://x\n  keyring: missing.gpg\n",
                Err("repositories[0]: keyring: reading "),
            ),
            (
                "repositories:\n- url: https://x\n- url: https://y\n  identities: [{issuer: '(', subject: x}]\n",
                Err("repositories[1]: identities[0]: not a regex"),
            ),
            (
                "repositories:\n- url: https://x\n  keyrings: a\n",
                Err("unknown field `keyrings`"),
            ),
            ("repositories:\n- keyring: a\n", Err("missing field `url`")),
            ("repositories: [\n", Err("--dependency-policy")),
        ];
        for (i, (text, want)) in table.into_iter().enumerate() {
            let path = dir.path().join(format!("policy-{i}.yaml"));
            std::fs::write(&path, text).unwrap();
            match (read(&path), want) {
                (Ok(rules), Ok(want)) => {
                    let got: Vec<_> = rules
                        .iter()
                        .map(|r| {
                            (
                                r.repository.as_str(),
                                r.keyring.is_some(),
                                r.cosign.keys.len(),
                                r.cosign.identities.len(),
                            )
                        })
                        .collect();
                    assert_eq!(got, want, "row {i}");
                }
                (Err(e), Err(part)) => {
                    let message = format!("{e:#}");
                    assert!(
                        message.contains(part) && message.contains(&path.display().to_string()),
                        "row {i}: {message}"
                    );
                }
                (got, want) => panic!("row {i}: got {:?}, want {want:?}", got.map(|r| r.len())),
            }
        }
    }
}
