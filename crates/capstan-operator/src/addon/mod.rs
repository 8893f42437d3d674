//! What the ClusterAddon controller needs besides the applier: workload-cluster connections
//! ([`workload`]), kept per Cluster ([`cache`]), the CEL wait conditions of multi-stage
//! addons ([`condition`]) and the values users give for the addon charts ([`user_values`]).
//! Their drift watches are [`crate::drift`]'s, shared with the ClusterStackRelease controller.

pub mod cache;
pub mod condition;
pub mod user_values;
pub mod workload;
