//! What the `capstan` commands other than `operator` read of the operator, one module per
//! concern: the same lookups and decisions the controllers make, so a command and the
//! operator never disagree (`capstan get`, `describe`, `render`/`install` lookups,
//! `rollout plan`/`paths`/`approve`, `preflight`, `docs metrics`, and the `operator`
//! command's own flags). Each module re-exports named items only; everything else of the
//! crate stays `pub(crate)`.

/// Clusters as the operator reads them: at the Cluster API version discovery chose.
pub mod clusters {
    pub use crate::capi_api::ensure_discovered;
    pub use crate::clusters::{cluster_resource, get};
    pub use crate::kube_error::is_not_found;
    pub use crate::lookup::cluster_lookup;
    pub use crate::watch::CLUSTER_NAME_LABEL;
}

/// A workload cluster, reached through its Cluster's kubeconfig Secret.
pub mod workload {
    pub use crate::addon::workload::{connect, kubeconfig_secret, read_secret};
}

/// The values a ClusterAddon's Cluster adds to its release (`spec.addonValues`, the
/// Cluster's annotations).
pub mod user_values {
    pub use crate::addon::user_values::{
        Layer, VALUES_ANNOTATION, VALUES_FROM_ANNOTATION, gather, parse_ref,
    };
}

/// Rollout planning as the rollout controller decides it: the waves, the paths across
/// stacks, the target a version names, and the annotations that steer a rollout.
pub mod rollout {
    pub use crate::controller::rollout::stacks::newest_ready;
    pub use crate::controller::rollout::target::{ReleaseSeen, Resolved, resolve};
    pub use crate::controller::rollout::{APPROVE_ANNOTATION, RESUME_ANNOTATION};
    pub use crate::controller::stack_name_of;
    pub use crate::rollout::path::Sources;
    pub use crate::rollout::path::path;
    pub use crate::rollout::{Assignment, ClusterInfo, Hop, StackId, Target, assign_across, sources};
}

/// The pre-flight checks of a Cluster against a target release, and the evidence they read.
pub mod preflight {
    pub use crate::preflight::Evidence;
    pub use crate::preflight::helm::stored_release_apis;
    pub use crate::preflight::render::{Rendered, cluster_objects, target_renders};
    pub use crate::preflight::workload::requested_apis;
    pub use crate::rollout::preflight::{COUNTER_NOTE, PreflightResult, blocks};
}

/// The metrics' declarations, for `capstan docs metrics`.
pub mod metrics {
    pub use crate::metrics::{Census, Declared, Fleet};
}

/// The `operator` command's flags that name the operator's own limits and names.
pub mod operator {
    pub use crate::addon::cache::CAPACITY as WORKLOAD_CLUSTER_CAPACITY;
    pub use crate::shard::{lease_name, parse_key as parse_shard_key};
}
