//! capstan: a release manager for Cluster API cluster stacks.
//!
//! Module map (see `docs/architecture.md`):
//! - [`template`]: the Go `text/template` engine with Go value semantics (no Helm, no Kubernetes).
//! - [`cli`]: argument parsing and output formatting for the `capstan` binary.

pub mod chart;
pub mod cli;
pub mod template;
