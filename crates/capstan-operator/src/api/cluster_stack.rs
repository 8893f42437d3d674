//! `ClusterStack`: which cluster stack (provider, name, Kubernetes version, channel) a
//! namespace follows, which versions it wants, and where the releases come from.
//!
//! The fields of the cluster-stack-operator's ClusterStack keep their names, types, defaults
//! and constraints, so its objects work unchanged. capstan adds `source` and `interval` (CSO
//! takes one repository from its environment) and `addonValues` (CSO takes no user values),
//! all optional.

use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::conditions::Condition;

/// How often a source is polled when `spec.interval` is not set.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5 * 60);

/// The cluster stack a namespace follows.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
// `printcolumn(...)` entries repeat `type_ = "string"`, which clippy takes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "clusterstack.x-k8s.io",
    version = "v1alpha1",
    kind = "ClusterStack",
    namespaced,
    status = "ClusterStackStatus",
    shortname = "csk",
    category = "capstan",
    derive = "PartialEq",
    doc = "A cluster stack (provider, name, Kubernetes version, channel) that a namespace follows: \
           which of its releases are installed, and where they come from.",
    printcolumn(name = "Provider", type_ = "string", json_path = ".spec.provider"),
    printcolumn(name = "ClusterStack", type_ = "string", json_path = ".spec.name"),
    printcolumn(name = "K8s", type_ = "string", json_path = ".spec.kubernetesVersion"),
    printcolumn(name = "Channel", type_ = "string", json_path = ".spec.channel"),
    printcolumn(name = "Autosubscribe", type_ = "boolean", json_path = ".spec.autoSubscribe"),
    printcolumn(name = "Usable", type_ = "string", json_path = ".status.usableVersions"),
    printcolumn(name = "Latest", type_ = "string", json_path = ".status.latestRelease"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(
        name = "Reason",
        type_ = "string",
        priority = 1,
        json_path = ".status.conditions[?(@.type==\"Ready\")].reason"
    ),
    printcolumn(
        name = "Message",
        type_ = "string",
        priority = 1,
        json_path = ".status.conditions[?(@.type==\"Ready\")].message"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStackSpec {
    /// Provider of the cluster stack, e.g. `docker` or `openstack`.
    #[schemars(length(min = 1))]
    pub provider: String,
    /// Name of the cluster stack, e.g. `ferrol`.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Kubernetes version as `<major>.<minor>`, e.g. `1.27`.
    #[schemars(regex(pattern = r"^\d\.\d+$"))]
    pub kubernetes_version: String,
    /// Release channel: `stable` (versions `v1`, `v2`, …) or `custom`.
    #[serde(default)]
    pub channel: Channel,
    /// Versions to install besides the latest one, e.g. `v2`, `v1-alpha.0`, `v0-sha.4e0d8f3`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<String>,
    /// Whether the latest release of the source is installed automatically.
    #[serde(default = "default_true")]
    pub auto_subscribe: bool,
    /// True when the stack has no provider-specific part (no `providerRef` template).
    #[serde(default)]
    pub no_provider: bool,
    /// The provider's `<X>ClusterStackReleaseTemplate`, which every release clones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::object_reference_schema")]
    pub provider_ref: Option<ObjectReference>,
    /// Where the releases come from (capstan). Without it, the operator's default source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<StackSource>,
    /// How often the source is polled for new releases, as a duration like `5m` or `1h30m`
    /// (capstan; default 5m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"))]
    pub interval: Option<String>,
    /// Helm values for the addon charts of every Cluster that uses the stack (capstan): a YAML
    /// map, read like a `helm template -f` file and layered over the values the release
    /// computes for each Cluster; a Cluster's own values are layered over these. Checked by the
    /// validating webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addon_values: Option<String>,
    /// Who must have signed a release before it is rendered and applied (capstan; the shape of
    /// Flux's `OCIRepository.spec.verify`). Without it, the operator's `--verify-key` keys, if
    /// any. Only releases from an OCI source carry signatures to check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifySpec>,
    /// Who must have signed the charts the release's charts depend on, per repository
    /// (capstan; the rules of `capstan render --dependency-policy`): the longest `repository`
    /// covering a dependency's repository, as Chart.yaml writes it, wins. Where none covers
    /// it, the operator's `--dependency-policy`, `--keyring` and `--verify-key` decide.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependency_policy: Vec<DependencyRule>,
}

/// What the chart dependencies from one repository (and the repositories below it) must
/// carry; a rule that names nothing exempts them from the operator's defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DependencyRule {
    /// The repository as the charts' Chart.yaml writes it (never the mirror it is fetched
    /// from): `https://HOST/PATH` or `oci://HOST/PATH`.
    #[schemars(regex(pattern = r"^(https?|oci)://[^\s/]+.*$"))]
    pub repository: String,
    /// Secret in the ClusterStack's namespace whose `*.gpg` and `*.asc` entries are OpenPGP
    /// keyrings (as `gpg --export` writes them, binary or armored): each chart needs a Helm
    /// provenance (`.prov`) signed by one of their keys, as `helm pull --verify` checks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyring_secret_ref: Option<SecretReference>,
    /// Secret in the ClusterStack's namespace whose `*.pub` entries are cosign public keys:
    /// each `oci://` chart needs a cosign signature by one of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
    /// Keyless (Fulcio) signers accepted for `oci://` charts, as in `spec.verify`.
    #[serde(default, rename = "matchOIDCIdentity", skip_serializing_if = "Vec::is_empty")]
    pub match_oidc_identity: Vec<OidcIdentityMatch>,
    /// Secret whose `trusted_root.json` entry is the Sigstore trusted root for
    /// `matchOIDCIdentity` (default: Sigstore's public-good instance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_root_secret_ref: Option<SecretReference>,
}

/// A signature policy: releases must carry a cosign signature by one of the Secret's keys, or
/// a keyless one by one of the OIDC identities.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifySpec {
    /// The signature format; only `cosign` (keyed and keyless) is supported. Checked by the
    /// webhook.
    pub provider: String,
    /// Secret in the ClusterStack's namespace whose `*.pub` entries are the trusted public
    /// keys (PEM, as `cosign generate-key-pair` writes `cosign.pub`). Required without
    /// `matchOIDCIdentity` (the webhook refuses a policy with neither); optional in the schema
    /// so the refusal says why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
    /// Keyless (Fulcio) signers accepted: each an OIDC issuer and a subject (the
    /// certificate's e-mail or URI), regexes matching the whole text; any one suffices.
    #[serde(default, rename = "matchOIDCIdentity", skip_serializing_if = "Vec::is_empty")]
    pub match_oidc_identity: Vec<OidcIdentityMatch>,
    /// Secret in the ClusterStack's namespace whose `trusted_root.json` entry is the Sigstore
    /// trusted root for `matchOIDCIdentity` (default: Sigstore's public-good instance, shipped
    /// with capstan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_root_secret_ref: Option<SecretReference>,
}

/// A keyless signer of `spec.verify.matchOIDCIdentity`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OidcIdentityMatch {
    /// Regex of the OIDC issuer (e.g. `https://token\.actions\.githubusercontent\.com`).
    pub issuer: String,
    /// Regex of the subject: the certificate's e-mail or URI.
    pub subject: String,
}

fn default_true() -> bool {
    true
}

/// The release channel of a cluster stack.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    #[default]
    Stable,
    Custom,
}

impl Channel {
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Stable => "stable",
            Channel::Custom => "custom",
        }
    }
}

impl std::fmt::Display for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a cluster stack's releases come from: exactly one of `github`, `oci`, `git` or `local`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum StackSource {
    /// The releases of a GitHub repository.
    Github(GitHubSource),
    /// The releases in an OCI registry's repository, as csctl publishes them.
    Oci(OciSource),
    /// Stack sources in a git repository, built into releases by capstan.
    Git(GitSource),
    /// A directory on the operator's file system (a mounted volume).
    Local(LocalSource),
}

/// A GitHub repository whose releases are cluster stack releases.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitHubSource {
    /// Owner (user or organisation) of the repository.
    #[schemars(length(min = 1))]
    pub owner: String,
    /// Name of the repository.
    #[schemars(length(min = 1))]
    pub repo: String,
    /// Base URL of the GitHub API, for GitHub Enterprise; default `https://api.github.com`.
    #[serde(default, rename = "apiURL", skip_serializing_if = "Option::is_none")]
    pub api_url: Option<String>,
    /// Secret in the ClusterStack's namespace whose `token` key holds the API token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
}

/// A repository in an OCI registry whose tags are cluster stack releases (csctl's layout).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OciSource {
    /// `HOST/REPO` (an `oci://` prefix is accepted), e.g.
    /// `registry.scs.community/kaas/cluster-stacks`.
    #[schemars(length(min = 1))]
    pub repository: String,
    /// Secret in the ClusterStack's namespace with `username` and `password`, or a `token`
    /// (sent as Bearer). Without it: the operator's OCI credentials, else anonymous.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
}

/// A git repository holding stack sources.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitSource {
    /// URL of the repository (`https://…` or `ssh://…`).
    #[schemars(length(min = 1))]
    pub url: String,
    /// Branch, tag or commit to follow; default the remote's default branch.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub ref_: Option<String>,
    /// Directory of the stack inside the repository; default its root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Secret in the ClusterStack's namespace with the credentials: `username` and `password`
    /// (or a `token`) for HTTPS, `identity` and `known_hosts` for SSH.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
}

/// A directory on the operator's file system.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalSource {
    /// Absolute path of the directory.
    #[schemars(length(min = 1))]
    pub path: String,
}

/// A Secret in the namespace of the object that refers to it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretReference {
    /// Name of the Secret.
    #[schemars(length(min = 1))]
    pub name: String,
}

/// What the operator observed of a ClusterStack.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStackStatus {
    /// The newest release of the source that matches the stack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_release: Option<String>,
    /// One entry per ClusterStackRelease of the stack.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summary: Vec<ReleaseSummary>,
    /// The versions that are ready to use, comma-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usable_versions: Option<String>,
    /// Observations; `Ready` summarises them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// The state of one ClusterStackRelease, as its ClusterStack reports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseSummary {
    /// Name of the ClusterStackRelease.
    pub name: String,
    /// Whether the release is ready to use.
    pub ready: bool,
    /// What the release is doing, e.g. `downloading release assets`, `applying objects`, `done`.
    pub phase: String,
    /// Details, with the error text when the release failed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// A `spec.interval` that is not a duration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("spec.interval {value:?} is not a duration like 5m or 1h30m: {reason}")]
pub struct IntervalError {
    pub value: String,
    pub reason: String,
}

impl ClusterStackSpec {
    /// How often to poll the source: `spec.interval`, else [`DEFAULT_INTERVAL`].
    pub fn interval(&self) -> Result<Duration, IntervalError> {
        let Some(text) = &self.interval else {
            return Ok(DEFAULT_INTERVAL);
        };
        let error = |reason: String| IntervalError {
            value: text.clone(),
            reason,
        };
        let nanos = capstan_go::time::duration::parse(text).map_err(error)?;
        let nanos = u64::try_from(nanos).map_err(|_| error("it is negative".into()))?;
        Ok(Duration::from_nanos(nanos))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: serde_json::Value) -> ClusterStackSpec {
        serde_json::from_value(json).expect("spec deserializes")
    }

    #[test]
    fn defaults_match_the_schema_defaults() {
        let s =
            spec(serde_json::json!({"provider": "docker", "name": "ferrol", "kubernetesVersion": "1.27"}));
        assert_eq!(s.channel, Channel::Stable);
        assert!(s.auto_subscribe);
        assert!(!s.no_provider);
        assert!(s.versions.is_empty());
        assert_eq!(s.interval(), Ok(DEFAULT_INTERVAL));
    }

    #[test]
    fn interval_parses_go_durations() {
        let mut s = spec(serde_json::json!({"provider": "p", "name": "n", "kubernetesVersion": "1.27"}));
        s.interval = Some("1h30m".into());
        assert_eq!(s.interval(), Ok(Duration::from_secs(5400)));
        s.interval = Some("90".into());
        let err = s.interval().expect_err("no unit");
        assert_eq!(
            err.to_string(),
            "spec.interval \"90\" is not a duration like 5m or 1h30m: time: missing unit in duration \"90\""
        );
    }

    #[test]
    fn sources_are_one_of_three_shapes() {
        let s = spec(serde_json::json!({
            "provider": "docker", "name": "ferrol", "kubernetesVersion": "1.27",
            "source": {"github": {"owner": "SovereignCloudStack", "repo": "cluster-stacks",
                                  "apiURL": "https://github.example/api/v3",
                                  "secretRef": {"name": "gh-token"}}}
        }));
        let Some(StackSource::Github(gh)) = &s.source else {
            panic!("github source expected: {:?}", s.source);
        };
        assert_eq!(gh.api_url.as_deref(), Some("https://github.example/api/v3"));
        let back = serde_json::to_value(&s).expect("serializes");
        assert_eq!(
            back["source"]["github"]["apiURL"],
            "https://github.example/api/v3"
        );

        let git: StackSource = serde_json::from_value(serde_json::json!(
            {"git": {"url": "https://example.org/stacks.git", "ref": "main", "path": "providers/docker/ferrol/1-27"}}
        ))
        .expect("git source");
        assert_eq!(
            git,
            StackSource::Git(GitSource {
                url: "https://example.org/stacks.git".into(),
                ref_: Some("main".into()),
                path: Some("providers/docker/ferrol/1-27".into()),
                secret_ref: None,
            })
        );
        let two = serde_json::from_value::<StackSource>(serde_json::json!(
            {"local": {"path": "/stacks"}, "git": {"url": "x"}}
        ));
        assert!(two.is_err(), "two sources at once must not deserialize");
    }
}
