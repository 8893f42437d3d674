//! What the ClusterAddon controller needs besides the applier: workload-cluster connections
//! ([`workload`]), the CEL wait conditions of multi-stage addons ([`condition`]) and the
//! values users give for the addon charts ([`user_values`]).

pub mod condition;
pub mod user_values;
pub mod workload;
