//! The `helm template` layer over rendered templates: NOTES removed, documents split with
//! Helm v4.2.3's separator rule, heads parsed (a YAML error aborts), hooks separated (unknown
//! hook types dropped), documents sorted by kind in install order, `# Source:` headers.

use std::collections::BTreeMap;

use crate::chart::Chart;
use crate::chart::values;
use crate::go::value::Value;

/// Kinds in the order Helm installs them; unknown kinds follow, alphabetically. The table
/// lives in [`crate::kinds`] so the applier shares it without depending on charts.
pub use crate::kinds::INSTALL_ORDER;

const HOOK_ANNOTATION: &str = "helm.sh/hook";
const HOOK_EVENTS: &[&str] = &[
    "pre-install",
    "post-install",
    "pre-delete",
    "post-delete",
    "pre-upgrade",
    "post-upgrade",
    "pre-rollback",
    "post-rollback",
    "test",
    "test-success",
];

/// One YAML document of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// The template it came from (`chart/templates/x.yaml`).
    pub source: String,
    pub content: String,
    pub api_version: String,
    pub kind: String,
    pub name: String,
    /// Hook events (lower-cased) when this document is a hook.
    pub hooks: Vec<String>,
}

impl Document {
    pub fn is_test_hook(&self) -> bool {
        self.hooks.iter().any(|h| h == "test" || h == "test-success")
    }
}

/// The sorted stream: regular manifests and hooks.
#[derive(Debug, Clone, Default)]
pub struct Manifests {
    pub manifests: Vec<Document>,
    pub hooks: Vec<Document>,
    /// The root chart's NOTES.txt output.
    pub notes: Option<String>,
}

/// A rendered document that Helm could not parse.
#[derive(Debug, Clone, thiserror::Error)]
#[error("YAML parse error on {source_path}: {msg}")]
pub struct ManifestError {
    pub source_path: String,
    pub msg: String,
}

/// Splits, classifies and sorts the engine output of `chart`.
pub fn build(chart: &Chart, rendered: &BTreeMap<String, String>) -> Result<Manifests, ManifestError> {
    let notes_path = format!("{}/templates/NOTES.txt", chart.name());
    let mut result = Manifests::default();
    for (path, content) in rendered {
        if path.ends_with("NOTES.txt") {
            if *path == notes_path {
                result.notes = Some(content.clone());
            }
            continue;
        }
        let base = path.rsplit('/').next().unwrap_or(path);
        if base.starts_with('_') || content.trim().is_empty() {
            continue;
        }
        for doc in split_documents(content) {
            let head = parse_head(&doc).map_err(|msg| ManifestError {
                source_path: path.clone(),
                msg,
            })?;
            match head.hook_types.clone() {
                None => result.manifests.push(head.into_document(path, doc, Vec::new())),
                Some(types) => {
                    let events: Vec<String> = types.split(',').map(|t| t.trim().to_lowercase()).collect();
                    // Helm silently drops a document whose hook type it does not know.
                    if events.iter().all(|e| HOOK_EVENTS.contains(&e.as_str())) {
                        result.hooks.push(head.into_document(path, doc, events));
                    }
                }
            }
        }
    }
    sort_by_kind(&mut result.manifests);
    sort_by_kind(&mut result.hooks);
    Ok(result)
}

/// Helm v4.2.3's `SplitManifests`: the separator is `(?:^|\s*\n)---\s*`, so a `---` glued
/// to text still splits and whitespace around it is eaten. Whitespace-only documents are
/// dropped and leading whitespace is trimmed, but trailing whitespace is kept (verified: a
/// file's last document keeps its final newlines, which show as a blank line before the
/// next `---` in the stream).
pub fn split_documents(text: &str) -> Vec<String> {
    static SEPARATOR: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"(?:^|\s*\n)---\s*").expect("valid separator regex"));
    SEPARATOR
        .split(text)
        .filter(|d| !d.trim().is_empty())
        .map(|d| d.trim_start().to_string())
        .collect()
}

struct Head {
    api_version: String,
    kind: String,
    name: String,
    hook_types: Option<String>,
}

impl Head {
    fn into_document(self, source: &str, content: String, hooks: Vec<String>) -> Document {
        Document {
            source: source.to_string(),
            content,
            api_version: self.api_version,
            kind: self.kind,
            name: self.name,
            hooks,
        }
    }
}

/// Parses the fields Helm reads from every document (`SimpleHead`).
fn parse_head(doc: &str) -> Result<Head, String> {
    let value = values::parse_document(doc)?;
    let get_str = |v: Option<Value>, field: &str| -> Result<String, String> {
        match v {
            None | Some(Value::Nil) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.to_string()),
            Some(other) => Err(format!(
                "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go struct field SimpleHead.{field} of type string",
                json_kind(&other)
            )),
        }
    };
    let map = value.as_map();
    let api_version = get_str(map.and_then(|m| m.get("apiVersion")), "apiVersion")?;
    let kind = get_str(map.and_then(|m| m.get("kind")), "kind")?;
    let metadata = map.and_then(|m| m.get("metadata"));
    let meta = metadata.as_ref().and_then(Value::as_map);
    let name = get_str(meta.and_then(|m| m.get("name")), "metadata.name")?;
    let mut hook_types = None;
    if let Some(annotations) = meta.and_then(|m| m.get("annotations"))
        && let Some(a) = annotations.as_map()
    {
        for (k, v) in a.snapshot() {
            let v = get_str(Some(v), "metadata.annotations")?;
            if k == HOOK_ANNOTATION {
                hook_types = Some(v);
            }
        }
    }
    Ok(Head {
        api_version,
        kind,
        name,
        hook_types,
    })
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) => "bool",
        Value::Float(_) | Value::Int(_) | Value::Int64(_) => "number",
        Value::List(_) => "array",
        Value::Map(_) => "object",
        _ => "string",
    }
}

/// Stable sort by install order; unknown kinds last, alphabetically among themselves.
fn sort_by_kind(docs: &mut [Document]) {
    let rank = |kind: &str| INSTALL_ORDER.iter().position(|k| *k == kind);
    docs.sort_by(|a, b| match (rank(&a.kind), rank(&b.kind)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.kind.cmp(&b.kind),
    });
}

/// Options of the stream output (`helm template` flags).
#[derive(Debug, Clone, Default)]
pub struct StreamOptions {
    pub include_crds: bool,
    pub skip_tests: bool,
    pub no_hooks: bool,
    /// `--show-only` paths (relative to the chart's parent, like Helm).
    pub show_only: Vec<String>,
}

/// The `helm template` text: CRDs (raw), manifests, then hooks, each with `# Source:`.
pub fn stream(chart: &Chart, m: &Manifests, opts: &StreamOptions) -> String {
    let mut body = String::new();
    if opts.include_crds {
        for (path, data) in crd_files(chart, chart.name()) {
            body.push_str(&format!(
                "---\n# Source: {path}\n{}\n",
                String::from_utf8_lossy(&data)
            ));
        }
    }
    for d in &m.manifests {
        if selected(&d.source, opts) {
            body.push_str(&format!("---\n# Source: {}\n{}\n", d.source, d.content));
        }
    }
    let mut out = format!("{}\n", body.trim());
    if !opts.no_hooks {
        for h in &m.hooks {
            if (opts.skip_tests && h.is_test_hook()) || !selected(&h.source, opts) {
                continue;
            }
            out.push_str(&format!("---\n# Source: {}\n{}\n", h.source, h.content));
        }
    }
    out
}

fn selected(source: &str, opts: &StreamOptions) -> bool {
    opts.show_only.is_empty() || opts.show_only.iter().any(|s| s == source)
}

/// `crds/*.{yaml,yml,json}` of the chart and its subcharts with their full paths.
fn crd_files(chart: &Chart, full_path: &str) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = chart
        .crd_files()
        .map(|f| (format!("{full_path}/{}", f.name), f.data.clone()))
        .collect();
    for sub in &chart.dependencies {
        out.extend(crd_files(sub, &format!("{full_path}/charts/{}", sub.name())));
    }
    out
}
