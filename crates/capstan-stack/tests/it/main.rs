//! Integration tests, one binary for the crate (each file a module).

// Tests may unwrap and panic: a failed assumption there is a failed run (issue 34).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod capi_shapes;
mod capi_to_v1beta2;
mod stack_build;
mod stack_releases;
