//! The render-once store: what a controller rendered for an object, kept per revision in a
//! gzip-compressed Secret owned by the object (as Helm keeps its release records).
//!
//! A render happens only when its inputs change (release digest, values, capstan's version):
//! their hash labels the Secret. Drift passes and restarts apply the stored manifest, so charts
//! with generated content (`genCA`, `randAlphaNum`) are not rotated on every pass and a
//! restart costs no render. The newest [`KEEP_REVISIONS`] revisions are kept.
//!
//! A revision is written once and never changed, and only the operator that owns the object
//! writes them, so the newest revision of each owner is also kept in memory once read or
//! saved: a pass that changes nothing reads no Secret (issue 36 §2 — at 1,000 Clusters in one
//! namespace even a list from the watch cache filtered every Secret there on every pass). It is
//! kept as its Secret holds it, gzip-compressed, and decoded on each read: a few KiB per owner
//! instead of the whole manifest text (issue 36 §3).

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use serde::{Deserialize, Serialize};

/// Revisions kept per owner (the newest ones).
pub const KEEP_REVISIONS: usize = 3;
/// Secret type of stored renders.
pub const SECRET_TYPE: &str = "capstan.dev/render.v1";
/// Label: the owner's UID (names can be longer than a label value).
pub const OWNER_LABEL: &str = "capstan.dev/render-owner";
/// Label: the revision number.
pub const REVISION_LABEL: &str = "capstan.dev/render-revision";
/// Annotation: the hash of the render's inputs.
pub const INPUTS_ANNOTATION: &str = "capstan.dev/render-inputs";
const DATA_KEY: &str = "render";

/// One stored render.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredRender {
    pub revision: u32,
    /// Hash of the inputs the render was made from.
    pub inputs: String,
    /// The rendered parts, in apply order: part name → manifest stream.
    pub parts: Vec<(String, String)>,
}

impl StoredRender {
    /// Every part's stream, joined.
    pub fn manifest(&self) -> String {
        let mut out = String::new();
        for (_, stream) in &self.parts {
            out.push_str(stream);
            if !stream.ends_with('\n') {
                out.push('\n');
            }
        }
        out
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("render store of {owner}: {action}: {source}")]
    Api {
        owner: String,
        action: &'static str,
        #[source]
        source: kube::Error,
    },
    #[error("render store of {owner}: Secret {secret} is corrupt: {message}")]
    Corrupt {
        owner: String,
        secret: String,
        message: String,
    },
}

/// The owner of stored renders: an object of the operator's API.
#[derive(Clone, Debug)]
pub struct Owner {
    pub namespace: String,
    /// Short kind, part of the Secret names: `cskr`, `caddon`.
    pub short_kind: &'static str,
    pub name: String,
    pub reference: OwnerReference,
}

impl Owner {
    fn uid(&self) -> &str {
        &self.reference.uid
    }

    fn describe(&self) -> String {
        format!("{} {}/{}", self.reference.kind, self.namespace, self.name)
    }

    fn secret_name(&self, revision: u32) -> String {
        format!("capstan.{}.{}.v{revision}", self.short_kind, self.name)
    }
}

/// What the store keeps in memory of an owner's newest revision.
struct Remembered {
    revision: u32,
    inputs: String,
    /// The render as its Secret stores it (gzip-compressed JSON).
    compressed: Vec<u8>,
}

/// Reads and writes stored renders through the API server.
#[derive(Clone)]
pub struct RenderStore {
    client: Client,
    /// What this process knows of each owner (by UID): the newest revision it read or saved,
    /// or that a read found none.
    known: Arc<Mutex<HashMap<String, Known>>>,
}

/// What a save creates, as far as memory tells.
enum NextRevision {
    /// The newest revision has these inputs already.
    Same,
    /// This revision (one above the newest, or the first when a read found none).
    Create(u32),
    /// Nothing known: list to find out.
    Unknown,
}

/// What the store knows of an owner's revisions.
enum Known {
    Newest(Remembered),
    /// A read found none, and none was saved since.
    NoneStored,
}

impl RenderStore {
    pub fn new(client: Client) -> RenderStore {
        RenderStore {
            client,
            known: Arc::default(),
        }
    }

    fn remember(&self, owner: &Owner, render: &StoredRender, compressed: &[u8]) {
        let mut known = self.lock();
        let newer = match known.get(owner.uid()) {
            Some(Known::Newest(remembered)) => remembered.revision <= render.revision,
            Some(Known::NoneStored) | None => true,
        };
        if newer {
            known.insert(
                owner.uid().to_string(),
                Known::Newest(Remembered {
                    revision: render.revision,
                    inputs: render.inputs.clone(),
                    compressed: compressed.to_vec(),
                }),
            );
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Known>> {
        self.known.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What memory says the next save of `owner` with `inputs` creates, without decoding the
    /// render.
    fn next_revision_for(&self, owner: &Owner, inputs: &str) -> NextRevision {
        match self.lock().get(owner.uid()) {
            Some(Known::Newest(newest)) if newest.inputs == inputs => NextRevision::Same,
            Some(Known::Newest(newest)) => NextRevision::Create(newest.revision + 1),
            Some(Known::NoneStored) => NextRevision::Create(1),
            None => NextRevision::Unknown,
        }
    }

    /// The remembered newest render of `owner`, decoded (outside the lock).
    fn remembered(&self, owner: &Owner) -> Result<Option<StoredRender>, StoreError> {
        let found = match self.lock().get(owner.uid()) {
            Some(Known::Newest(r)) => Some((r.revision, r.compressed.clone())),
            Some(Known::NoneStored) | None => None,
        };
        match found {
            Some((revision, compressed)) => decompress(&compressed)
                .map(Some)
                .map_err(|message| corrupt(owner, &owner.secret_name(revision), message)),
            None => Ok(None),
        }
    }

    fn api(&self, namespace: &str) -> Api<Secret> {
        Api::namespaced(self.client.clone(), namespace)
    }

    /// The revision Secrets of `owner`, newest first. `Freshness::Cached` is served from the API
    /// server's watch cache: a quorum list reads every Secret of the namespace from etcd and
    /// filters them there, so one per pass costs a namespace of 1,000 Clusters (each with its
    /// kubeconfig and renders) seconds of API server CPU (docs/benchmarks.md, issue 26).
    async fn list(&self, owner: &Owner, read: Freshness) -> Result<Vec<Secret>, StoreError> {
        let params = ListParams::default().labels(&format!("{OWNER_LABEL}={}", owner.uid()));
        let params = match read {
            Freshness::Cached => params.match_any(),
            Freshness::Quorum => params,
        };
        let mut secrets = self
            .api(&owner.namespace)
            .list(&params)
            .await
            .map_err(|source| StoreError::Api {
                owner: owner.describe(),
                action: "listing Secrets",
                source,
            })?
            .items;
        secrets.sort_by_key(|s| std::cmp::Reverse(revision_of(s)));
        Ok(secrets)
    }

    /// The newest stored render of `owner`, if any: the one this process read or saved last,
    /// else from the watch cache — which may lag a save by moments, and then the caller renders
    /// again and [`RenderStore::save`] (a quorum read) finds the revision with those inputs
    /// instead of adding one.
    pub async fn latest(&self, owner: &Owner) -> Result<Option<StoredRender>, StoreError> {
        if let Some(render) = self.remembered(owner)? {
            return Ok(Some(render));
        }
        match self.list(owner, Freshness::Cached).await?.first() {
            Some(secret) => {
                let (render, compressed) = decode(owner, secret)?;
                self.remember(owner, &render, compressed);
                Ok(Some(render))
            }
            None => {
                self.lock()
                    .entry(owner.uid().to_string())
                    .or_insert(Known::NoneStored);
                Ok(None)
            }
        }
    }

    /// Stores a new revision (one above the newest) and removes revisions beyond
    /// [`KEEP_REVISIONS`]. Creating, not overwriting, makes two writers of one revision fail
    /// instead of losing a render. With the newest revision known in memory nothing is listed:
    /// the next one is created and the one it pushes out deleted by name (a quorum list of the
    /// owner's revisions reads every Secret of the namespace from etcd — at 1,000 Clusters in
    /// one namespace, most of the management API server's CPU in a fleet's upgrade). So is an
    /// owner's first revision when a read found none: a new ClusterAddon's first save listed
    /// every Secret of its namespace, so a fleet's creation cost the management API server work
    /// growing with the square of its Clusters. A create that finds its revision taken lists,
    /// as without memory.
    pub async fn save(
        &self,
        owner: &Owner,
        inputs: &str,
        parts: Vec<(String, String)>,
    ) -> Result<StoredRender, StoreError> {
        // The revision to create without listing, when memory tells it.
        let next = match self.next_revision_for(owner, inputs) {
            NextRevision::Same => match self.remembered(owner)? {
                Some(newest) => return Ok(newest),
                None => None,
            },
            NextRevision::Create(revision) => Some(revision),
            NextRevision::Unknown => None,
        };
        let parts = match next {
            Some(revision) => {
                let render = StoredRender {
                    revision,
                    inputs: inputs.to_string(),
                    parts,
                };
                match self.create(owner, &render).await? {
                    Created::Yes(compressed) => {
                        self.remember(owner, &render, &compressed);
                        if let Some(old) = revision.checked_sub(KEEP_REVISIONS as u32)
                            && old > 0
                        {
                            // A failed removal leaves one revision too many, removed by the next
                            // save that lists.
                            let _ = self
                                .api(&owner.namespace)
                                .delete(&owner.secret_name(old), &DeleteParams::default())
                                .await;
                        }
                        return Ok(render);
                    }
                    // Stored by another writer since this process looked (or, for revision 1,
                    // left by an owner of the same name).
                    Created::Taken => render.parts,
                }
            }
            None => parts,
        };
        self.save_listing(owner, inputs, parts).await
    }

    /// Creates the Secret of `render`, or tells that its revision exists.
    async fn create(&self, owner: &Owner, render: &StoredRender) -> Result<Created, StoreError> {
        let compressed = compress(owner, render)?;
        let secret = encode(owner, render, compressed.clone());
        match self
            .api(&owner.namespace)
            .create(&PostParams::default(), &secret)
            .await
        {
            Ok(_) => Ok(Created::Yes(compressed)),
            Err(e) if crate::kube_error::is_conflict(&e) => Ok(Created::Taken),
            Err(source) => Err(StoreError::Api {
                owner: owner.describe(),
                action: "creating the revision Secret",
                source,
            }),
        }
    }

    /// [`RenderStore::save`] from a quorum list of the owner's revisions.
    async fn save_listing(
        &self,
        owner: &Owner,
        inputs: &str,
        parts: Vec<(String, String)>,
    ) -> Result<StoredRender, StoreError> {
        let existing = self.list(owner, Freshness::Quorum).await?;
        if let Some(newest) = existing.first()
            && inputs_of(newest) == Some(inputs)
        {
            // Stored already (seen late by a cached read): the same inputs render the same.
            let (render, compressed) = decode(owner, newest)?;
            self.remember(owner, &render, compressed);
            return Ok(render);
        }
        let revision = existing.first().map_or(0, revision_of) + 1;
        let render = StoredRender {
            revision,
            inputs: inputs.to_string(),
            parts,
        };
        let compressed = compress(owner, &render)?;
        let secret = encode(owner, &render, compressed.clone());
        self.api(&owner.namespace)
            .create(&PostParams::default(), &secret)
            .await
            .map_err(|source| StoreError::Api {
                owner: owner.describe(),
                action: "creating the revision Secret",
                source,
            })?;
        self.remember(owner, &render, &compressed);
        for old in existing.iter().skip(KEEP_REVISIONS - 1) {
            if let Some(name) = &old.metadata.name {
                // A failed removal leaves one revision too many; the next save retries it.
                let _ = self
                    .api(&owner.namespace)
                    .delete(name, &DeleteParams::default())
                    .await;
            }
        }
        Ok(render)
    }

    /// Removes every stored revision of `owner` (its finalizer runs this: the test and some
    /// real clusters run no garbage collector).
    pub async fn remove_all(&self, owner: &Owner) -> Result<(), StoreError> {
        self.lock().remove(owner.uid());
        for secret in self.list(owner, Freshness::Quorum).await? {
            if let Some(name) = &secret.metadata.name {
                match self
                    .api(&owner.namespace)
                    .delete(name, &DeleteParams::default())
                    .await
                {
                    Ok(_) => {}
                    Err(e) if crate::kube_error::is_not_found(&e) => {}
                    Err(source) => {
                        return Err(StoreError::Api {
                            owner: owner.describe(),
                            action: "deleting a revision Secret",
                            source,
                        });
                    }
                }
            }
        }
        Ok(())
    }
}

/// Whether a revision's Secret was created.
enum Created {
    /// Created, with the render as the Secret holds it.
    Yes(Vec<u8>),
    /// A Secret of that revision exists.
    Taken,
}

/// How fresh a list of revisions must be.
#[derive(Clone, Copy)]
enum Freshness {
    /// From the API server's watch cache (`resourceVersion=0`).
    Cached,
    /// From etcd.
    Quorum,
}

/// The inputs hash a revision Secret is annotated with.
fn inputs_of(secret: &Secret) -> Option<&str> {
    secret
        .metadata
        .annotations
        .as_ref()?
        .get(INPUTS_ANNOTATION)
        .map(String::as_str)
}

fn revision_of(secret: &Secret) -> u32 {
    secret
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(REVISION_LABEL))
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

fn corrupt(owner: &Owner, secret: &str, message: String) -> StoreError {
    StoreError::Corrupt {
        owner: owner.describe(),
        secret: secret.to_string(),
        message,
    }
}

/// `render` as a Secret stores it: gzip-compressed JSON.
fn compress(owner: &Owner, render: &StoredRender) -> Result<Vec<u8>, StoreError> {
    let corrupt = |e: std::io::Error| corrupt(owner, &owner.secret_name(render.revision), e.to_string());
    let json = serde_json::to_vec(render).map_err(|e| corrupt(e.into()))?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&json).map_err(corrupt)?;
    gz.finish().map_err(corrupt)
}

/// The render of a Secret's data (what [`compress`] made).
fn decompress(bytes: &[u8]) -> Result<StoredRender, String> {
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut json)
        .map_err(|e| format!("not gzip: {e}"))?;
    serde_json::from_slice(&json).map_err(|e| e.to_string())
}

/// The revision Secret of `render`, whose data is `compressed`.
fn encode(owner: &Owner, render: &StoredRender, compressed: Vec<u8>) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(owner.secret_name(render.revision)),
            namespace: Some(owner.namespace.clone()),
            labels: Some(BTreeMap::from([
                (OWNER_LABEL.to_string(), owner.uid().to_string()),
                (REVISION_LABEL.to_string(), render.revision.to_string()),
                (
                    capstan_apply::ssa::MANAGED_BY_LABEL.to_string(),
                    capstan_apply::ssa::MANAGED_BY.to_string(),
                ),
            ])),
            annotations: Some(BTreeMap::from([(
                INPUTS_ANNOTATION.to_string(),
                render.inputs.clone(),
            )])),
            owner_references: Some(vec![owner.reference.clone()]),
            ..ObjectMeta::default()
        },
        type_: Some(SECRET_TYPE.into()),
        data: Some(BTreeMap::from([(DATA_KEY.to_string(), ByteString(compressed))])),
        ..Secret::default()
    }
}

/// The render a revision Secret stores, and its data as stored.
fn decode<'s>(owner: &Owner, secret: &'s Secret) -> Result<(StoredRender, &'s [u8]), StoreError> {
    let name = secret.metadata.name.clone().unwrap_or_default();
    let bytes = secret
        .data
        .as_ref()
        .and_then(|d| d.get(DATA_KEY))
        .ok_or_else(|| corrupt(owner, &name, format!("no data.{DATA_KEY}")))?;
    let render = decompress(&bytes.0).map_err(|message| corrupt(owner, &name, message))?;
    Ok((render, &bytes.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner() -> Owner {
        Owner {
            namespace: "ns".into(),
            short_kind: "cskr",
            name: "docker-ferrol-1-27-v2".into(),
            reference: OwnerReference {
                api_version: "clusterstack.x-k8s.io/v1alpha1".into(),
                kind: "ClusterStackRelease".into(),
                name: "docker-ferrol-1-27-v2".into(),
                uid: "1234".into(),
                ..OwnerReference::default()
            },
        }
    }

    #[test]
    fn a_render_survives_encoding() {
        let render = StoredRender {
            revision: 7,
            inputs: "abc".into(),
            parts: vec![("cluster-class".into(), "---\nkind: A\n".into())],
        };
        let secret = encode(
            &owner(),
            &render,
            compress(&owner(), &render).expect("compresses"),
        );
        assert_eq!(
            secret.metadata.name.as_deref(),
            Some("capstan.cskr.docker-ferrol-1-27-v2.v7")
        );
        assert_eq!(revision_of(&secret), 7);
        assert_eq!(decode(&owner(), &secret).expect("decodes").0, render);
    }

    #[test]
    fn a_damaged_secret_is_named_in_the_error() {
        let render = StoredRender {
            revision: 1,
            inputs: "x".into(),
            parts: vec![],
        };
        let mut secret = encode(&owner(), &render, Vec::new());
        secret.data = Some(BTreeMap::from([(
            DATA_KEY.to_string(),
            ByteString(b"nope".to_vec()),
        )]));
        let err = decode(&owner(), &secret).expect_err("not gzip");
        assert!(
            err.to_string()
                .starts_with("render store of ClusterStackRelease ns/docker-ferrol-1-27-v2: Secret capstan.cskr.docker-ferrol-1-27-v2.v1 is corrupt: not gzip"),
            "{err}"
        );
    }
}
