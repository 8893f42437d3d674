//! Integration tests, one binary for the crate (each file a module).

mod chart_labels;
mod client_http2;
mod kube_smoke;
