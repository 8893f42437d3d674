//! Chart loading against real Helm v4.2.3: each case of `testdata/chart-load/cases.json` is a
//! small chart directory (Chart.yaml quirks, validation errors, `.helmignore`, subcharts,
//! requirements.yaml, BOMs…); capstan must load and render it to Helm's answer in
//! `testdata/chart-load/expected.json` (output or error text; regenerate with
//! `tests/oracle/chart_load_oracle.py`). Cases still failing are listed in
//! `testdata/chart-load/known-failures.txt`; a listed case that passes is reported so the
//! list shrinks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use capstan_chart::load;
use capstan_chart::render::{RenderOptions, render};
use capstan_template::Value;

fn testdata(name: &str) -> PathBuf {
    Path::new(capstan_testenv::REPO_ROOT)
        .join("testdata/chart-load")
        .join(name)
}

fn read_json<T: serde::de::DeserializeOwned>(name: &str) -> T {
    let text = std::fs::read_to_string(testdata(name)).expect("testdata readable");
    serde_json::from_str(&text).expect("testdata parses")
}

/// capstan's answer in the oracle's shape: `{template: output}` or `{"error": text}`.
fn answer(root: &Path) -> BTreeMap<String, String> {
    let result = load::load(root).map_err(|e| e.to_string()).and_then(|chart| {
        render(&chart, &Value::empty_map(), &RenderOptions::default()).map_err(|e| e.to_string())
    });
    match result {
        Ok(out) => out,
        Err(e) => BTreeMap::from([("error".to_string(), e)]),
    }
}

#[test]
fn chart_loading_matches_helm() {
    let cases: BTreeMap<String, BTreeMap<String, String>> = read_json("cases.json");
    let expected: BTreeMap<String, serde_json::Value> = read_json("expected.json");
    let known: Vec<String> = std::fs::read_to_string(testdata("known-failures.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("chart-load");
    let mut unexpected = Vec::new();
    for (name, files) in &cases {
        let root = base.join(name.replace('/', "_")).join("c");
        let _ = std::fs::remove_dir_all(&root);
        for (rel, text) in files {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().expect("file has a parent")).expect("temp dir");
            std::fs::write(&path, text).expect("temp file");
        }
        let mut want: BTreeMap<String, String> = expected
            .get(name)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .expect("every case has an answer");
        want.remove("type");
        let have = answer(&root);
        let listed = known.contains(name);
        match (have == want, listed) {
            (true, true) => println!("{name}: passes now; remove it from known-failures.txt"),
            (true, false) | (false, true) => {}
            (false, false) => unexpected.push(format!("{name}:\n  helm:    {want:?}\n  capstan: {have:?}")),
        }
    }
    assert!(
        unexpected.is_empty(),
        "differences from Helm:\n{}",
        unexpected.join("\n")
    );
}

/// Unbounded `tpl` recursion (Helm dies of a Go stack overflow) must end in an error with
/// bounded memory.
#[test]
fn recursive_tpl_is_an_error() {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tpl-recursion/c");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("templates")).expect("temp chart");
    std::fs::write(
        root.join("Chart.yaml"),
        "apiVersion: v2\nname: c\nversion: 0.1.0\n",
    )
    .expect("Chart.yaml");
    std::fs::write(root.join("values.yaml"), "x: \"{{ tpl .Values.x . }}\"\n").expect("values.yaml");
    std::fs::write(root.join("templates/t.yaml"), "{{ tpl .Values.x . }}").expect("template");
    let got = answer(&root);
    let error = got.get("error").expect("recursion fails");
    assert!(
        error.contains("tpl nested more than"),
        "{}",
        &error[..error.len().min(300)]
    );
}
