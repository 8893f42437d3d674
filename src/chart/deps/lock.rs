//! `Chart.lock`: the versions `helm dependency update` chose, and the digest that tells
//! `helm dependency build` whether the lock still matches `Chart.yaml`.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use crate::chart::Dependency;
use crate::encoding::{json, yaml_emit, yaml_load};
use crate::go::value::Value;

/// One locked dependency: the chart name, its repository as Chart.yaml writes it, the version.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct LockedDependency {
    pub name: String,
    #[serde(default)]
    pub repository: String,
    #[serde(default)]
    pub version: String,
}

/// A `Chart.lock`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Lock {
    #[serde(default)]
    pub dependencies: Vec<LockedDependency>,
    #[serde(default)]
    pub digest: String,
    /// RFC 3339 time of writing, as written.
    #[serde(default)]
    pub generated: String,
}

/// Helm's refusal of a lock that does not match Chart.yaml.
pub const OUT_OF_SYNC: &str = "the lock file (Chart.lock) is out of sync with the dependencies file (Chart.yaml). Please update the dependencies with 'helm dependency update'";

impl Lock {
    /// Reads a `Chart.lock`.
    pub fn parse(text: &str) -> Result<Lock, String> {
        let value = yaml_load::load_document(text).map_err(|e| format!("Chart.lock: {e}"))?;
        let json = json::marshal(&value).map_err(|e| format!("Chart.lock: {e}"))?;
        serde_json::from_str(&json).map_err(|e| format!("Chart.lock: {e}"))
    }

    /// A new lock for `requested` (Chart.yaml's dependencies) resolved to `locked`.
    pub fn new(requested: &[Dependency], locked: Vec<LockedDependency>, generated: String) -> Lock {
        Lock {
            digest: digest(requested, &locked),
            dependencies: locked,
            generated,
        }
    }

    /// Whether the lock was made for exactly these Chart.yaml dependencies (`helm dependency
    /// build`'s check: the digest of the requested and locked lists).
    pub fn in_sync(&self, requested: &[Dependency]) -> bool {
        digest(requested, &self.dependencies) == self.digest
    }

    /// The locked version of the dependency named `name` from `repository`.
    pub fn version_of(&self, name: &str, repository: &str) -> Option<&str> {
        self.dependencies
            .iter()
            .find(|d| d.name == name && d.repository == repository)
            .map(|d| d.version.as_str())
    }

    /// The file as Helm writes it (sigs.k8s.io/yaml of its Lock struct).
    pub fn to_yaml(&self) -> String {
        let deps = self
            .dependencies
            .iter()
            .map(|d| {
                let mut m = BTreeMap::new();
                m.insert("name".to_string(), Value::from(d.name.as_str()));
                m.insert("repository".to_string(), Value::from(d.repository.as_str()));
                if !d.version.is_empty() {
                    m.insert("version".to_string(), Value::from(d.version.as_str()));
                }
                Value::map(m)
            })
            .collect();
        let mut top = BTreeMap::new();
        top.insert("dependencies".to_string(), Value::list(deps));
        top.insert("digest".to_string(), Value::from(self.digest.as_str()));
        top.insert("generated".to_string(), Value::from(self.generated.as_str()));
        // Plain strings and lists: marshaling cannot fail.
        yaml_emit::marshal(&Value::map(top)).unwrap_or_default()
    }
}

/// Helm's `HashReq`: `sha256:` + the sha256 of Go's JSON of `[requested, locked]`, each a list
/// of Helm's `Dependency` struct (fields in declaration order, empty ones left out, HTML
/// characters escaped).
pub fn digest(requested: &[Dependency], locked: &[LockedDependency]) -> String {
    let mut out = String::from("[[");
    for (i, d) in requested.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let import_values: Vec<Value> = d.import_values.iter().map(|v| v.thaw()).collect();
        let import_json = if import_values.is_empty() {
            None
        } else {
            json::marshal(&Value::list(import_values)).ok()
        };
        dependency_json(
            &mut out,
            &d.name,
            &d.version,
            &d.repository,
            &d.condition,
            &d.tags,
            d.enabled,
            import_json.as_deref(),
            &d.alias,
        );
    }
    out.push_str("],[");
    for (i, d) in locked.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        dependency_json(
            &mut out,
            &d.name,
            &d.version,
            &d.repository,
            "",
            &[],
            false,
            None,
            "",
        );
    }
    out.push_str("]]");
    format!("sha256:{}", hex(&Sha256::digest(out.as_bytes())))
}

#[allow(clippy::too_many_arguments)]
fn dependency_json(
    out: &mut String,
    name: &str,
    version: &str,
    repository: &str,
    condition: &str,
    tags: &[String],
    enabled: bool,
    import_values: Option<&str>,
    alias: &str,
) {
    let field = |out: &mut String, key: &str, value: &str| {
        out.push_str(&format!(",\"{key}\":"));
        json::write_string(out, value, true);
    };
    out.push_str("{\"name\":");
    json::write_string(out, name, true);
    if !version.is_empty() {
        field(out, "version", version);
    }
    field(out, "repository", repository);
    if !condition.is_empty() {
        field(out, "condition", condition);
    }
    if !tags.is_empty() {
        out.push_str(",\"tags\":[");
        for (i, t) in tags.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            json::write_string(out, t, true);
        }
        out.push(']');
    }
    if enabled {
        out.push_str(",\"enabled\":true");
    }
    if let Some(iv) = import_values {
        out.push_str(",\"import-values\":");
        out.push_str(iv);
    }
    if !alias.is_empty() {
        field(out, "alias", alias);
    }
    out.push('}');
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Go's `time.Time` JSON form (RFC 3339 with nanoseconds, trailing zeros dropped) of a UTC time.
pub fn rfc3339_nano(t: time::OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    let mut s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    let nanos = t.nanosecond();
    if nanos > 0 {
        let frac = format!("{nanos:09}");
        s.push('.');
        s.push_str(frac.trim_end_matches('0'));
    }
    s.push('Z');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dep(name: &str, version: &str, repository: &str, alias: &str) -> Dependency {
        Dependency {
            name: name.into(),
            version: version.into(),
            repository: repository.into(),
            alias: alias.into(),
            ..Dependency::default()
        }
    }

    fn locked(name: &str, version: &str, repository: &str) -> LockedDependency {
        LockedDependency {
            name: name.into(),
            version: version.into(),
            repository: repository.into(),
        }
    }

    /// Digests real Helm v4.2.3 wrote (`dependency_update` against loopback repositories).
    #[test]
    fn digest_is_helms() {
        let requested = [
            dep(
                "metrics-server",
                ">=3.12.0 <3.13.1",
                "http://127.0.0.1:18931/metrics-server/",
                "ms",
            ),
            dep("common", "~2.14", "http://127.0.0.1:18931/bitnami", ""),
        ];
        let locked = [
            locked(
                "metrics-server",
                "3.13.0",
                "http://127.0.0.1:18931/metrics-server/",
            ),
            locked("common", "2.14.1", "http://127.0.0.1:18931/bitnami"),
        ];
        assert_eq!(
            digest(&requested, &locked),
            "sha256:40e18d9071add7d8f5ac5fd6e78efa5d68310020dd09d6221b5d7f0b43e898e1"
        );
    }

    #[test]
    fn round_trip_and_sync() {
        let requested = [dep("common", "2.14.1", "https://charts.bitnami.com/bitnami", "")];
        let lock = Lock::new(
            &requested,
            vec![locked("common", "2.14.1", "https://charts.bitnami.com/bitnami")],
            "2026-11-25T17:55:48.259507411Z".into(),
        );
        let text = lock.to_yaml();
        assert!(text.starts_with("dependencies:\n- name: common\n  repository: https://charts.bitnami.com/bitnami\n  version: 2.14.1\ndigest: sha256:"), "{text}");
        assert!(
            text.ends_with("generated: \"2026-11-25T17:55:48.259507411Z\"\n"),
            "{text}"
        );
        let back = Lock::parse(&text).unwrap();
        assert_eq!(back, lock);
        assert!(back.in_sync(&requested));
        let changed = [dep("common", "~2.14", "https://charts.bitnami.com/bitnami", "")];
        assert!(!back.in_sync(&changed));
    }

    #[test]
    fn go_time_format() {
        let t = time::OffsetDateTime::from_unix_timestamp_nanos(1_764_093_348_259_507_400).unwrap();
        assert_eq!(rfc3339_nano(t), "2025-11-25T17:55:48.2595074Z");
        let t = time::OffsetDateTime::from_unix_timestamp(0).unwrap();
        assert_eq!(rfc3339_nano(t), "1970-01-01T00:00:00Z");
    }
}
