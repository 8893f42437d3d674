//! Integration tests, one binary for the crate (each file a module).

mod kube_smoke;
