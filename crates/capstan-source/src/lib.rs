//! Where stack releases come from and where they are kept: the verified, crash-safe,
//! content-addressed [`cache`] (and what its GC keeps, [`retention`]), the GitHub releases
//! client [`github`], [`pull`] (a release into the cache), [`git`] refs, [`local`]
//! directories, OCI registries ([`oci`]) and chart dependencies from Helm repositories
//! ([`charts`]); [`net`] holds the network timeouts every client
//! here (GitHub, git, OCI, Helm repositories) takes.
//! Knows nothing of the Kubernetes API.

pub mod cache;
pub mod charts;
pub mod git;
pub mod github;
pub mod local;
pub mod net;
pub mod oci;
pub mod pull;
pub mod retention;
pub mod verify;
