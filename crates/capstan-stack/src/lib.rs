//! The cluster-stack domain: how releases are named and versioned, what a release holds and
//! how it is validated, the runtime values of its addon charts, and rendering a whole release.
//!
//! - [`version`] — `vN`, `vN-<channel>.<patch>`, `v0-sha.<hash>`; dot and dash forms; ordering.
//! - [`name`] — stack names, release tags, ClusterClass names, asset file names.
//! - [`metadata`] — the `metadata.yaml` of a release.
//! - [`addon_config`] — `clusteraddon.yaml` (multi-stage addons: hooks, stages, conditions).
//! - [`capi`] — Cluster API's Cluster and ClusterClass in v1beta1 and v1beta2: the typed
//!   fields capstan reads, the v1beta1 view of a v1beta2 Cluster, which version to speak.
//! - [`user_values`] — values a user gives for the addon charts, layered over the computed ones.
//!
//! Builds on [`capstan_chart`]; knows nothing of HTTP, git or the Kubernetes API. Every file
//! problem is a [`DocumentError`] naming the file and the field.

pub mod addon_config;
mod archive;
pub mod build;
pub mod capi;
pub mod diff;
mod doc;
pub mod metadata;
pub mod name;
pub mod release;
pub mod render;
pub mod user_values;
pub mod values;
pub mod version;

pub use addon_config::{Action, AddonConfig, ConditionObject, Hook, Stage, WaitCondition};
pub use doc::DocumentError;
pub use metadata::Metadata;
pub use name::{KubernetesVersion, NameError, ReleaseTag, StackName};
pub use version::{Version, VersionError};
