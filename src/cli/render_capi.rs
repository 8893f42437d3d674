//! `capstan render --cluster-api VERSION`: a ClusterClass chart's objects as the operator
//! applies them where that Cluster API version is served (issue 47) — `v1beta2` converts the
//! `v1beta1` ClusterClass, kubeadm and docker templates, `v1beta1` refuses `v1beta2` ones.
//! Without the flag `render` prints what Helm prints, byte for byte.

use anyhow::Context;

use capstan_chart::{manifest, values};
use capstan_stack::capi::CapiVersion;
use capstan_stack::capi::to_v1beta2;

use super::output::value_to_json;

/// The `--cluster-api` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ClusterApi {
    V1beta1,
    V1beta2,
}

impl ClusterApi {
    pub fn version(self) -> CapiVersion {
        match self {
            ClusterApi::V1beta1 => CapiVersion::V1Beta1,
            ClusterApi::V1beta2 => CapiVersion::V1Beta2,
        }
    }
}

/// `stream` (a manifest stream, `---` and `# Source:` headers) with each object the operator
/// converts replaced by its conversion (re-emitted as YAML under the same header); the
/// others kept as they are. What the conversion drops goes to stderr.
pub fn stream_in(stream: &str, version: ClusterApi, namespace: &str) -> anyhow::Result<String> {
    let mut out = String::with_capacity(stream.len());
    for doc in manifest::split_documents(stream) {
        let parsed = values::parse_document(&doc).map_err(anyhow::Error::msg)?;
        let object = value_to_json(&parsed);
        let converted = to_v1beta2::for_cluster_api(&object, version.version(), namespace)?;
        out.push_str("---\n");
        match converted {
            None => out.push_str(&doc),
            Some(converted) => {
                for dropped in &converted.dropped {
                    let kind = object.get("kind").and_then(|k| k.as_str()).unwrap_or("");
                    let name = object
                        .pointer("/metadata/name")
                        .and_then(|n| n.as_str())
                        .unwrap_or("");
                    eprintln!("capstan: {kind} {name}: {dropped}");
                }
                let headers: String = doc
                    .lines()
                    .take_while(|line| line.starts_with('#'))
                    .map(|line| format!("{line}\n"))
                    .collect();
                out.push_str(&headers);
                out.push_str(&yaml(&converted.object)?);
            }
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

/// JSON as YAML (keys sorted, as the API server's objects print).
fn yaml(json: &serde_json::Value) -> anyhow::Result<String> {
    let value =
        capstan_encoding::json::unmarshal(&json.to_string()).context("re-reading the converted object")?;
    capstan_encoding::yaml_emit::marshal(&value).context("writing YAML")
}
