//! `Chart.yaml`: the chart's metadata, read the way Helm v4.2.3 reads it and validated with
//! its rules and messages.
//!
//! Helm decodes Chart.yaml with `sigs.k8s.io/yaml` into a struct of string fields: the YAML
//! becomes JSON first, and scalars headed for a string field are converted on the way
//! (`appVersion: 1.10` → `"1.1"`, floats with 32-bit precision: `1.123456789` →
//! `"1.1234568"`, `1e7` → `"1e+07"`, `true` → `"true"`). Then Go's `encoding/json` fills
//! the struct: unknown keys are ignored, keys match fields case-insensitively, and a wrong
//! shape is an error naming the field. All verified against real Helm.

use std::collections::BTreeMap;

/// The fields of `Chart.yaml` (Helm's `chart.Metadata`).
#[derive(Debug, Clone, Default)]
pub struct Metadata {
    pub api_version: String,
    pub name: String,
    pub version: String,
    pub kube_version: String,
    pub description: String,
    pub chart_type: String,
    pub keywords: Vec<String>,
    pub home: String,
    pub sources: Vec<String>,
    pub dependencies: Vec<Dependency>,
    pub maintainers: Vec<Maintainer>,
    pub icon: String,
    pub app_version: String,
    pub deprecated: bool,
    /// `None` when Chart.yaml has no `annotations` (prints as null in `.Chart`).
    pub annotations: Option<BTreeMap<String, String>>,
    pub condition: String,
    pub tags: String,
}

/// One entry of `dependencies:`.
#[derive(Debug, Clone, Default)]
pub struct Dependency {
    pub name: String,
    pub version: String,
    pub repository: String,
    pub condition: String,
    pub tags: Vec<String>,
    pub enabled: bool,
    /// `import-values` entries as written (strings or `{child, parent}` maps).
    pub import_values: Vec<capstan_go::value::frozen::Frozen>,
    pub alias: String,
}

/// One entry of `maintainers:`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Maintainer {
    pub name: String,
    pub email: String,
    pub url: String,
}

use capstan_encoding::yaml_load::{self, YamlNode};
use capstan_go::value::Value;

/// Why `Chart.yaml` or `requirements.yaml` could not be decoded (Helm's wording, which the
/// loader prefixes with `cannot load <file>: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("error converting YAML to JSON: {0}")]
    Yaml(String),
    #[error("error unmarshaling JSON: while decoding JSON: json: {0}")]
    Shape(String),
}

/// Why metadata is invalid; the text is Helm's (`validation: …`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("validation: {0}")]
pub struct ValidationError(pub String);

/// Decoded metadata before validation (null list entries are only an error once validated,
/// and `requirements.yaml` may still be decoded on top).
#[derive(Debug, Clone, Default)]
pub struct ChartYaml {
    pub metadata: Metadata,
    null_maintainer: bool,
    null_dependency: bool,
}

impl ChartYaml {
    /// Decodes YAML text on top of what is there, like Go's `yaml.Unmarshal` into an existing
    /// struct: keys present replace fields, others are kept.
    pub fn decode(&mut self, text: &str) -> Result<(), DecodeError> {
        let doc = first_yaml_document(text).map_err(DecodeError::Yaml)?;
        match &doc {
            Value::Nil => Ok(()),
            Value::Map(m) => self.fill(&m.snapshot()),
            other => Err(DecodeError::Shape(format!(
                "cannot unmarshal {} into Go value of type v2.Metadata",
                json_kind(other)
            ))),
        }
    }

    fn fill(&mut self, entries: &[(String, Value)]) -> Result<(), DecodeError> {
        const FIELDS: &[&str] = &[
            "name",
            "home",
            "sources",
            "version",
            "description",
            "keywords",
            "maintainers",
            "icon",
            "apiVersion",
            "condition",
            "tags",
            "appVersion",
            "deprecated",
            "annotations",
            "kubeVersion",
            "dependencies",
            "type",
        ];
        let md = &mut self.metadata;
        // Entries come in byte order, like the JSON object sigs.k8s.io/yaml builds; a later
        // key matching the same field (case-insensitively) overwrites an earlier one.
        for (key, v) in entries {
            let Some(field) = match_field(FIELDS, key) else {
                continue;
            };
            let at = |f: &str| format!("Metadata.{f}");
            match field {
                "name" => set_string(&mut md.name, v, &at(field))?,
                "home" => set_string(&mut md.home, v, &at(field))?,
                "sources" => set_strings(&mut md.sources, v, &at(field))?,
                "version" => set_string(&mut md.version, v, &at(field))?,
                "description" => set_string(&mut md.description, v, &at(field))?,
                "keywords" => set_strings(&mut md.keywords, v, &at(field))?,
                "icon" => set_string(&mut md.icon, v, &at(field))?,
                "apiVersion" => set_string(&mut md.api_version, v, &at(field))?,
                "condition" => set_string(&mut md.condition, v, &at(field))?,
                "tags" => set_string(&mut md.tags, v, &at(field))?,
                "appVersion" => set_string(&mut md.app_version, v, &at(field))?,
                "kubeVersion" => set_string(&mut md.kube_version, v, &at(field))?,
                "type" => set_string(&mut md.chart_type, v, &at(field))?,
                "deprecated" => set_bool(&mut md.deprecated, v, &at(field))?,
                "annotations" => set_annotations(&mut md.annotations, v)?,
                "maintainers" => {
                    let items = list_of(v, "Metadata.maintainers", "[]*v2.Maintainer")?;
                    md.maintainers.clear();
                    self.null_maintainer = false;
                    for item in items {
                        match item {
                            Value::Nil => self.null_maintainer = true,
                            Value::Map(m) => md.maintainers.push(maintainer(&m.snapshot())?),
                            other => return Err(type_error(&other, "Metadata.maintainers", "v2.Maintainer")),
                        }
                    }
                }
                "dependencies" => {
                    let items = list_of(v, "Metadata.dependencies", "[]*v2.Dependency")?;
                    md.dependencies.clear();
                    self.null_dependency = false;
                    for item in items {
                        match item {
                            Value::Nil => self.null_dependency = true,
                            Value::Map(m) => md.dependencies.push(dependency(&m.snapshot())?),
                            other => {
                                return Err(type_error(&other, "Metadata.dependencies", "v2.Dependency"));
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Helm's `Metadata.Validate`: sanitizes strings, then checks required fields, semver,
    /// type, list entries and dependency aliases.
    pub fn validate(self) -> Result<Metadata, ValidationError> {
        let mut md = self.metadata;
        for s in [
            &mut md.name,
            &mut md.description,
            &mut md.home,
            &mut md.icon,
            &mut md.condition,
            &mut md.tags,
            &mut md.app_version,
            &mut md.kube_version,
        ] {
            *s = sanitize(s);
        }
        for s in md.sources.iter_mut().chain(md.keywords.iter_mut()) {
            *s = sanitize(s);
        }
        let fail = |msg: String| Err(ValidationError(msg));
        if md.api_version.is_empty() {
            return fail("chart.metadata.apiVersion is required".into());
        }
        if md.name.is_empty() {
            return fail("chart.metadata.name is required".into());
        }
        if md.name.contains('/') || md.name.ends_with('/') {
            return fail(format!("chart.metadata.name {} is invalid", go_quote(&md.name)));
        }
        if md.version.is_empty() {
            return fail("chart.metadata.version is required".into());
        }
        if !is_valid_semver(&md.version) {
            return fail(format!(
                "chart.metadata.version {} is invalid",
                go_quote(&md.version)
            ));
        }
        if !matches!(md.chart_type.as_str(), "" | "application" | "library") {
            return fail("chart.metadata.type must be application or library".into());
        }
        if self.null_maintainer {
            return fail("maintainers must not contain empty or null nodes".into());
        }
        for m in &mut md.maintainers {
            m.name = sanitize(&m.name);
            m.email = sanitize(&m.email);
            m.url = sanitize(&m.url);
        }
        if self.null_dependency {
            return fail("dependencies must not contain empty or null nodes".into());
        }
        let mut seen = std::collections::BTreeSet::new();
        for d in &mut md.dependencies {
            d.name = sanitize(&d.name);
            d.version = sanitize(&d.version);
            d.repository = sanitize(&d.repository);
            d.condition = sanitize(&d.condition);
            for t in &mut d.tags {
                *t = sanitize(t);
            }
            let alias_ok = d
                .alias
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !alias_ok {
                return fail(format!(
                    "dependency {} has disallowed characters in the alias",
                    go_quote(&d.name)
                ));
            }
            let key = if d.alias.is_empty() {
                d.name.clone()
            } else {
                d.alias.clone()
            };
            if !seen.insert(key.clone()) {
                return fail(format!(
                    "more than one dependency with name or alias {}",
                    go_quote(&key)
                ));
            }
        }
        Ok(md)
    }
}

/// Checks a `Chart.lock`/`requirements.lock` the way Helm's load reads it (into its `Lock`
/// struct): syntax errors and a non-mapping document fail the load; the content is unused.
pub fn check_lock(text: &str) -> Result<(), DecodeError> {
    match first_yaml_document(text).map_err(DecodeError::Yaml)? {
        Value::Nil | Value::Map(_) => Ok(()),
        other => Err(DecodeError::Shape(format!(
            "cannot unmarshal {} into Go value of type v2.Lock",
            json_kind(&other)
        ))),
    }
}

/// The first YAML document of `text` as a value with YAML's typing kept (ints stay ints,
/// so `version: 12345678` is not float-formatted): the one place metadata parsing depends
/// on the YAML loader. Map keys become strings the way sigs.k8s.io/yaml converts them.
fn first_yaml_document(text: &str) -> Result<Value, String> {
    let node = yaml_load::parse_yaml(text).map_err(|e| e.to_string())?;
    typed_value(&node)
}

fn typed_value(node: &YamlNode) -> Result<Value, String> {
    // Deeply nested input must not overflow the stack.
    stacker::maybe_grow(64 * 1024, 4 * 1024 * 1024, || typed_value_inner(node))
}

fn typed_value_inner(node: &YamlNode) -> Result<Value, String> {
    Ok(match node {
        YamlNode::Null => Value::Nil,
        YamlNode::Bool(b) => Value::Bool(*b),
        YamlNode::Int(i) => Value::Int(*i),
        YamlNode::Uint(u) => Value::from(u.to_string()),
        YamlNode::Float(f) => Value::Float(*f),
        YamlNode::Str(s) => Value::from(s.as_str()),
        YamlNode::Seq(items) => Value::list(items.iter().map(typed_value).collect::<Result<_, _>>()?),
        YamlNode::Map(entries) => {
            let mut map = BTreeMap::new();
            for (k, v) in entries {
                let key = match k {
                    YamlNode::Float(f) => format_float32_g(*f),
                    other => other
                        .go_string()
                        .ok_or_else(|| format!("unsupported map key of type: {}", other.go_type()))?,
                };
                map.insert(key, typed_value(v)?);
            }
            Value::map(map)
        }
    })
}

/// Go `encoding/json` field matching: exact name first, then case-insensitive.
fn match_field(fields: &[&'static str], key: &str) -> Option<&'static str> {
    fields
        .iter()
        .find(|f| **f == key)
        .or_else(|| {
            fields
                .iter()
                .find(|f| f.eq_ignore_ascii_case(key) || f.to_lowercase() == key.to_lowercase())
        })
        .copied()
}

fn maintainer(entries: &[(String, Value)]) -> Result<Maintainer, DecodeError> {
    let mut m = Maintainer::default();
    for (key, v) in entries {
        match match_field(&["name", "email", "url"], key) {
            Some("name") => set_string(&mut m.name, v, "Maintainer.maintainers.name")?,
            Some("email") => set_string(&mut m.email, v, "Maintainer.maintainers.email")?,
            Some("url") => set_string(&mut m.url, v, "Maintainer.maintainers.url")?,
            _ => {}
        }
    }
    Ok(m)
}

fn dependency(entries: &[(String, Value)]) -> Result<Dependency, DecodeError> {
    let mut d = Dependency::default();
    const FIELDS: &[&str] = &[
        "name",
        "version",
        "repository",
        "condition",
        "tags",
        "enabled",
        "import-values",
        "alias",
    ];
    for (key, v) in entries {
        let Some(field) = match_field(FIELDS, key) else {
            continue;
        };
        let at = format!("Dependency.dependencies.{field}");
        match field {
            "name" => set_string(&mut d.name, v, &at)?,
            "version" => set_string(&mut d.version, v, &at)?,
            "repository" => set_string(&mut d.repository, v, &at)?,
            "condition" => set_string(&mut d.condition, v, &at)?,
            "alias" => set_string(&mut d.alias, v, &at)?,
            "tags" => set_strings(&mut d.tags, v, &at)?,
            "enabled" => set_bool(&mut d.enabled, v, &at)?,
            "import-values" => match v {
                Value::Nil => d.import_values.clear(),
                Value::List(l) => {
                    d.import_values = l
                        .items
                        .iter()
                        .map(capstan_go::value::frozen::Frozen::freeze)
                        .collect::<Result<_, _>>()
                        .map_err(|e| DecodeError::Shape(format!("{at}: {e}")))?
                }
                other => return Err(type_error(other, &at, "[]interface {}")),
            },
            _ => {}
        }
    }
    Ok(d)
}

fn set_string(dst: &mut String, v: &Value, at: &str) -> Result<(), DecodeError> {
    if let Some(s) = scalar_string(v, at)? {
        *dst = s;
    }
    Ok(())
}

fn set_bool(dst: &mut bool, v: &Value, at: &str) -> Result<(), DecodeError> {
    match v {
        Value::Nil => Ok(()),
        Value::Bool(b) => {
            *dst = *b;
            Ok(())
        }
        other => Err(type_error(other, at, "bool")),
    }
}

fn set_strings(dst: &mut Vec<String>, v: &Value, at: &str) -> Result<(), DecodeError> {
    let items = list_of(v, at, "[]string")?;
    let mut out = Vec::with_capacity(items.len());
    for item in &items {
        // A null element decodes to "" in a []string.
        out.push(scalar_string(item, at)?.unwrap_or_default());
    }
    *dst = out;
    Ok(())
}

fn set_annotations(dst: &mut Option<BTreeMap<String, String>>, v: &Value) -> Result<(), DecodeError> {
    match v {
        Value::Nil => {
            *dst = None;
            Ok(())
        }
        Value::Map(m) => {
            // Decoding into an existing map adds to it, as encoding/json does.
            let map = dst.get_or_insert_with(BTreeMap::new);
            for (k, item) in m.snapshot() {
                let s = scalar_string(&item, "Metadata.annotations")?.unwrap_or_default();
                map.insert(k, s);
            }
            Ok(())
        }
        other => Err(type_error(other, "Metadata.annotations", "map[string]string")),
    }
}

/// A list's items; nil decodes to an empty list.
fn list_of(v: &Value, at: &str, go_type: &str) -> Result<Vec<Value>, DecodeError> {
    match v {
        Value::Nil => Ok(Vec::new()),
        Value::List(l) => Ok(l.items.as_ref().clone()),
        other => Err(type_error(other, at, go_type)),
    }
}

/// A scalar headed for a Go string field, converted the way sigs.k8s.io/yaml does; `None`
/// for null (the field keeps its value).
fn scalar_string(v: &Value, at: &str) -> Result<Option<String>, DecodeError> {
    Ok(Some(match v {
        Value::Nil => return Ok(None),
        Value::String(s) => s.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) | Value::Int64(i) => i.to_string(),
        Value::Uint8(u) => u.to_string(),
        Value::Uint64(u) => u.to_string(),
        Value::Float(f) => format_float32_g(*f),
        other => return Err(type_error(other, at, "string")),
    }))
}

fn type_error(v: &Value, at: &str, go_type: &str) -> DecodeError {
    DecodeError::Shape(format!(
        "cannot unmarshal {} into Go struct field {at} of type {go_type}",
        json_kind(v)
    ))
}

/// The JSON kind `encoding/json` names in type errors.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Nil => "null",
        Value::Bool(_) => "bool",
        Value::Int(_) | Value::Int64(_) | Value::Uint8(_) | Value::Uint64(_) | Value::Float(_) => "number",
        Value::String(_) | Value::ByteString(_) | Value::Bytes(_) => "string",
        Value::List(_) => "array",
        Value::Map(_) | Value::Object(_) => "object",
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)`, with go-yaml's names for the specials.
pub fn format_float32_g(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let single = f as f32;
    if single.is_infinite() {
        return if single > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    if single == 0.0 {
        return if single.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // Rust's `{:e}` gives the shortest round-tripping digits: "1.1234568e0", "-1e7".
    let sci = format!("{single:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if !(-4..6).contains(&exp) {
        // %e form: d.ddde±XX (at least two exponent digits).
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{esign}{:02}", exp.abs());
    }
    // %f form with exactly the significant digits.
    let point = exp + 1; // digits before the decimal point
    let body = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    };
    format!("{sign}{body}")
}

/// Helm's `sanitizeString`: whitespace becomes a space, unprintable characters are dropped.
pub fn sanitize(s: &str) -> String {
    s.chars()
        .filter_map(|c| {
            if c.is_whitespace() {
                Some(' ')
            } else if is_go_printable(c) {
                Some(c)
            } else {
                None
            }
        })
        .collect()
}

/// Go's `unicode.IsPrint` for the characters that matter: controls, format characters
/// (zero-width and bidi marks, BOM, soft hyphen), private use and non-characters are not.
fn is_go_printable(c: char) -> bool {
    let u = c as u32;
    !(c.is_control()
        || u == 0xAD
        || (0x600..=0x605).contains(&u)
        || u == 0x61C
        || u == 0x6DD
        || u == 0x70F
        || u == 0x180E
        || (0x200B..=0x200F).contains(&u)
        || (0x202A..=0x202E).contains(&u)
        || (0x2060..=0x206F).contains(&u)
        || u == 0xFEFF
        || (0xFFF9..=0xFFFB).contains(&u)
        || (0xE000..=0xF8FF).contains(&u)
        || (0xF0000..=0x10FFFF).contains(&u)
        || (u & 0xFFFE) == 0xFFFE)
}

/// Go's `%q` for the ASCII-printable names Helm quotes in messages.
fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// Masterminds/semver v3 `NewVersion` (lenient): optional `v`, one to three numeric parts
/// (leading zeros allowed), optional pre-release (numeric identifiers without leading
/// zeros) and build metadata.
pub fn is_valid_semver(v: &str) -> bool {
    let v = v.strip_prefix('v').unwrap_or(v);
    let (rest, build) = match v.split_once('+') {
        Some((r, b)) => (r, Some(b)),
        None => (v, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (rest, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty() || parts.len() > 3 {
        return false;
    }
    let numeric =
        |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u64>().is_ok();
    if !parts.iter().all(|p| numeric(p)) {
        return false;
    }
    let ident_ok = |id: &str| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if let Some(pre) = pre {
        for id in pre.split('.') {
            if !ident_ok(id) {
                return false;
            }
            if id.len() > 1 && id.starts_with('0') && id.bytes().all(|b| b.is_ascii_digit()) {
                return false;
            }
        }
    }
    if let Some(build) = build
        && !build.split('.').all(ident_ok)
    {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_format_like_go_g_with_32_bits() {
        // Verified against Helm: appVersion 1.10 → "1.1", 1.123456789 → "1.1234568", 1e7 → "1e+07".
        assert_eq!(format_float32_g(1.10), "1.1");
        assert_eq!(format_float32_g(1.123456789), "1.1234568");
        assert_eq!(format_float32_g(1e7), "1e+07");
        assert_eq!(format_float32_g(1.0), "1");
        assert_eq!(format_float32_g(123456.0), "123456");
        assert_eq!(format_float32_g(0.0001), "0.0001");
        assert_eq!(format_float32_g(0.00001), "1e-05");
        assert_eq!(format_float32_g(-2.5), "-2.5");
        assert_eq!(format_float32_g(12345678.0), "1.2345678e+07");
    }

    #[test]
    fn semver_rules_match_masterminds() {
        for ok in [
            "1.0.0",
            "1",
            "1.2",
            "v1.2",
            "01.2.3",
            "1.2.3-rc.1+b.5",
            "1.2.3-0",
            "1.0.0-x-y",
        ] {
            assert!(is_valid_semver(ok), "{ok}");
        }
        for bad in [
            "",
            "1.2.3.4",
            "1.2.3-01",
            "<< .ClusterAddonVersion >>",
            "x",
            "1.",
            "1.2.3-",
            "1.2.3+",
        ] {
            assert!(!is_valid_semver(bad), "{bad}");
        }
    }

    #[test]
    fn sanitize_like_helm() {
        // Verified: "a\tb\u200bc\u0007d\u00a0e" → "a bcd e".
        assert_eq!(sanitize("a\tb\u{200b}c\u{7}d\u{a0}e"), "a bcd e");
    }

    fn meta(md: Metadata) -> Result<Metadata, ValidationError> {
        ChartYaml {
            metadata: md,
            ..ChartYaml::default()
        }
        .validate()
    }

    #[test]
    fn validation_messages_are_helms() {
        let base = || Metadata {
            api_version: "v2".into(),
            name: "c".into(),
            version: "1.0.0".into(),
            ..Metadata::default()
        };
        let err = |md: Metadata| meta(md).unwrap_err().to_string();
        assert_eq!(
            err(Metadata {
                version: "<< .V >>".into(),
                ..base()
            }),
            "validation: chart.metadata.version \"<< .V >>\" is invalid"
        );
        assert_eq!(
            err(Metadata {
                name: "".into(),
                ..base()
            }),
            "validation: chart.metadata.name is required"
        );
        assert_eq!(
            err(Metadata {
                name: "a/b".into(),
                ..base()
            }),
            "validation: chart.metadata.name \"a/b\" is invalid"
        );
        assert_eq!(
            err(Metadata {
                chart_type: "foo".into(),
                ..base()
            }),
            "validation: chart.metadata.type must be application or library"
        );
        let dep = |name: &str, alias: &str| Dependency {
            name: name.into(),
            alias: alias.into(),
            ..Dependency::default()
        };
        assert_eq!(
            err(Metadata {
                dependencies: vec![dep("x", "a.b")],
                ..base()
            }),
            "validation: dependency \"x\" has disallowed characters in the alias"
        );
        assert_eq!(
            err(Metadata {
                dependencies: vec![dep("x", ""), dep("x", "")],
                ..base()
            }),
            "validation: more than one dependency with name or alias \"x\""
        );
        assert!(meta(base()).is_ok());
    }
}
