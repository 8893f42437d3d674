//! go-yaml v2 (YAML 1.1) decoding (placeholder).
