//! The module layering of `src/` (docs/architecture.md): no module uses one above it, and no
//! two modules use each other, directly or through others.
//!
//! Reads every `crate::…` and `super::…` path outside comments. A "unit" is a top-level
//! module (`template`) or one of its direct children (`template::exec`); a child's own
//! submodules belong to it. Layers are checked between top-level modules, circles between units.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Each top-level module and the modules it may use (besides itself).
const MAY_USE: &[(&str, &[&str])] = &[
    ("go", &[]),
    // Kubernetes kind facts (Helm's install order) shared by `chart` and `apply`.
    ("kinds", &[]),
    ("encoding", &["go"]),
    ("template", &["go", "encoding"]),
    ("chart", &["go", "kinds", "encoding", "template"]),
    ("stack", &["go", "kinds", "encoding", "template", "chart"]),
    ("source", &["go", "kinds", "encoding", "chart", "stack"]),
    ("apply", &["go", "kinds", "encoding"]),
    (
        "operator",
        &[
            "go", "kinds", "encoding", "template", "chart", "stack", "source", "apply",
        ],
    ),
    (
        "cli",
        &[
            "go", "kinds", "encoding", "template", "chart", "stack", "source", "apply", "operator",
        ],
    ),
];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("read src dir")
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file: `src/template/funcs/strings.rs` → `[template, funcs, strings]`.
fn module_path(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src_dir()).expect("file under src");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        if stem != "mod" && stem != "lib" && stem != "main" {
            parts.push(stem.to_string());
        }
    }
    parts
}

/// Whether `top::child` is a module (a file or a folder under `src/top/`).
fn is_child_module(top: &str, child: &str) -> bool {
    let dir = src_dir().join(top);
    dir.join(format!("{child}.rs")).is_file() || dir.join(child).join("mod.rs").is_file()
}

fn unit_of(path: &[String]) -> Option<String> {
    let top = path.first()?;
    match path.get(1) {
        Some(child) if is_child_module(top, child) => Some(format!("{top}::{child}")),
        _ => Some(top.clone()),
    }
}

/// The module paths a line of code refers to through `crate::` or `super::`.
fn referenced_paths(line: &str, here: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < line.len() {
        let rest = &line[i..];
        let boundary =
            i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b':');
        if boundary && (rest.starts_with("crate::") || rest.starts_with("super::")) {
            let mut base: Vec<String> = Vec::new();
            let mut j = i;
            if rest.starts_with("super::") {
                base = here.to_vec();
                while line[j..].starts_with("super::") {
                    base.pop();
                    j += "super::".len();
                }
            } else {
                j += "crate::".len();
            }
            let tail: String = line[j..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            base.extend(
                tail.split("::")
                    .filter(|s| !s.is_empty())
                    .take(2)
                    .map(str::to_string),
            );
            out.push(base);
            i = j + tail.len().max(1);
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}

/// Unit → units it uses, from every file under `src/`.
fn unit_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(&src_dir(), &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let here = module_path(&file);
        let Some(from) = unit_of(&here) else { continue }; // lib.rs, main.rs
        let text = fs::read_to_string(&file).expect("read source");
        for line in text.lines() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            let code = code.split(" // ").next().unwrap_or(code);
            for path in referenced_paths(code, &here) {
                if let Some(to) = unit_of(&path)
                    && to != from
                {
                    graph.entry(from.clone()).or_default().insert(to);
                }
            }
        }
        graph.entry(from).or_default();
    }
    graph
}

fn top(unit: &str) -> &str {
    unit.split("::").next().unwrap_or(unit)
}

#[test]
fn no_module_uses_a_layer_above_it() {
    let may_use: BTreeMap<&str, &[&str]> = MAY_USE.iter().copied().collect();
    let mut violations = Vec::new();
    for (from, tos) in unit_graph() {
        let Some(allowed) = may_use.get(top(&from)) else {
            violations.push(format!(
                "src/{}: a top-level module missing from MAY_USE",
                top(&from)
            ));
            continue;
        };
        for to in tos {
            if top(&to) != top(&from) && !allowed.contains(&top(&to)) {
                violations.push(format!("{from} uses {to}"));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "layering violations:\n{}",
        violations.join("\n")
    );
}

#[test]
fn no_import_circles() {
    let graph = unit_graph();
    // Tarjan's strongly connected components; any with two or more units is a circle.
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        circles: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        let graph = s.graph;
        for w in graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.circles.push(component);
            }
        }
    }
    let mut s = State {
        graph: &graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        circles: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    let circles: Vec<String> = s.circles.iter().map(|c| c.join(" ⇄ ")).collect();
    assert!(circles.is_empty(), "import circles:\n{}", circles.join("\n"));
}

#[test]
fn the_checker_sees_paths() {
    let here: Vec<String> = ["template", "funcs", "strings"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let got = referenced_paths(
        "use crate::go::value::{Value}; x = super::super::exec::run(); // crate::chart",
        &here,
    );
    assert_eq!(
        got,
        vec![
            vec!["go".to_string(), "value".to_string()],
            vec!["template".to_string(), "exec".to_string(), "run".to_string()],
            vec!["chart".to_string()],
        ]
    );
    // The graph is not empty and sees a known edge.
    let graph = unit_graph();
    assert!(graph["template::exec"].contains("template::parser"), "{graph:?}");
    assert!(graph["encoding::json"].contains("go::value"));
}
