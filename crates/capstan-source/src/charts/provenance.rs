//! Who made a chart dependency, when the settings ask (`--keyring`, `--verify-key`): the Helm
//! provenance of a chart from a Helm repository (`ARCHIVE.prov` beside the archive) or from an
//! OCI registry (the manifest's provenance layer), checked against the keyring
//! ([`crate::verify::provenance`]); and the cosign signature of an `oci://` chart, checked
//! against the keys ([`crate::oci::signature`]). A provenance file is kept in the cache with
//! the chart (a second render makes no request), and a pass is recorded there with the signer:
//! a later resolution of the same archive reuses it while the signer is still in the keyring
//! (a keyring changed since is honoured: without the signer, the `.prov` is checked again).
//! Every check's verdict is recorded for the caller ([`super::verdicts`]).

use capstan_chart::deps::{RepositoryRef, parse_repository};
use capstan_chart::{Chart, Dependency};

use crate::oci::manifest::ImageManifest;
use crate::oci::{self, OciRepo};
use crate::verify::provenance::{
    self, Archive, Keyring, MAX_PROVENANCE, PROVENANCE_LAYER, ProvenanceRefusal, ProvenanceVerified,
};

use super::verdicts::{Outcome, Signer, Verdict};
use super::{ChartResolver, FetchError, Resolved, chart_key, msg, policy, upstream_key_base};

/// A provenance file kept in the cache, with the archive digest it was fetched for.
#[derive(serde::Serialize, serde::Deserialize)]
struct KeptProvenance {
    sha256: String,
    from: String,
    provenance: String,
}

/// A provenance that passed, recorded in the cache with the archive digest it vouched for.
#[derive(serde::Serialize, serde::Deserialize)]
struct RecordedProvenance {
    sha256: String,
    verified: ProvenanceVerified,
}

/// An OpenPGP signer as status and messages name it: the fingerprint, then the user ID.
fn pgp_signer(verified: &ProvenanceVerified) -> String {
    if verified.identity.is_empty() {
        verified.signer.clone()
    } else {
        format!("{} ({})", verified.signer, verified.identity)
    }
}

/// Where the cache says a chart came from (the `origin` of its cache manifest).
#[derive(serde::Deserialize, Default)]
struct Origin {
    /// A Helm repository's archive URL.
    #[serde(default)]
    url: Option<String>,
    /// An OCI chart's `HOST/REPO:TAG` and manifest digest.
    #[serde(default)]
    reference: Option<String>,
    #[serde(default)]
    manifest: Option<String>,
}

fn refused(r: &Resolved, refusal: ProvenanceRefusal) -> FetchError {
    msg(format!(
        "{} {}: provenance not verified ({}): {refusal}",
        r.name,
        r.version,
        refusal.reason()
    ))
}

impl ChartResolver {
    /// Checks the resolved chart `r` of `dep` (a dependency of `chart`) against the policy of
    /// its repository (a rule of the settings' `overriding_policies`, else of
    /// `repository_policies`, else the keyring and cosign keys); nothing without one, nor for
    /// `file://` charts. Each check's verdict is recorded ([`ChartResolver::verdicts`]).
    pub(super) fn check_signatures(
        &self,
        chart: &Chart,
        dep: &Dependency,
        r: &Resolved,
    ) -> Result<(), FetchError> {
        let chosen = policy::choose_layered(
            &[
                &self.settings.overriding_policies,
                &self.settings.repository_policies,
            ],
            self.settings.keyring.as_ref(),
            &self.settings.cosign,
            &dep.repository,
        );
        if r.sha256.is_empty() || chosen.is_empty() {
            return Ok(());
        }
        let verdict = |outcome| Verdict {
            chart: chart.name().to_string(),
            dependency: dep.name.clone(),
            version: r.version.clone(),
            repository: dep.repository.clone(),
            outcome,
        };
        let key = chart_key(&upstream_key_base(&dep.repository), &r.name, &r.version);
        let origin = self.origin(&key)?;
        if let Some(keyring) = chosen.keyring {
            match self.provenance_verified(&key, r, &origin, keyring)? {
                Ok(verified) => {
                    tracing::debug!(chart = %r.name, version = %r.version, signer = %verified.signer, "provenance verified");
                    self.verdicts.record(verdict(Outcome::Signed(Signer {
                        method: "provenance".into(),
                        signer: pgp_signer(&verified),
                    })));
                }
                Err(refusal) => {
                    let refused = refused(r, refusal.clone());
                    self.verdicts.record(verdict(Outcome::Refused {
                        reason: refusal.reason(),
                        message: refused.to_string(),
                    }));
                    return Err(refused);
                }
            }
        }
        // Only charts Chart.yaml takes from an OCI registry carry cosign signatures: a chart
        // of a Helm repository (even fetched from an OCI mirror of it) is `--keyring`'s.
        let declared_oci = matches!(parse_repository(&dep.repository), Ok(RepositoryRef::Oci(_)));
        if let (true, false, Some(reference), Some(digest)) = (
            declared_oci,
            chosen.cosign.is_empty(),
            &origin.reference,
            &origin.manifest,
        ) {
            let (repo, tag) = split_reference(reference)?;
            let client = self.oci_client(&repo)?;
            let policy = chosen.cosign.clone();
            // `Ok(Err(_))`: the signature check's own failure, a verdict when it is a refusal.
            let checked = self.block_on(async {
                Ok(oci::signature::verify(&client, &self.cache, &repo, &tag, digest, &policy).await)
            })?;
            match checked {
                Ok(verified) => self.verdicts.record(verdict(Outcome::Signed(Signer {
                    method: "cosign".into(),
                    signer: verified.signer,
                }))),
                Err(e) => {
                    if let oci::signature::SignatureError::Refused { refusal, .. } = &e {
                        self.verdicts.record(verdict(Outcome::Refused {
                            reason: refusal.reason(),
                            message: format!("{} {}: {e}", r.name, r.version),
                        }));
                    }
                    return Err(msg(e.to_string()));
                }
            }
        }
        Ok(())
    }

    /// The provenance check of `r` under `keyring`: the cache's record of an earlier pass when
    /// it is of this archive and its signer is still in the keyring, neither revoked nor
    /// expired (no `.prov` read, no signature checked), else the `.prov` verified now and the pass recorded. `Err` only for
    /// what is no verdict (the cache, the network).
    fn provenance_verified(
        &self,
        key: &str,
        r: &Resolved,
        origin: &Origin,
        keyring: &Keyring,
    ) -> Result<Result<ProvenanceVerified, ProvenanceRefusal>, FetchError> {
        let record_key = format!("provenance-verified/{key}");
        if let Some(recorded) = self
            .cache
            .read_state(&record_key)?
            .and_then(|bytes| serde_json::from_slice::<RecordedProvenance>(&bytes).ok())
            .filter(|k| {
                k.sha256 == r.sha256 && keyring.vouches(&k.verified.signer, std::time::SystemTime::now())
            })
        {
            return Ok(Ok(recorded.verified));
        }
        let text = match self.provenance_text(key, r, origin)? {
            Ok(text) => text,
            Err(refusal) => return Ok(Err(refusal)),
        };
        let file_name = format!("{}-{}.tgz", r.name, r.version);
        let archive = Archive {
            file_name: &file_name,
            sha256: &r.sha256,
            name: &r.name,
            version: &r.version,
        };
        let verified = match provenance::verify(text.as_bytes(), archive, keyring) {
            Ok(verified) => verified,
            Err(refusal) => return Ok(Err(refusal)),
        };
        let record = RecordedProvenance {
            sha256: r.sha256.clone(),
            verified,
        };
        let bytes = serde_json::to_vec(&record).map_err(|e| msg(e.to_string()))?;
        self.cache.write_state(&record_key, &bytes)?;
        Ok(Ok(record.verified))
    }

    /// The Helm provenance of the resolved chart `r` (kept in the cache, else fetched from
    /// where the chart came from, and kept), or `None` when its repository has none:
    /// `releases mirror` copies it with the chart.
    pub fn provenance(&self, r: &Resolved) -> Result<Option<String>, ChartSourceError> {
        if r.sha256.is_empty() {
            return Ok(None);
        }
        let key = chart_key(&upstream_key_base(&r.repository), &r.name, &r.version);
        let origin = self.origin(&key).map_err(|e| ChartSourceError::new(r, e))?;
        match self.provenance_text(&key, r, &origin) {
            Ok(Ok(text)) => Ok(Some(text)),
            Ok(Err(ProvenanceRefusal::Missing(_))) => Ok(None),
            Ok(Err(refusal)) => Err(ChartSourceError::new(r, refused(r, refusal))),
            Err(e) => Err(ChartSourceError::new(r, e)),
        }
    }

    /// Where the resolved `oci://` chart `r` was fetched from (`HOST/REPO` and tag, after
    /// mirrors) with a client of that registry (the repository credentials); `None` for a
    /// chart of a Helm repository. `releases mirror` copies an `oci://` chart byte for byte
    /// from there, so its cosign signatures still apply to the copy.
    pub fn oci_origin(
        &self,
        r: &Resolved,
    ) -> Result<Option<(oci::Client, OciRepo, String)>, ChartSourceError> {
        if r.sha256.is_empty() || !matches!(parse_repository(&r.repository), Ok(RepositoryRef::Oci(_))) {
            return Ok(None);
        }
        let key = chart_key(&upstream_key_base(&r.repository), &r.name, &r.version);
        let origin = self.origin(&key).map_err(|e| ChartSourceError::new(r, e))?;
        let Some(reference) = origin.reference else {
            return Ok(None);
        };
        let (repo, tag) = split_reference(&reference).map_err(|e| ChartSourceError::new(r, e))?;
        let client = self.oci_client(&repo).map_err(|e| ChartSourceError::new(r, e))?;
        Ok(Some((client, repo, tag)))
    }

    fn origin(&self, key: &str) -> Result<Origin, FetchError> {
        Ok(self
            .cache
            .manifest(key)?
            .and_then(|m| serde_json::from_str(&m.origin).ok())
            .unwrap_or_default())
    }

    /// The provenance text of `r`: kept in the cache, else fetched (and kept); `Ok(Err(_))`
    /// when there is none to fetch.
    fn provenance_text(
        &self,
        key: &str,
        r: &Resolved,
        origin: &Origin,
    ) -> Result<Result<String, ProvenanceRefusal>, FetchError> {
        let state_key = format!("provenance/{key}");
        if let Some(kept) = self
            .cache
            .read_state(&state_key)?
            .and_then(|bytes| serde_json::from_slice::<KeptProvenance>(&bytes).ok())
            .filter(|k| k.sha256 == r.sha256)
        {
            return Ok(Ok(kept.provenance));
        }
        if self.settings.offline {
            return Err(msg(format!(
                "offline: the provenance of {} {} is not in the cache (run once online with --keyring)",
                r.name, r.version
            )));
        }
        let (from, fetched) = match (&origin.url, &origin.reference, &origin.manifest) {
            (Some(url), _, _) => {
                let from = format!("{url}.prov");
                (from.clone(), self.http_provenance(&from)?)
            }
            (None, Some(reference), Some(digest)) => {
                (reference.clone(), self.oci_provenance(reference, digest)?)
            }
            _ => {
                return Err(msg(format!(
                    "{} {}: the cache does not record where it came from; remove it from the cache and resolve it again",
                    r.name, r.version
                )));
            }
        };
        let bytes = match fetched {
            Ok(bytes) => bytes,
            Err(missing) => return Ok(Err(missing)),
        };
        let Ok(provenance) = String::from_utf8(bytes) else {
            return Ok(Err(ProvenanceRefusal::NotSigned(format!(
                "{from} is not UTF-8 text"
            ))));
        };
        let kept = KeptProvenance {
            sha256: r.sha256.clone(),
            from,
            provenance,
        };
        let bytes = serde_json::to_vec(&kept).map_err(|e| msg(e.to_string()))?;
        self.cache.write_state(&state_key, &bytes)?;
        Ok(Ok(kept.provenance))
    }

    /// `Ok(Err(Missing))` when the repository has no `.prov` for the archive.
    fn http_provenance(&self, url: &str) -> Result<Result<Vec<u8>, ProvenanceRefusal>, FetchError> {
        let response = self.get(url, &[], MAX_PROVENANCE)?;
        if response.status == reqwest::StatusCode::NOT_FOUND {
            return Ok(Err(ProvenanceRefusal::Missing(format!("GET {url}: HTTP 404"))));
        }
        if !response.status.is_success() {
            return Err(msg(format!("GET {url}: HTTP {}", response.status)));
        }
        Ok(Ok(response.body))
    }

    /// The provenance layer of the chart manifest `digest` of `reference` (`HOST/REPO:TAG`);
    /// `Ok(Err(Missing))` when the manifest has none.
    fn oci_provenance(
        &self,
        reference: &str,
        digest: &str,
    ) -> Result<Result<Vec<u8>, ProvenanceRefusal>, FetchError> {
        let (repo, _) = split_reference(reference)?;
        let client = self.oci_client(&repo)?;
        self.block_on(async {
            let manifest = client
                .manifest(&repo.repository, digest)
                .await
                .map_err(|e| msg(e.to_string()))?;
            let parsed: ImageManifest = serde_json::from_slice(&manifest.bytes)
                .map_err(|e| msg(format!("{reference}: not an image manifest: {e}")))?;
            let Some(layer) = parsed
                .layers
                .into_iter()
                .find(|l| l.media_type == PROVENANCE_LAYER)
            else {
                return Ok(Err(ProvenanceRefusal::Missing(format!(
                    "{reference}@{digest} has no {PROVENANCE_LAYER} layer"
                ))));
            };
            if layer.size > MAX_PROVENANCE {
                return Err(msg(format!(
                    "{reference}: the provenance layer is {} bytes, more than {MAX_PROVENANCE}",
                    layer.size
                )));
            }
            let mut bytes = Vec::with_capacity(layer.size as usize);
            client
                .blob(&repo.repository, &layer, "provenance", |chunk| {
                    bytes.extend_from_slice(chunk);
                    Ok(())
                })
                .await
                .map_err(|e| msg(e.to_string()))?;
            Ok(Ok(bytes))
        })
    }
}

/// A resolved chart whose provenance or origin could not be read (`releases mirror`).
#[derive(Debug, thiserror::Error)]
#[error("chart {name} {version} from {repository}: {message}")]
pub struct ChartSourceError {
    pub name: String,
    pub version: String,
    pub repository: String,
    message: String,
}

impl ChartSourceError {
    fn new(r: &Resolved, e: FetchError) -> ChartSourceError {
        ChartSourceError {
            name: r.name.clone(),
            version: r.version.clone(),
            repository: r.repository.clone(),
            message: e.to_string(),
        }
    }
}

/// `HOST/REPO:TAG` as the repository and the tag.
fn split_reference(reference: &str) -> Result<(OciRepo, String), FetchError> {
    let (repo, tag) = reference
        .rsplit_once(':')
        .filter(|(repo, tag)| !tag.contains('/') && !repo.is_empty())
        .ok_or_else(|| msg(format!("{reference}: not HOST/REPO:TAG")))?;
    let repo = OciRepo::parse(repo).map_err(|e| msg(e.to_string()))?;
    Ok((repo, tag.to_string()))
}
