//! What the ClusterAddon controller needs besides the applier: workload-cluster connections
//! ([`workload`]), kept per Cluster ([`cache`]), and the CEL wait conditions of multi-stage
//! addons ([`condition`]).

pub mod cache;
pub mod condition;
pub mod drift;
pub mod workload;
