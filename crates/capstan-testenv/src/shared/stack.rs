//! Helpers of the whole-release tests (`tests/stack_*.rs`): the example Cluster of
//! `testdata/`, and asking real Helm (`tests/oracle/stack_oracle.py`) to render the parts of a
//! release with the values capstan computed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

use capstan_chart::Chart;
use capstan_chart::compiled::CompiledChart;
use capstan_chart::manifest::{self, StreamOptions};
use capstan_chart::objects::KubeVersion;
use capstan_stack::release::{Addon, Release};
use capstan_stack::render::{Part, PartInput, RenderOptions, render_part, render_release};
use capstan_stack::values::ClusterObjects;
use capstan_template::funcs::FuncEnv;

pub fn testdata(name: &str) -> PathBuf {
    Path::new(crate::REPO_ROOT).join("testdata").join(name)
}

pub fn example_objects() -> ClusterObjects {
    ClusterObjects::load(
        &testdata("cluster.yaml"),
        Some(&testdata("control-plane.yaml")),
        Some(&testdata("infra-cluster.yaml")),
    )
    .expect("the example objects load")
}

pub fn deterministic() -> RenderOptions {
    RenderOptions {
        namespace: None,
        env: Rc::new(FuncEnv::deterministic(1, 1_700_000_000)),
    }
}

/// One question for the oracle and what capstan answered.
pub struct Question {
    id: String,
    request: serde_json::Value,
    ours: Ours,
}

impl Question {
    /// Gives Helm these values files instead (merged like repeated `helm template -f`).
    pub fn set_values_files(&mut self, files: &[&Path]) {
        self.request["values"] = serde_json::json!(files);
    }
}

pub enum Ours {
    Rendered(BTreeMap<String, String>),
    Stream(String),
}

/// The questions for one rendered part: engine output with the part's settings, and the
/// install stream (default Kubernetes version, no hooks or CRDs).
pub fn questions_for(
    id: &str,
    chart_path: &Path,
    chart: &Chart,
    part: &Part,
    scratch: &Path,
) -> Vec<Question> {
    let values_path = part.values.as_ref().map(|v| {
        let path = scratch.join(format!("{}.values.yaml", id.replace('/', "_")));
        std::fs::write(&path, &v.text).unwrap();
        path
    });
    let env = Rc::new(FuncEnv::deterministic(1, 1_700_000_000));
    let compiled = CompiledChart::new(chart.clone()).expect("compiles");
    let default_version = render_part(
        PartInput {
            name: part.name.clone(),
            chart: &compiled,
            release_name: part.release_name.clone(),
            namespace: part.namespace.clone(),
            kube_version: KubeVersion::helm_default(),
            values: part.values.clone(),
            include_crds: false,
        },
        &env,
    )
    .expect("renders with Helm's default Kubernetes version too");
    let stream = manifest::stream(
        chart,
        &default_version.manifests,
        &StreamOptions {
            no_hooks: true,
            ..StreamOptions::default()
        },
    );
    let base = serde_json::json!({
        "chart": chart_path,
        "values": values_path,
        "name": part.release_name,
        "namespace": part.namespace,
    });
    let mut engine = base.clone();
    engine["kube_version"] = serde_json::Value::from(part.kube_version.clone());
    engine["stream"] = false.into();
    let mut install = base;
    install["stream"] = true.into();
    vec![
        Question {
            id: format!("{id} engine"),
            request: engine,
            ours: Ours::Rendered(part.rendered.clone()),
        },
        Question {
            id: format!("{id} stream"),
            request: install,
            ours: Ours::Stream(stream),
        },
    ]
}

/// Asks the oracle every question in one process; `Err` when the oracle cannot run.
pub fn ask_helm(
    shared: &Path,
    python: &Path,
    requests: &BTreeMap<String, serde_json::Value>,
    scratch: &Path,
) -> Result<BTreeMap<String, serde_json::Value>, String> {
    let file = scratch.join("requests.json");
    std::fs::write(&file, serde_json::to_string(requests).unwrap()).map_err(|e| e.to_string())?;
    let script = Path::new(crate::REPO_ROOT).join("tests/oracle/stack_oracle.py");
    let out = Command::new(python)
        .arg(script)
        .arg(shared)
        .arg(&file)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

/// The first difference between capstan's answer and Helm's, or `None`.
pub fn verdict(
    answer: &serde_json::Value,
    rendered: &BTreeMap<String, String>,
    stream: &Option<String>,
) -> Option<String> {
    if let Some(err) = answer.get("error") {
        return Some(format!("Helm failed: {err}"));
    }
    match stream {
        Some(ours) => {
            let want = answer["manifest"].as_str().unwrap_or_default();
            first_line_difference(want.trim_end(), ours.trim_end())
        }
        None => {
            let want: BTreeMap<String, String> =
                serde_json::from_value(answer["rendered"].clone()).unwrap_or_default();
            if !want.keys().eq(rendered.keys()) {
                return Some(format!(
                    "templates differ: helm {:?}, capstan {:?}",
                    want.keys().collect::<Vec<_>>(),
                    rendered.keys().collect::<Vec<_>>()
                ));
            }
            want.iter()
                .find_map(|(k, w)| first_line_difference(w, &rendered[k]).map(|d| format!("{k}: {d}")))
        }
    }
}

/// The first difference, or `None`. Secrets Helm generates at render time (`genCA` in cilium)
/// cannot match byte for byte: differing `kind: Secret` documents are compared by structure.
fn first_line_difference(want: &str, got: &str) -> Option<String> {
    if want == got {
        return None;
    }
    let (wd, gd): (Vec<&str>, Vec<&str>) = (want.split("\n---").collect(), got.split("\n---").collect());
    if wd.len() == gd.len() {
        let generated = |d: &str| d.lines().any(|l| l == "kind: Secret");
        let all_generated =
            wd.iter().zip(&gd).filter(|(a, b)| a != b).all(|(a, b)| {
                generated(a) && generated(b) && super::compare::structurally_equal(a, b).is_ok()
            });
        if all_generated {
            return None;
        }
    }
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let at = (0..w.len().max(g.len()))
        .find(|&i| w.get(i) != g.get(i))
        .unwrap_or(0);
    Some(format!(
        "line {}: helm {:?}, capstan {:?}",
        at + 1,
        w.get(at),
        g.get(at)
    ))
}

/// Unpacks a `.tgz` (a trusted fixture) so Helm can load one chart directory of it.
pub fn unpack(archive: &Path, into: &Path) {
    let data = std::fs::read(archive).unwrap();
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(data.as_slice()));
    tar.unpack(into).unwrap();
}

/// The oracle's python (`CAPSTAN_HELM_PYTHON`, else the venv of `scripts/oracle-env.sh`), or
/// `None` after printing why the test skips (under `CI=true` a missing oracle fails).
pub fn helm_python(test: &str) -> Option<PathBuf> {
    let python = std::env::var_os("CAPSTAN_HELM_PYTHON")
        .map(PathBuf::from)
        .or_else(super::oracle_python);
    if python.is_none() {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !ci,
            "{test}: the Helm oracle venv is missing (scripts/oracle-env.sh)"
        );
        println!("SKIPPED {test}: no Helm oracle venv (run scripts/oracle-env.sh)");
    }
    python
}

/// Renders `release` for the example objects and turns every part into oracle questions;
/// stage charts are unpacked below `scratch` for Helm.
pub fn release_questions(release: &Release, objects: &ClusterObjects, scratch: &Path) -> Vec<Question> {
    let tag = release.tag().tag();
    let parts = render_release(release, objects, &deterministic()).unwrap_or_else(|e| panic!("{tag}: {e}"));
    let class_chart = release.cluster_class_chart().unwrap();
    let addon_charts = release.addon_charts().unwrap();
    let mut questions = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let (chart_path, chart) = if i == 0 {
            (release.cluster_class_asset().to_path_buf(), &class_chart)
        } else {
            let addon = &addon_charts[i - 1];
            let path = match (release.addon(), &addon.stage) {
                (Addon::Single { chart, .. }, _) => chart.clone(),
                (Addon::Staged { archive, .. }, Some(stage)) => {
                    let into = scratch.join(&tag);
                    if !into.exists() {
                        unpack(archive, &into);
                    }
                    into.join(stage)
                }
                (Addon::Staged { .. }, None) => unreachable!("stages have names"),
            };
            (path, &addon.chart)
        };
        questions.extend(questions_for(
            &format!("{tag} {}", part.name),
            &chart_path,
            chart,
            part,
            scratch,
        ));
    }
    questions
}

/// Asks Helm every question; returns the ids that differ (each printed with the reason).
pub fn differences(shared: &Path, python: &Path, questions: &[Question], scratch: &Path) -> Vec<String> {
    let requests: BTreeMap<String, serde_json::Value> = questions
        .iter()
        .map(|q| (q.id.clone(), q.request.clone()))
        .collect();
    let answers = ask_helm(shared, python, &requests, scratch).expect("the oracle answers");
    let mut failures = Vec::new();
    for q in questions {
        let (rendered, stream) = match &q.ours {
            Ours::Rendered(r) => (r.clone(), None),
            Ours::Stream(s) => (BTreeMap::new(), Some(s.clone())),
        };
        match verdict(&answers[&q.id], &rendered, &stream) {
            None => println!("same     {}", q.id),
            Some(why) => {
                println!("DIFFERS  {}: {why}", q.id);
                failures.push(q.id.clone());
            }
        }
    }
    failures
}
