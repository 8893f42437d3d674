//! Integration tests, one binary for the crate (each file a module).

// Tests may unwrap and panic: a failed assumption there is a failed run (issue 34).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod github_source;
mod provenance_fixtures;
mod verify_bundle;
mod verify_dsse;
mod verify_fixtures;
mod verify_keyless;
mod verify_rekor2;
mod verify_sct;
mod verify_support;
