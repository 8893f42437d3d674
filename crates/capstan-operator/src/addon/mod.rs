//! What the ClusterAddon controller needs besides the applier: workload-cluster connections
//! ([`workload`]) and the CEL wait conditions of multi-stage addons ([`condition`]).

pub mod condition;
pub mod workload;
