//! Whole releases of `../shared/cluster-stack-releases` rendered for the example Cluster of
//! `testdata/`: the runtime values capstan computes are checked against hand-written
//! expectations, then every part (ClusterClass chart, addon chart or stages) is rendered by
//! real Helm v4.2.3 with those same values (the oracle, `tests/shared/stack_oracle.py`) and
//! compared with capstan's output:
//!
//! - the engine output per template, with the part's release name, namespace and Kubernetes
//!   version (`versions.kubernetes` for addons), must be identical;
//! - the `helm template` stream (offline install: Helm's default Kubernetes version, without
//!   hooks and CRDs) must be identical.
//!
//! Without `../shared` the tests skip (fail under `CI=true`); without the oracle venv only the
//! Helm comparison skips.

mod shared;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

use capstan::chart::Chart;
use capstan::chart::manifest::{self, StreamOptions};
use capstan::chart::objects::KubeVersion;
use capstan::stack::release::{Addon, Release};
use capstan::stack::render::{PartInput, RenderOptions, render_part, render_release};
use capstan::stack::values::ClusterObjects;
use capstan::stack::{ReleaseTag, Version};
use capstan::template::funcs::FuncEnv;

pub fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata").join(name)
}

pub fn example_objects() -> ClusterObjects {
    ClusterObjects::load(
        &testdata("cluster.yaml"),
        Some(&testdata("control-plane.yaml")),
        Some(&testdata("infra-cluster.yaml")),
    )
    .expect("the example objects load")
}

fn releases(shared: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(shared.join("cluster-stack-releases"))
        .expect("cluster-stack-releases readable")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn deterministic() -> RenderOptions {
    RenderOptions {
        namespace: None,
        env: Rc::new(FuncEnv::deterministic(1, 1_700_000_000)),
    }
}

#[test]
fn shared_releases_load_with_their_layout() {
    let Some(shared) = shared::dir("stack releases") else {
        return;
    };
    let dirs = releases(&shared);
    assert_eq!(dirs.len(), 4, "four shared releases");
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let tag = ReleaseTag::parse(&name).expect("the directory is named by its tag");
        let release = Release::load(&dir).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(release.tag(), &tag);
        assert_eq!(Release::load_tagged(&dir, &tag).unwrap().tag(), &tag);
        let (addon_version, staged) = match name.as_str() {
            "docker-ferrol-1-27-v0-sha-hipstsw" => ("v0-sha.hipstsw", true),
            "docker-ferrol-1-27-v1" => ("v1", false),
            "docker-ferrol-1-27-v2" => ("v2", false),
            // v3 reuses the addon of v2: the asset is named by the metadata's addon version.
            "docker-ferrol-1-27-v3" => ("v2", false),
            other => panic!("unexpected release {other}"),
        };
        assert_eq!(
            release.metadata().cluster_addon,
            Version::parse(addon_version).unwrap()
        );
        match release.addon() {
            Addon::Staged {
                archive,
                config,
                stage_dirs,
            } => {
                assert!(staged, "{name}");
                assert!(archive.ends_with("docker-ferrol-1-27-cluster-addon-v0-sha.hipstsw.tgz"));
                assert_eq!(config.stage_names(), ["metrics-server", "ngnix"]);
                assert_eq!(stage_dirs, &["metrics-server", "ngnix"]);
            }
            Addon::Single {
                chart,
                values_template,
            } => {
                assert!(!staged, "{name}");
                assert!(chart.ends_with(format!("docker-ferrol-1-27-cluster-addon-{addon_version}.tgz")));
                assert!(values_template.is_some());
            }
        }
        let wrong = ReleaseTag::parse("docker-ferrol-1-27-v9").unwrap();
        let err = Release::load_tagged(&dir, &wrong).unwrap_err().to_string();
        assert!(
            err.contains("release tag docker-ferrol-1-27-v9 has version v9"),
            "{err}"
        );
    }
}

#[test]
fn runtime_values_of_the_example_cluster() {
    let Some(shared) = shared::dir("stack release values") else {
        return;
    };
    let objects = example_objects();
    for dir in releases(&shared) {
        let release = Release::load(&dir).unwrap();
        let parts = render_release(&release, &objects, &deterministic())
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let names: Vec<&str> = parts.iter().map(|p| p.name.as_str()).collect();
        let tag = release.tag().tag();
        // Hand-checked: the template puts the Cluster's endpoint host into the
        // metrics-server labels, next to the addon version it was written for.
        let addon_version = match tag.as_str() {
            "docker-ferrol-1-27-v1" => "v1",
            "docker-ferrol-1-27-v2" | "docker-ferrol-1-27-v3" => "v2",
            _ => {
                assert_eq!(
                    names,
                    [
                        "cluster-class",
                        "cluster-addon/metrics-server",
                        "cluster-addon/ngnix"
                    ]
                );
                // The stages have no overwrite.yaml: no runtime values.
                assert!(parts.iter().all(|p| p.values.is_none()));
                continue;
            }
        };
        assert_eq!(names, ["cluster-class", "cluster-addon"], "{tag}");
        let values = parts[1].values.as_ref().expect("single-chart addon values");
        assert_eq!(
            values.text,
            format!(
                "metrics-server:\n  commonLabels:\n    domain: \"172.18.0.3\"\n    clusterAddonVersion: \"{addon_version}\"\n"
            ),
            "{tag}"
        );
        assert!(
            parts[1].stream.contains("domain: 172.18.0.3"),
            "{tag}: the value reaches the objects"
        );
        assert_eq!(parts[0].release_name, "docker-ferrol-1-27");
        assert_eq!(parts[0].namespace, "tenant-a", "the Cluster's namespace");
        assert_eq!(parts[1].namespace, "kube-system");
        assert_eq!(parts[1].kube_version, "v1.27.3");
    }
}

/// One question for the oracle and what capstan answered.
pub struct Question {
    id: String,
    request: serde_json::Value,
    ours: Ours,
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
    part: &capstan::stack::render::Part,
    scratch: &Path,
) -> Vec<Question> {
    let values_path = part.values.as_ref().map(|v| {
        let path = scratch.join(format!("{}.values.yaml", id.replace('/', "_")));
        std::fs::write(&path, &v.text).unwrap();
        path
    });
    let env = Rc::new(FuncEnv::deterministic(1, 1_700_000_000));
    let default_version = render_part(
        PartInput {
            name: part.name.clone(),
            chart,
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
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/shared/stack_oracle.py");
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

fn first_line_difference(want: &str, got: &str) -> Option<String> {
    if want == got {
        return None;
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

#[test]
fn shared_releases_render_like_helm() {
    let Some(shared) = shared::dir("stack releases vs helm") else {
        return;
    };
    let Some(python) = std::env::var_os("CAPSTAN_HELM_PYTHON")
        .map(PathBuf::from)
        .or_else(shared::oracle_python)
    else {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !ci,
            "stack releases vs helm: the Helm oracle venv is missing (scripts/oracle-env.sh)"
        );
        println!("SKIPPED stack releases vs helm: no Helm oracle venv (run scripts/oracle-env.sh)");
        return;
    };
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("stack-releases-oracle");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let objects = example_objects();
    let mut questions: Vec<Question> = Vec::new();
    for dir in releases(&shared) {
        let release = Release::load(&dir).unwrap();
        let tag = release.tag().tag();
        let parts = render_release(&release, &objects, &deterministic()).unwrap();
        let class_chart = release.cluster_class_chart().unwrap();
        let addon_charts = release.addon_charts().unwrap();
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
                &scratch,
            ));
        }
    }
    let requests: BTreeMap<String, serde_json::Value> = questions
        .iter()
        .map(|q| (q.id.clone(), q.request.clone()))
        .collect();
    let answers = ask_helm(&shared, &python, &requests, &scratch).expect("the oracle answers");
    let mut failures = Vec::new();
    for q in &questions {
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
    assert_eq!(questions.len(), 2 * 9, "nine parts across the four releases");
    assert!(failures.is_empty(), "parts that differ from Helm: {failures:?}");
}
