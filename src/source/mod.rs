//! Where stack releases come from and where they are kept: the verified, crash-safe,
//! content-addressed [`cache`] the GitHub releases client [`github`] and [`pull`] (a release into the cache). (git refs and local directories follow.)
//! Knows nothing of the Kubernetes API.

pub mod cache;
pub mod charts;
pub mod git;
pub mod github;
pub mod local;
pub mod pull;
