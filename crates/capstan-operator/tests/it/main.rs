//! Integration tests, one binary for the crate (each file a module).

mod addon_condition;
mod operator_api;
mod operator_leader;
mod operator_metrics;
mod operator_webhook;
mod render_store;
