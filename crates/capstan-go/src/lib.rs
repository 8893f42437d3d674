//! Go's runtime model, the ground floor every other layer stands on: what a Go program
//! observes of its values, how it prints them and how it keeps time. Helm's output depends on
//! all three, so the codecs (`encoding`), the template engine (`template`) and the charts
//! (`chart`) share one model here. Knows nothing of templates, charts or Kubernetes.
//!
//! - [`value`]: Go values with their static types, typed nils, byte strings, reference
//!   semantics, and objects with fields and methods (`value::cycles` reclaims maps that
//!   contain themselves).
//! - [`fmt`]: Go's `fmt`/`strconv` printing and quoting.
//! - [`time`]: `time.Time`, zones, durations, layout-based formatting and parsing.

pub mod fmt;
pub mod time;
pub mod value;
