//! capstan: a release manager for Cluster API cluster stacks.
//!
//! Module map (see `docs/architecture.md`):
//! - [`go`]: Go's runtime model — values, `fmt`/`strconv` printing, time — the ground floor.
//! - [`template`]: the Go `text/template` engine with Go value semantics (no Helm, no Kubernetes).
//! - [`encoding`]: byte-exact JSON/YAML encoders and the YAML 1.1 loader.
//! - [`kinds`]: Helm's install order of Kubernetes kinds, shared by `chart` and `apply`.
//! - [`chart`]: Helm charts: loading, values, dependencies, rendering, manifests.
//! - [`stack`]: cluster stacks: versions, names, release layout, runtime values, whole-release render.
//! - [`apply`]: server-side apply of manifests: order, status, inventory/prune, diff, health.
//! - [`operator`]: the `clusterstack.x-k8s.io` API types, their CRDs and webhook rules.
//! - [`cli`]: argument parsing and output formatting for the `capstan` binary.

#![forbid(unsafe_code)]

pub mod cli;
