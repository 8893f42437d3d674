//! What the ClusterAddon controller needs besides the applier: workload-cluster connections
//! ([`workload`]), kept per Cluster ([`cache`]), the CEL wait conditions of multi-stage
//! addons ([`condition`]), drift watches in workload clusters ([`drift`]) and the values users
//! give for the addon charts ([`user_values`]).

pub mod cache;
pub mod condition;
pub mod drift;
pub mod user_values;
pub mod workload;
