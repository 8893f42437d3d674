//! OCI registries: a registry client for the distribution API v2 ([`client`], with its
//! [`auth`]; its timeouts are the source layer's [`NetworkTimeouts`]), the manifest types ([`manifest`]), csctl's layout of a
//! cluster-stack release ([`layout`]) and releases pulled from and pushed to a registry
//! ([`release`]), their cosign signatures ([`signature`]) and copies for an air gap ([`mirror`]). The client knows nothing of cluster stacks: chart dependencies from `oci://`
//! repositories use it too.

pub mod auth;
pub mod client;
pub mod layout;
pub mod manifest;
pub mod mirror;
pub mod release;
pub mod signature;

pub use crate::net::NetworkTimeouts;
pub use auth::Credentials;
pub use client::{Client, Config, OciError};
pub use release::OciRepo;
