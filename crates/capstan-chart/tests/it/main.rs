//! Integration tests, one binary for the crate (each file a module).

// Tests may unwrap and panic: a failed assumption there is a failed run (issue 34).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod chart_load;
mod compiled_chart;
mod corpus_encoding;
mod helm_conformance;
mod render_stream;
mod template_vectors;
mod values_variants;
mod yaml_load_vectors;
