//! Byte-exact encoders and decoders Helm's pipeline relies on, shared by the template
//! functions (`toYaml`, `toJson`, `fromYaml`, …) and the chart loader (values files).
//!
//! - [`json`]: Go `encoding/json` output (`toJson`, `toPrettyJson`, `toRawJson`) and input
//!   (`fromJson`: every number a `float64`).
//! - [`toml_emit`], [`toml_load`]: BurntSushi/toml encoding and decoding (Helm's `toToml`,
//!   `fromToml`).
//! - [`yaml_emit`]: `sigs.k8s.io/yaml.Marshal` as Helm uses it (JSON round trip, then the
//!   go-yaml v2 emitter).
//! - [`yaml_load`]: go-yaml v2 (YAML 1.1) decoding, and the JSON round trip Helm applies to
//!   values files and `fromYaml`.

pub mod json;
pub mod toml_emit;
pub mod toml_load;
pub mod yaml_emit;
pub mod yaml_load;
