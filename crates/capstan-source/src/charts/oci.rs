//! Chart dependencies from `oci://` repositories, as `helm dependency update` resolves them:
//! the chart `NAME` of `oci://HOST/PATH` is the registry repository `PATH/NAME`, its versions
//! are its tags (`_` standing for semver's `+`), the chosen tag's manifest must be a Helm chart
//! (Helm's config media type) and its chart layer is the archive. The registry client is
//! `source::oci`'s (auth challenges, digests and sizes checked while streaming, timeouts).
//!
//! Like an index, a repository's tag list is kept in the cache and used as is by renders (a
//! second render makes no request); `capstan dependency update` lists the tags again.

use std::collections::BTreeMap;

use crate::cache::{CacheError, Expected, ReleaseManifest};
use crate::oci::manifest::{Descriptor, ImageManifest};
use crate::oci::{self, OciRepo};
use capstan_chart::Dependency;
use capstan_chart::deps::{choose_version, exact_version};

use super::{
    Auth, ChartResolver, DamagedCopy, FetchError, MAX_CHART_SIZE, Resolved, chart_key, msg,
    upstream_key_base, url_segments,
};

/// Helm's media type of a chart's config blob (what marks a manifest as a chart).
pub const HELM_CONFIG: &str = "application/vnd.cncf.helm.config.v1+json";
/// Helm's media type of the chart archive layer.
pub const HELM_CHART_LAYER: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
/// The chart layer's media type before Helm 3.8, still accepted by Helm.
pub const HELM_CHART_LAYER_LEGACY: &str = "application/tar+gzip";

/// The tag list kept in the cache for one chart repository.
#[derive(serde::Serialize, serde::Deserialize)]
struct TagsState {
    repository: String,
    tags: Vec<String>,
}

impl ChartResolver {
    /// `dep` from the OCI repository `url` (`oci://HOST/PATH`, after mirrors): `Ok(Err(versions))`
    /// when no tag matches the constraint. A cached copy found damaged (and removed) on the way
    /// is recorded in `damaged`.
    pub(super) fn resolve_oci(
        &self,
        dep: &Dependency,
        url: &str,
        wanted: &str,
        damaged: &mut Option<DamagedCopy>,
    ) -> Result<Result<Resolved, Vec<String>>, FetchError> {
        let base = url.trim_start_matches("oci://").trim_end_matches('/');
        let repo = OciRepo::parse(&format!("{base}/{}", dep.name)).map_err(|e| msg(e.to_string()))?;
        // The chart's own repository, not the mirror's (see `upstream_key_base`).
        let key_base = upstream_key_base(&dep.repository);
        if let Some(exact) = exact_version(wanted)
            && let Some(r) = self.cached_at(
                &chart_key(&key_base, &dep.name, &exact),
                dep,
                &exact,
                None,
                damaged,
            )?
        {
            return Ok(Ok(r));
        }
        let versions: Vec<String> = self
            .oci_tags(&repo)?
            .iter()
            .map(|tag| tag.replace('_', "+"))
            .collect();
        let Some(version) = choose_version(&dep.name, wanted, versions.iter().map(String::as_str))
            .map_err(|e| msg(e.to_string()))?
        else {
            return Ok(Err(versions));
        };
        let key = chart_key(&key_base, &dep.name, &version);
        if let Some(r) = self.cached_at(&key, dep, &version, None, damaged)? {
            return Ok(Ok(r));
        }
        if self.settings.offline {
            return Err(msg(format!(
                "offline: {} {version} is not in the cache (run once online, or `capstan dependency update`)",
                dep.name
            )));
        }
        let _lock = self.cache.lock_release(&key)?;
        // Another process may have fetched it while this one waited for the lock.
        if let Some(r) = self.cached_at(&key, dep, &version, None, damaged)? {
            return Ok(Ok(r));
        }
        let tag = version.replace('+', "_");
        let file_name = format!("{}-{version}.tgz", dep.name);
        let client = self.oci_client(&repo)?;
        let (manifest_digest, stored) = self.block_on(async {
            let manifest = client.manifest(&repo.repository, &tag).await.map_err(oci_error)?;
            let layer = chart_layer(&manifest.bytes, &format!("{repo}:{tag}"))?;
            let expected = Expected {
                size: Some(layer.size),
                sha256: layer.sha256().map(str::to_string),
            };
            let mut writer = self.cache.blob_writer(&file_name, &expected)?;
            let mut write_error: Option<CacheError> = None;
            let read = client
                .blob(&repo.repository, &layer, &file_name, |chunk| {
                    writer.write(chunk).map_err(|e| {
                        let message = e.to_string();
                        write_error = Some(e);
                        std::io::Error::other(message)
                    })
                })
                .await;
            if let Some(e) = write_error {
                return Err(e.into());
            }
            read.map_err(oci_error)?;
            Ok((manifest.digest, writer.finish()?))
        })?;
        let manifest = ReleaseManifest {
            key: key.clone(),
            origin: serde_json::json!({
                "repository": dep.repository,
                "fetched_from": url,
                "name": dep.name,
                "version": version,
                "reference": format!("{repo}:{tag}"),
                "manifest": manifest_digest,
                "digest": format!("sha256:{}", stored.sha256),
            })
            .to_string(),
            files: BTreeMap::from([(file_name, stored.clone())]),
        };
        self.cache.commit_release(&manifest)?;
        Ok(Ok(Resolved {
            name: dep.name.clone(),
            repository: dep.repository.clone(),
            version,
            path: self.cache.blob_path(&stored.sha256)?,
            sha256: stored.sha256,
        }))
    }

    /// The repository's tags: the cached list unless refreshing; else listed (every page).
    fn oci_tags(&self, repo: &OciRepo) -> Result<Vec<String>, FetchError> {
        let url = repo.to_string();
        let key = format!("chart-oci-tags/{}", url_segments(&url));
        let state: Option<TagsState> = self
            .cache
            .read_state(&key)?
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        let fresh = self.refreshed.lock().map(|r| r.contains(&url)).unwrap_or(false);
        if let Some(state) = state
            && (!self.settings.refresh || self.settings.offline || fresh)
        {
            return Ok(state.tags);
        }
        if self.settings.offline {
            return Err(msg(format!("offline: the tags of {url} are not in the cache")));
        }
        let client = self.oci_client(repo)?;
        let tags = self.block_on(async { client.tags(&repo.repository).await.map_err(oci_error) })?;
        if let Ok(mut r) = self.refreshed.lock() {
            r.insert(url.clone());
        }
        let bytes = serde_json::to_vec(&TagsState {
            repository: url,
            tags: tags.clone(),
        })
        .map_err(|e| msg(e.to_string()))?;
        self.cache.write_state(&key, &bytes)?;
        Ok(tags)
    }

    /// A registry client of `repo`'s host with the credentials given for it (`oci://HOST/…`
    /// credentials; sent only to that registry and its token endpoint) and the timeouts.
    pub(super) fn oci_client(&self, repo: &OciRepo) -> Result<oci::Client, FetchError> {
        let target = reqwest::Url::parse(&format!("oci://{}/{}", repo.host, repo.repository))
            .map_err(|e| msg(format!("{repo}: {e}")))?;
        let credentials = match self.settings.credentials.iter().find(|c| c.applies_to(&target)) {
            Some(c) => match &c.auth {
                Auth::Basic { username, password } => oci::Credentials::Basic {
                    username: username.clone(),
                    password: password.clone(),
                },
                Auth::Bearer(token) => oci::Credentials::Token(token.clone()),
            },
            None => oci::Credentials::Anonymous,
        };
        oci::Client::new(
            &repo.host,
            oci::Config {
                credentials,
                timeouts: self.settings.timeouts,
                max_blob_size: MAX_CHART_SIZE,
                ..oci::Config::default()
            },
        )
        .map_err(oci_error)
    }

    /// Runs registry requests on their own thread and runtime, so callers may be synchronous
    /// or inside an async runtime (as `get` does for HTTP repositories).
    pub(super) fn block_on<T: Send>(
        &self,
        work: impl std::future::Future<Output = Result<T, FetchError>> + Send,
    ) -> Result<T, FetchError> {
        std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| msg(format!("async runtime: {e}")))?
                        .block_on(work)
                })
                .join()
                .unwrap_or_else(|_| Err(msg("the registry thread panicked")))
        })
    }
}

fn oci_error(e: oci::OciError) -> FetchError {
    msg(e.to_string())
}

/// The chart layer of a manifest, refused unless the manifest is a Helm chart's.
fn chart_layer(bytes: &[u8], what: &str) -> Result<Descriptor, FetchError> {
    let manifest: ImageManifest =
        serde_json::from_slice(bytes).map_err(|e| msg(format!("{what}: not an image manifest: {e}")))?;
    if manifest.config.media_type != HELM_CONFIG {
        return Err(msg(format!(
            "{what} is not a Helm chart (config media type {}, a chart's is {HELM_CONFIG})",
            manifest.config.media_type
        )));
    }
    let mut layers = manifest
        .layers
        .into_iter()
        .filter(|l| l.media_type == HELM_CHART_LAYER || l.media_type == HELM_CHART_LAYER_LEGACY);
    match (layers.next(), layers.next()) {
        (Some(layer), None) => Ok(layer),
        (None, _) => Err(msg(format!(
            "{what}: the manifest has no chart layer ({HELM_CHART_LAYER})"
        ))),
        (Some(_), Some(_)) => Err(msg(format!("{what}: the manifest has more than one chart layer"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(config: &str, layers: &[&str]) -> Vec<u8> {
        let d = |t: &str| serde_json::json!({"mediaType": t, "digest": format!("sha256:{}", "a".repeat(64)), "size": 3});
        serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "config": d(config),
            "layers": layers.iter().map(|t| d(t)).collect::<Vec<_>>(),
        }))
        .unwrap()
    }

    #[test]
    fn only_a_helm_charts_manifest_gives_a_chart_layer() {
        let table: &[(&str, &[&str], Result<&str, &str>)] = &[
            (HELM_CONFIG, &[HELM_CHART_LAYER], Ok(HELM_CHART_LAYER)),
            (
                HELM_CONFIG,
                &[HELM_CHART_LAYER_LEGACY],
                Ok(HELM_CHART_LAYER_LEGACY),
            ),
            (
                HELM_CONFIG,
                &[
                    "application/vnd.cncf.helm.chart.provenance.v1.prov",
                    HELM_CHART_LAYER,
                ],
                Ok(HELM_CHART_LAYER),
            ),
            (
                "application/vnd.oci.empty.v1+json",
                &[HELM_CHART_LAYER],
                Err("is not a Helm chart"),
            ),
            (HELM_CONFIG, &[], Err("no chart layer")),
            (
                HELM_CONFIG,
                &[HELM_CHART_LAYER, HELM_CHART_LAYER],
                Err("more than one"),
            ),
        ];
        for (i, (config, layers, want)) in table.iter().enumerate() {
            let got = chart_layer(&manifest(config, layers), "r/c:1");
            match want {
                Ok(t) => assert_eq!(got.map(|d| d.media_type).ok().as_deref(), Some(*t), "row {i}"),
                Err(part) => {
                    let err = got.map(|_| ()).unwrap_err().to_string();
                    assert!(err.contains(part), "row {i}: {err}");
                }
            }
        }
        assert!(chart_layer(b"{", "r/c:1").is_err());
    }
}
