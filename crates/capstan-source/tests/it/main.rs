//! Integration tests, one binary for the crate (each file a module).

mod github_source;
mod verify_fixtures;
