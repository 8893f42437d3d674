//! go-yaml v2 emitter as `sigs.k8s.io/yaml.Marshal` drives it (placeholder).
