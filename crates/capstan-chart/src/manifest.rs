//! The `helm template` layer over rendered templates: NOTES removed, documents split with
//! Helm v4.2.3's separator rule, heads parsed (a YAML error aborts), hooks separated (unknown
//! hook types dropped), documents sorted by kind in install order, `# Source:` headers.

use std::collections::BTreeMap;

use crate::Chart;
use capstan_encoding::yaml_load;
use capstan_go::value::Value;

/// Kinds in the order Helm installs them; unknown kinds follow, alphabetically. The table
/// lives in [`capstan_kinds`] so the applier shares it without depending on charts.
pub use capstan_kinds::INSTALL_ORDER;

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
    // No document is longer than the template output it comes from.
    let largest = rendered.values().map(String::len).max().unwrap_or(0);
    let mut scratch = yaml_load::Scratch::for_documents_up_to(largest);
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
            let head = parse_head(&mut scratch, &doc).map_err(|msg| ManifestError {
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

/// Helm v4.2.3's `SplitManifests`: the separator is Go's regular expression
/// `(?:^|\s*\n)---\s*`, so a `---` glued to text still splits and whitespace around it is
/// eaten. Whitespace-only documents are dropped and leading whitespace is trimmed, but
/// trailing whitespace is kept (verified: a file's last document keeps its final newlines,
/// which show as a blank line before the next `---` in the stream).
///
/// Matched by hand rather than with the `regex` crate: compiling the pattern was part of every
/// `capstan render`'s cold start, and Go's `\s` is ASCII (`[\t\n\f\r ]`, no `\v`), where
/// the `regex` crate's is Unicode.
pub fn split_documents(text: &str) -> Vec<String> {
    let mut docs = Vec::new();
    let mut done = 0;
    for (start, end) in separators(text) {
        docs.push(&text[done..start]);
        done = end;
    }
    docs.push(&text[done..]);
    docs.into_iter()
        .filter(|d| !d.trim().is_empty())
        .map(|d| d.trim_start().to_string())
        .collect()
}

/// Go's `\s` in a regular expression.
fn is_go_regex_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

/// The byte ranges `(?:^|\s*\n)---\s*` matches, leftmost first and without overlap, as Go's
/// `FindAllStringIndex` reports them. Each match but one at the very start ends a `\n---`;
/// its leading `\s*` reaches back over the whitespace before that newline, but not into the
/// previous match.
fn separators(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut from = 0;
    loop {
        let dashes = if from == 0 && bytes.starts_with(b"---") {
            Some((0, 0))
        } else {
            memchr::memmem::find(&bytes[from..], b"\n---").map(|at| {
                let newline = from + at;
                let mut start = newline;
                while start > from && is_go_regex_space(bytes[start - 1]) {
                    start -= 1;
                }
                (start, newline + 1)
            })
        };
        let Some((start, dashes)) = dashes else {
            return found;
        };
        let mut end = dashes + 3;
        while end < bytes.len() && is_go_regex_space(bytes[end]) {
            end += 1;
        }
        found.push((start, end));
        from = end;
    }
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
fn parse_head(scratch: &mut yaml_load::Scratch, doc: &str) -> Result<Head, String> {
    // Only these fields are read; the rest of the document is checked, not built.
    let value = yaml_load::load_document_fields_with(scratch, doc, &["apiVersion", "kind", "metadata"])
        .map_err(|e| e.sigs_message())?;
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
    // Written in place into one buffer sized up front: a chart's stream can be megabytes, and
    // a copy per document or per growth step would multiply the peak memory of a render.
    let crds = if opts.include_crds {
        crd_files(chart, chart.name())
    } else {
        Vec::new()
    };
    let documents = m.manifests.iter().filter(|d| selected(&d.source, opts));
    let hooks = m
        .hooks
        .iter()
        .filter(|h| !(opts.no_hooks || opts.skip_tests && h.is_test_hook()) && selected(&h.source, opts));
    let size = crds
        .iter()
        .map(|(path, data)| path.len() + data.len())
        .sum::<usize>()
        + documents
            .clone()
            .chain(hooks.clone())
            .map(|d| d.source.len() + d.content.len())
            .sum::<usize>()
        + 32 * (crds.len() + m.manifests.len() + m.hooks.len() + 1);
    let mut out = String::with_capacity(size);
    for (path, data) in &crds {
        push_document(&mut out, path, &String::from_utf8_lossy(data));
    }
    for d in documents {
        push_document(&mut out, &d.source, &d.content);
    }
    // Helm trims the manifests part (CRDs and documents) as a whole, then ends it with one newline.
    out.truncate(out.trim_end().len());
    let leading = out.len() - out.trim_start().len();
    out.drain(..leading);
    out.push('\n');
    for h in hooks {
        push_document(&mut out, &h.source, &h.content);
    }
    out
}

/// `---\n# Source: <path>\n<content>\n`, one document of the stream.
fn push_document(out: &mut String, source: &str, content: &str) {
    out.push_str("---\n# Source: ");
    out.push_str(source);
    out.push('\n');
    out.push_str(content);
    out.push('\n');
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Helm's separator as Go compiles it (`\s` is `[\t\n\f\r ]` there), run by the `regex`
    /// crate, whose leftmost-first matching is Go's.
    fn split_by_regex(text: &str) -> Vec<String> {
        let go_separator =
            regex::Regex::new(r"(?:^|[\t\n\x0C\r ]*\n)---[\t\n\x0C\r ]*").expect("valid regex");
        go_separator
            .split(text)
            .filter(|d| !d.trim().is_empty())
            .map(|d| d.trim_start().to_string())
            .collect()
    }

    #[test]
    fn splits_like_helm_on_known_cases() {
        let cases = [
            ("", vec![]),
            ("---", vec![]),
            ("a: 1\n---\nb: 2\n", vec!["a: 1", "b: 2\n"]),
            ("---\na: 1\n---\n---\nb: 2", vec!["a: 1", "---\nb: 2"]),
            ("a: 1 \t\n  \n---b: 2", vec!["a: 1", "b: 2"]),
            ("a: 1\x0b\n--- \x0bb", vec!["a: 1\x0b", "b"]),
            ("a: 1\u{a0}\n---\u{a0}b", vec!["a: 1\u{a0}", "b"]),
            ("a---b\n--", vec!["a---b\n--"]),
        ];
        for (text, want) in cases {
            assert_eq!(split_documents(text), want, "{text:?}");
            assert_eq!(split_by_regex(text), want, "{text:?} (regex)");
        }
    }

    proptest! {
        #[test]
        fn splits_like_the_go_regex(text in "[-\n \t\r\x0b\x0ca\u{a0}]{0,40}") {
            prop_assert_eq!(split_documents(&text), split_by_regex(&text));
        }
    }
}
