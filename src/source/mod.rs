//! Where stack releases come from and where they are kept: the verified, crash-safe,
//! content-addressed [`cache`]. (GitHub releases, git refs and local directories follow.)
//! Knows nothing of the Kubernetes API.

pub mod cache;
