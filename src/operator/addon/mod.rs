//! What the ClusterAddon controller needs besides the applier: workload-cluster connections
//! ([`workload`]) and the wait conditions of multi-stage addons ([`condition`]).

pub mod condition;
pub mod workload;
