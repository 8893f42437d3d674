//! Integration tests, one binary for the crate (each file a module).

// Tests may unwrap and panic: a failed assumption there is a failed run (issue 34).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod addon_condition;
mod events;
mod management_cache;
mod operator_api;
mod operator_leader;
mod operator_metrics;
mod operator_webhook;
mod preflight_evidence;
mod render_store;
