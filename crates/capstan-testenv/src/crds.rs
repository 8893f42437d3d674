//! Installing CustomResourceDefinitions from a directory of YAML files.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};

use super::{Error, Result, io_err};

const ESTABLISH_TIMEOUT: Duration = Duration::from_secs(60);
const FIELD_MANAGER: &str = "capstan-test";

/// The `*.yaml`/`*.yml` files of `dir`, sorted by name.
pub fn crd_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(io_err(format!("reading {}", dir.display())))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(io_err(format!("reading {}", dir.display())))?
            .path();
        let is_yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
        if is_yaml && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// How the CRDs of a directory are prepared before they are applied.
#[derive(Debug, Clone, Default)]
pub struct CrdOptions {
    /// Drop what the v1.20 test API server does not know, so that newer CRDs (Cluster API
    /// v1.14's) install there: every `x-kubernetes-validations` (server-side apply refuses
    /// the undeclared field) and every `default: ""` on a `type: string` schema (refused as
    /// "must be of type string"). Validation the server would have done is lost; nothing a
    /// test reads changes.
    pub for_old_server: bool,
    /// Serve only these versions of each CRD that has one of them (`served: false` for its
    /// others) — `["v1beta2"]` is Cluster API v1.16, where v1beta1 is no longer served. No
    /// conversion webhook runs on the test server, so a test must never read a CRD at
    /// another version than it stores.
    pub serve_only: Option<Vec<String>>,
}

impl CrdOptions {
    /// Cluster API v1.11+ CRDs on the v1.20 test server, serving only v1beta2 (v1.16).
    pub fn v1beta2_only() -> CrdOptions {
        CrdOptions {
            for_old_server: true,
            serve_only: Some(vec!["v1beta2".to_string()]),
        }
    }

    /// `crd` (JSON) prepared as these options say.
    pub fn prepare(&self, crd: &mut serde_json::Value) {
        if self.for_old_server {
            drop_unknown_to_old_server(crd);
        }
        if let Some(keep) = &self.serve_only
            && let Some(versions) = crd.pointer_mut("/spec/versions").and_then(|v| v.as_array_mut())
        {
            let has_one = versions
                .iter()
                .any(|v| v["name"].as_str().is_some_and(|n| keep.iter().any(|k| k == n)));
            if has_one {
                for version in versions {
                    let name = version["name"].as_str().unwrap_or_default().to_string();
                    version["served"] = serde_json::Value::Bool(keep.contains(&name));
                }
            }
        }
    }
}

/// Removes `x-kubernetes-validations` everywhere and `default: ""` from string schemas.
fn drop_unknown_to_old_server(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.remove("x-kubernetes-validations");
            let string_type = map.get("type").and_then(|t| t.as_str()) == Some("string");
            if string_type && map.get("default").and_then(|d| d.as_str()) == Some("") {
                map.remove("default");
            }
            map.values_mut().for_each(drop_unknown_to_old_server);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_unknown_to_old_server),
        _ => {}
    }
}

/// Parses every CRD document in `path` (other kinds and empty documents are ignored),
/// prepared by `options`.
fn read_crds_with(path: &Path, options: &CrdOptions) -> Result<Vec<CustomResourceDefinition>> {
    let text = std::fs::read_to_string(path).map_err(io_err(format!("reading {}", path.display())))?;
    let yaml_err = |message: String| Error::Yaml {
        path: path.to_path_buf(),
        message,
    };
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(&text).map_err(|e| yaml_err(e.to_string()))?;
    docs.into_iter()
        .filter(|d| d.get("kind").and_then(|k| k.as_str()) == Some("CustomResourceDefinition"))
        .map(|mut d| {
            options.prepare(&mut d);
            serde_json::from_value(d).map_err(|e| yaml_err(e.to_string()))
        })
        .collect()
}

/// Server-side applies every CRD found in `dir` and waits until all are Established.
/// Returns the CRD names. Idempotent, and safe from two tests at once on a shared server.
pub async fn install_crds(client: &Client, dir: &Path) -> Result<Vec<String>> {
    install_crds_with(client, dir, &CrdOptions::default()).await
}

/// [`install_crds`], each CRD prepared by `options` first.
pub async fn install_crds_with(client: &Client, dir: &Path, options: &CrdOptions) -> Result<Vec<String>> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut names = Vec::new();
    for file in crd_files(dir)? {
        for crd in read_crds_with(&file, options)? {
            let name = crd.metadata.name.clone().ok_or_else(|| Error::Yaml {
                path: file.clone(),
                message: "CRD without metadata.name".into(),
            })?;
            apply(&api, &params, &name, &crd).await?;
            names.push(name);
        }
    }
    for name in &names {
        wait_established(&api, name).await?;
    }
    Ok(names)
}

/// Tests on the shared API server apply the same CRDs at once: a conflict of two first
/// applies is retried (the second then finds the CRD and changes nothing).
async fn apply(
    api: &Api<CustomResourceDefinition>,
    params: &PatchParams,
    name: &str,
    crd: &CustomResourceDefinition,
) -> Result<()> {
    let mut attempts = 0;
    loop {
        match api.patch(name, params, &Patch::Apply(crd)).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 && attempts < 3 => attempts += 1,
            Err(e) => return Err(e.into()),
        }
    }
}

async fn wait_established(api: &Api<CustomResourceDefinition>, name: &str) -> Result<()> {
    let deadline = Instant::now() + ESTABLISH_TIMEOUT;
    loop {
        let crd = api.get(name).await?;
        let established = crd
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        if established {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error::Timeout {
                what: format!("CRD {name} to become Established"),
                secs: ESTABLISH_TIMEOUT.as_secs(),
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
