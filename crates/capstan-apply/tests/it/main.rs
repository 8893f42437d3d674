//! Integration tests, one binary for the crate (each file a module).

// Tests may unwrap and panic: a failed assumption there is a failed run (issue 34).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod chart_labels;
mod client_http2;
mod kube_smoke;
mod owners;
mod request_counts;
