//! Cluster API Runtime SDK hooks (`hooks.runtime.cluster.x-k8s.io/v1alpha1`): [`protocol`]
//! holds the request and response types, [`decide`] the answers as pure functions over a
//! ClusterAddon's status, [`server`] the HTTPS endpoint Cluster API calls (registered by an
//! ExtensionConfig). All state lives in the ClusterAddon status, so any replica can answer.

pub mod decide;
pub mod protocol;
pub mod server;

pub use server::serve;
