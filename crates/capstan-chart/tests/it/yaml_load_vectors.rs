//! The YAML loader against real Helm, independent of the template functions: for each
//! `values-yaml` vector whose template is `{{ toJson .Values }}`, the values capstan loads
//! (nulls dropped from maps, as chart-default coalescing does) must equal Helm's JSON, and a
//! failing load must fail with Helm's message.

use std::path::Path;

use capstan_chart::values;
use capstan_template::Value;
use serde_json::Value as Json;

/// Chart defaults lose their null map entries when coalesced (`cleanNilValues`).
fn drop_map_nulls(v: &Value) -> Value {
    match v {
        Value::Map(m) => Value::map(
            m.snapshot()
                .into_iter()
                .filter(|(_, v)| !v.is_nil())
                .map(|(k, v)| (k, drop_map_nulls(&v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[test]
fn values_yaml_vectors_load_like_helm() {
    // YAML_VECTORS=<file> checks another vectors file of the same shape (e.g. a corpus run).
    let path = match std::env::var_os("YAML_VECTORS") {
        Some(p) => std::path::PathBuf::from(p),
        None => Path::new(capstan_testenv::REPO_ROOT).join("testdata/template/vectors/values-yaml.json"),
    };
    let text = std::fs::read_to_string(&path).expect("vectors file");
    let cases: Vec<Json> = serde_json::from_str(&text).expect("vectors JSON");
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap_or_default();
        if case["template"].as_str() != Some("{{ toJson .Values }}") {
            continue;
        }
        let Some(values_text) = case["values"].as_str() else {
            continue;
        };
        checked += 1;
        let expect = &case["expect"];
        let got = values::parse(values_text, "values.yaml");
        match (expect.get("error").and_then(Json::as_str), got) {
            (Some(want), Err(e)) => {
                let mine =
                    e.to_string()
                        .replacen("failed to parse values.yaml", "cannot load values.yaml", 1);
                if mine != want {
                    failures.push(format!("{name}: error\n  want: {want}\n  got:  {mine}"));
                }
            }
            (Some(want), Ok(v)) => failures.push(format!("{name}: want error {want}, got {v:?}")),
            (None, Err(e)) => failures.push(format!("{name}: unexpected error {e}")),
            (None, Ok(v)) => {
                let out = expect["output"]["t/templates/t.yaml"]
                    .as_str()
                    .unwrap_or_default();
                let want = match serde_json::from_str::<Json>(out) {
                    Ok(j) => Value::from_json(&j),
                    Err(_) => {
                        failures.push(format!("{name}: oracle output is not JSON: {out}"));
                        continue;
                    }
                };
                let mine = drop_map_nulls(&v);
                if !mine.deep_equal(&want) {
                    failures.push(format!("{name}: values\n  want: {want:?}\n  got:  {mine:?}"));
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} cases checked");
    assert!(
        failures.is_empty(),
        "{} of {checked} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
