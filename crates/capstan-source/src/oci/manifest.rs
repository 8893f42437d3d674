//! The OCI image manifest and descriptors, as far as a release needs them, and the media
//! types a registry is asked for.

pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
pub const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
pub const OCI_EMPTY: &str = "application/vnd.oci.empty.v1+json";
/// `org.opencontainers.image.title`: a layer's file name.
pub const TITLE: &str = "org.opencontainers.image.title";
pub const CREATED: &str = "org.opencontainers.image.created";

/// The `Accept` header of a manifest request: every manifest kind a registry may hold under
/// a tag, so it answers with what it has rather than `404`/converting.
pub fn manifest_accept() -> String {
    [OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_LIST].join(", ")
}

/// A content descriptor. Field order is the one csctl (oras) writes.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub media_type: String,
    pub digest: String,
    pub size: u64,
    /// Embedded content (base64), e.g. the empty config's `e30=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
}

impl Descriptor {
    /// The lower-case hex of a `sha256:` digest; `None` for another algorithm or a malformed one.
    pub fn sha256(&self) -> Option<&str> {
        sha256_hex(&self.digest)
    }

    pub fn title(&self) -> Option<&str> {
        self.annotations.as_ref()?.get(TITLE)
    }
}

/// The hex of `sha256:<64 lower-case hex>`.
pub fn sha256_hex(digest: &str) -> Option<&str> {
    let hex = digest.strip_prefix("sha256:")?;
    (hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))).then_some(hex)
}

/// An image manifest (OCI or Docker v2: the same shape).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageManifest {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    pub config: Descriptor,
    #[serde(default)]
    pub layers: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
}

/// Annotations in the order they were written: csctl's counterpart writes a manifest's
/// `kubernetesVersion`, `hash`, `created` in that order, and a byte-identical manifest (the same
/// digest) needs the same order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Annotations(pub Vec<(String, String)>);

impl Annotations {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

impl serde::Serialize for Annotations {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> serde::Deserialize<'de> for Annotations {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Annotations;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of strings")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Annotations, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, String>()? {
                    out.push((k, v));
                }
                Ok(Annotations(out))
            }
        }
        d.deserialize_map(Visit)
    }
}
