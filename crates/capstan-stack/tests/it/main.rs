//! Integration tests, one binary for the crate (each file a module).

mod stack_build;
mod stack_releases;
