//! The Go objects Helm hands to templates: `.Files` (`engine.files`) and `.Capabilities`
//! (`*common.Capabilities` with `common.KubeVersion`, `common.VersionSet` and the build info).

use std::any::Any;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use base64::Engine as _;

use crate::glob::Glob;
use crate::kube_version::{KubeVersionError, parse_generic};
use capstan_go::fmt as gofmt;
use capstan_go::value::{GoType, List, ListKind, Method, Object, Value, go_lossy};
use capstan_template::funcs::{arg_str, helm::to_yaml_trimmed};

/// A chart's files by name; shared by every render of the chart, on any thread.
pub type FileMap = BTreeMap<String, Arc<[u8]>>;

/// `.Files`: a chart's non-template files (`map[string][]byte` with methods).
#[derive(Debug, Clone, Default)]
pub struct Files {
    files: Arc<FileMap>,
}

impl Files {
    pub fn new(files: Arc<FileMap>) -> Files {
        Files { files }
    }

    fn get(&self, name: &str) -> Option<&Arc<[u8]>> {
        self.files.get(name)
    }

    fn glob(&self, pattern: &str) -> Files {
        // Like Helm: a pattern that does not compile matches everything.
        let glob = Glob::compile(pattern).or_else(|_| Glob::compile("**"));
        let selected = self
            .files
            .iter()
            .filter(|(name, _)| glob.as_ref().is_ok_and(|g| g.matches(name)))
            .map(|(k, v)| (k.clone(), Arc::clone(v)))
            .collect();
        Files {
            files: Arc::new(selected),
        }
    }

    /// The files as a map of base name → content (later names win, like Go's map writes).
    fn by_base_name(&self, encode: impl Fn(&[u8]) -> String) -> Value {
        let mut map = BTreeMap::new();
        for (name, data) in self.files.iter() {
            let base = name.rsplit('/').next().unwrap_or(name);
            map.insert(base.to_string(), Value::from(encode(data)));
        }
        Value::Map(capstan_go::value::Map::new(
            capstan_go::value::MapKind::String,
            map,
        ))
    }

    fn lines(&self, name: &str) -> Value {
        let Some(data) = self.get(name) else {
            return Value::string_list(Vec::new());
        };
        // Go splits `string(data)`: a line of binary data is a byte string.
        let text = data.strip_suffix(b"\n").unwrap_or(data);
        Value::List(List::new(
            ListKind::String,
            text.split(|&b| b == b'\n').map(Value::from_go_bytes).collect(),
        ))
    }
}

impl Object for Files {
    fn type_name(&self) -> String {
        "engine.files".into()
    }

    fn kind(&self) -> &'static str {
        "map"
    }

    fn field(&self, _name: &str) -> Option<Value> {
        None
    }

    fn method(&self, name: &str) -> Option<Method> {
        let this = self.clone();
        let f = match name {
            "Get" => Method::new(&[GoType::String], move |args| {
                // Go's `string(data)`: binary content stays bytes (a byte string).
                Ok(this
                    .get(arg_str(&args[0]))
                    .map_or_else(|| Value::from(""), |d| Value::from_go_bytes(&d[..])))
            }),
            "GetBytes" => Method::new(&[GoType::String], move |args| {
                Ok(Value::Bytes(
                    this.get(arg_str(&args[0]))
                        .map_or_else(|| Rc::from(Vec::new()), |d| Rc::from(&d[..])),
                ))
            }),
            "Glob" => Method::new(&[GoType::String], move |args| {
                Ok(Value::Object(Rc::new(this.glob(arg_str(&args[0])))))
            }),
            "AsConfig" => Method::new(&[], move |_| {
                if this.files.is_empty() {
                    return Ok(Value::from(""));
                }
                Ok(Value::from(to_yaml_trimmed(
                    &this.by_base_name(|d| go_lossy(d).into_owned()),
                )))
            }),
            "AsSecrets" => Method::new(&[], move |_| {
                if this.files.is_empty() {
                    return Ok(Value::from(""));
                }
                let encoded = this.by_base_name(|d| base64::engine::general_purpose::STANDARD.encode(d));
                Ok(Value::from(to_yaml_trimmed(&encoded)))
            }),
            "Lines" => Method::new(&[GoType::String], move |args| Ok(this.lines(arg_str(&args[0])))),
            _ => return None,
        };
        Some(f)
    }

    fn format(&self) -> String {
        gofmt::format_value(&self.to_data_bytes())
    }

    fn to_data(&self) -> Value {
        self.to_data_bytes()
    }

    fn entries(&self) -> Option<Vec<(String, Value)>> {
        Some(
            self.files
                .iter()
                .map(|(k, v)| (k.clone(), Value::Bytes(Rc::from(&v[..]))))
                .collect(),
        )
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Files {
    fn to_data_bytes(&self) -> Value {
        Value::map(
            self.files
                .iter()
                .map(|(k, v)| (k.clone(), Value::Bytes(Rc::from(&v[..]))))
                .collect(),
        )
    }
}

/// The Kubernetes version templates see (`common.KubeVersion`).
#[derive(Debug, Clone)]
pub struct KubeVersion {
    /// As given (`v1.29.3-gke.100`): `.Version` and `.GitVersion`.
    pub version: String,
    /// `v` and the version's numbers (`v1.30`, `v1.29.3`): what it prints as.
    pub normalized: String,
    pub major: String,
    pub minor: String,
}

/// Helm v4.2.3's default: the Kubernetes version of its client libraries.
pub const DEFAULT_KUBE_VERSION: &str = "v1.36.0";

impl KubeVersion {
    /// [`DEFAULT_KUBE_VERSION`].
    pub fn helm_default() -> KubeVersion {
        KubeVersion {
            version: DEFAULT_KUBE_VERSION.into(),
            normalized: DEFAULT_KUBE_VERSION.into(),
            major: "1".into(),
            minor: "36".into(),
        }
    }

    /// Parses `--kube-version` like Helm's `ParseKubeVersion` (see
    /// [`crate::kube_version`]): `v1.29.3-gke.100`, `1.30`, `1.2.3.4`.
    pub fn parse(text: &str) -> Result<KubeVersion, KubeVersionError> {
        let parsed = parse_generic(text)?;
        let version = if text.starts_with('v') {
            text.to_string()
        } else {
            format!("v{text}")
        };
        Ok(KubeVersion {
            version,
            normalized: parsed.normalized(),
            major: parsed.components[0].to_string(),
            minor: parsed.components[1].to_string(),
        })
    }
}

impl KubeVersion {
    /// A deep copy: the unexported normalized version comes back empty.
    fn copied(&self) -> KubeVersion {
        KubeVersion {
            normalized: String::new(),
            ..self.clone()
        }
    }
}

impl Object for KubeVersion {
    fn deep_copy(&self) -> Option<Value> {
        Some(Value::Object(Rc::new(self.copied())))
    }

    fn pointer_receiver(&self, name: &str) -> bool {
        matches!(name, "GitVersion" | "String")
    }

    fn type_name(&self) -> String {
        "common.KubeVersion".into()
    }

    fn kind(&self) -> &'static str {
        "struct"
    }

    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "Version" | "GitVersion" => Some(Value::from(self.version.as_str())),
            "Major" => Some(Value::from(self.major.as_str())),
            "Minor" => Some(Value::from(self.minor.as_str())),
            "String" => Some(Value::from(self.normalized.as_str())),
            _ => None,
        }
    }

    // `format`: the struct layout from `fmt_fields` (`String()` has a pointer receiver, so
    // copies print field by field).

    fn fmt_fields(&self) -> Option<Vec<(&'static str, Value)>> {
        Some(vec![
            ("Version", Value::from(self.version.as_str())),
            ("normalizedVersion", Value::from(self.normalized.as_str())),
            ("Major", Value::from(self.major.as_str())),
            ("Minor", Value::from(self.minor.as_str())),
        ])
    }

    /// `String()` prints the normalized version, or the version as given when there is none
    /// (a deep copy loses the unexported normalized form).
    fn addressable_stringer(&self) -> Option<String> {
        Some(if self.normalized.is_empty() {
            self.version.clone()
        } else {
            self.normalized.clone()
        })
    }

    fn to_data(&self) -> Value {
        Value::map(BTreeMap::from([
            ("Version".to_string(), Value::from(self.version.as_str())),
            ("Major".to_string(), Value::from(self.major.as_str())),
            ("Minor".to_string(), Value::from(self.minor.as_str())),
        ]))
    }

    /// `encoding/json` keeps the struct's field order: Version, Major, Minor.
    fn json_fields(&self) -> Option<Vec<(String, Value)>> {
        Some(vec![
            ("Version".to_string(), Value::from(self.version.as_str())),
            ("Major".to_string(), Value::from(self.major.as_str())),
            ("Minor".to_string(), Value::from(self.minor.as_str())),
        ])
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The group/versions the cluster serves (`common.VersionSet`, a `[]string` with `Has`).
#[derive(Debug, Clone)]
pub struct VersionSet {
    pub versions: Rc<Vec<String>>,
}

impl Object for VersionSet {
    fn type_name(&self) -> String {
        "common.VersionSet".into()
    }

    fn kind(&self) -> &'static str {
        "slice"
    }

    fn field(&self, _name: &str) -> Option<Value> {
        None
    }

    fn method(&self, name: &str) -> Option<Method> {
        let versions = Rc::clone(&self.versions);
        (name == "Has").then(|| {
            Method::new(&[GoType::String], move |args| {
                let wanted = arg_str(&args[0]);
                Ok(Value::Bool(versions.iter().any(|v| v == wanted)))
            })
        })
    }

    fn format(&self) -> String {
        format!("[{}]", self.versions.join(" "))
    }

    fn to_data(&self) -> Value {
        Value::List(capstan_go::value::List::new(
            ListKind::String,
            self.versions.iter().map(|v| Value::from(v.as_str())).collect(),
        ))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The API group/versions Helm v4.2.3 assumes when it has no cluster to ask.
pub const DEFAULT_API_VERSIONS: &[&str] = &[
    "v1",
    "admissionregistration.k8s.io/v1",
    "admissionregistration.k8s.io/v1alpha1",
    "admissionregistration.k8s.io/v1beta1",
    "internal.apiserver.k8s.io/v1alpha1",
    "apps/v1",
    "apps/v1beta1",
    "apps/v1beta2",
    "authentication.k8s.io/v1",
    "authentication.k8s.io/v1alpha1",
    "authentication.k8s.io/v1beta1",
    "authorization.k8s.io/v1",
    "authorization.k8s.io/v1beta1",
    "autoscaling/v1",
    "autoscaling/v2",
    "batch/v1",
    "batch/v1beta1",
    "certificates.k8s.io/v1",
    "certificates.k8s.io/v1beta1",
    "certificates.k8s.io/v1alpha1",
    "coordination.k8s.io/v1alpha2",
    "coordination.k8s.io/v1beta1",
    "coordination.k8s.io/v1",
    "discovery.k8s.io/v1",
    "discovery.k8s.io/v1beta1",
    "events.k8s.io/v1",
    "events.k8s.io/v1beta1",
    "extensions/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "flowcontrol.apiserver.k8s.io/v1beta3",
    "networking.k8s.io/v1",
    "networking.k8s.io/v1beta1",
    "node.k8s.io/v1",
    "node.k8s.io/v1alpha1",
    "node.k8s.io/v1beta1",
    "policy/v1",
    "policy/v1beta1",
    "rbac.authorization.k8s.io/v1",
    "rbac.authorization.k8s.io/v1beta1",
    "rbac.authorization.k8s.io/v1alpha1",
    "resource.k8s.io/v1",
    "resource.k8s.io/v1beta2",
    "resource.k8s.io/v1beta1",
    "resource.k8s.io/v1alpha3",
    "scheduling.k8s.io/v1alpha2",
    "scheduling.k8s.io/v1beta1",
    "scheduling.k8s.io/v1",
    "storage.k8s.io/v1beta1",
    "storage.k8s.io/v1",
    "storage.k8s.io/v1alpha1",
    "storagemigration.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1",
];

/// `.Capabilities`.
#[derive(Debug, Clone)]
pub struct Capabilities {
    pub kube_version: KubeVersion,
    pub api_versions: VersionSet,
}

impl Capabilities {
    /// Helm's defaults plus extra API versions (`--api-versions`).
    pub fn new(kube_version: KubeVersion, extra_api_versions: &[String]) -> Capabilities {
        let mut versions: Vec<String> = DEFAULT_API_VERSIONS.iter().map(|s| s.to_string()).collect();
        versions.extend(extra_api_versions.iter().cloned());
        Capabilities {
            kube_version,
            api_versions: VersionSet {
                versions: Rc::new(versions),
            },
        }
    }

    fn helm_version() -> Value {
        Value::map(BTreeMap::from([
            ("version".to_string(), Value::from("v4.2")),
            ("go_version".to_string(), Value::from("go1.26.6")),
            ("kube_client_version".to_string(), Value::from("v1.36")),
        ]))
    }
}

/// `.Capabilities.HelmVersion` (Helm's `version.BuildInfo`).
#[derive(Debug, Clone)]
struct BuildInfo;

impl Object for BuildInfo {
    fn type_name(&self) -> String {
        "version.BuildInfo".into()
    }

    fn kind(&self) -> &'static str {
        "struct"
    }

    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "Version" => Some(Value::from("v4.2")),
            "GitCommit" | "GitTreeState" => Some(Value::from("")),
            "GoVersion" => Some(Value::from("go1.26.6")),
            "KubeClientVersion" => Some(Value::from("v1.36")),
            _ => None,
        }
    }

    fn fmt_fields(&self) -> Option<Vec<(&'static str, Value)>> {
        Some(
            [
                "Version",
                "GitCommit",
                "GitTreeState",
                "GoVersion",
                "KubeClientVersion",
            ]
            .into_iter()
            .map(|name| (name, self.field(name).unwrap_or(Value::Nil)))
            .collect(),
        )
    }

    fn to_data(&self) -> Value {
        Capabilities::helm_version()
    }

    /// `encoding/json` in field order, by the JSON tags; git commit and tree state are
    /// `omitempty` and empty.
    fn json_fields(&self) -> Option<Vec<(String, Value)>> {
        Some(vec![
            ("version".to_string(), Value::from("v4.2")),
            ("go_version".to_string(), Value::from("go1.26.6")),
            ("kube_client_version".to_string(), Value::from("v1.36")),
        ])
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Object for Capabilities {
    fn deep_copy(&self) -> Option<Value> {
        Some(Value::Object(Rc::new(Capabilities {
            kube_version: self.kube_version.copied(),
            api_versions: self.api_versions.clone(),
        })))
    }

    fn type_name(&self) -> String {
        "*common.Capabilities".into()
    }

    fn kind(&self) -> &'static str {
        "ptr"
    }

    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "KubeVersion" => Some(Value::Object(Rc::new(self.kube_version.clone()))),
            "APIVersions" => Some(Value::Object(Rc::new(self.api_versions.clone()))),
            "HelmVersion" => Some(Value::Object(Rc::new(BuildInfo))),
            _ => None,
        }
    }

    fn fmt_fields(&self) -> Option<Vec<(&'static str, Value)>> {
        Some(
            ["KubeVersion", "APIVersions", "HelmVersion"]
                .into_iter()
                .map(|name| (name, self.field(name).unwrap_or(Value::Nil)))
                .collect(),
        )
    }

    fn to_data(&self) -> Value {
        Value::map(BTreeMap::from([
            ("KubeVersion".to_string(), self.kube_version.to_data()),
            ("APIVersions".to_string(), self.api_versions.to_data()),
            ("HelmVersion".to_string(), Capabilities::helm_version()),
        ]))
    }

    /// `encoding/json` keeps the struct's field order (the fields encode themselves).
    fn json_fields(&self) -> Option<Vec<(String, Value)>> {
        Some(
            ["KubeVersion", "APIVersions", "HelmVersion"]
                .into_iter()
                .map(|name| (name.to_string(), self.field(name).unwrap_or(Value::Nil)))
                .collect(),
        )
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    fn call(files: &Files, method: &str, name: &str) -> Value {
        match files.method(method) {
            Some(f) => (f.call)(&[Value::from(name)]).unwrap_or(Value::Nil),
            None => Value::Nil,
        }
    }

    #[test]
    fn binary_files_read_as_go_byte_strings() {
        let files = Files::new(Arc::new(BTreeMap::from([
            (
                "bin".to_string(),
                Arc::from(&[0xff, b'a', b'\n', 0xc3, b'\n'][..]),
            ),
            ("txt".to_string(), Arc::from("hé\n".as_bytes())),
        ])));
        let got = call(&files, "Get", "bin");
        assert!(matches!(&got, Value::ByteString(b) if b[..] == [0xff, b'a', b'\n', 0xc3, b'\n']));
        assert_eq!(got.type_name(), "string");
        assert_eq!(call(&files, "Get", "txt").as_str(), Some("hé\n"));
        assert_eq!(call(&files, "Get", "missing").as_str(), Some(""));
        let lines = call(&files, "Lines", "bin");
        let items: Vec<Option<&[u8]>> = lines
            .as_list()
            .map(|l| l.items.iter().map(Value::go_str_bytes).collect())
            .unwrap_or_default();
        assert_eq!(items, [Some(&[0xff, b'a'][..]), Some(&[0xc3][..])]);
        assert_eq!(lines.type_name(), "[]string");
    }
}
