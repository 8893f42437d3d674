//! What `helm template` checks before it renders, against real Helm v4.2.3: release names
//! (the pattern, 53/54 characters, uppercase, `_`, `..`, trailing `-`/`.`, blanks,
//! non-ASCII, empty), `--kube-version` texts (two-part, `v1`, `1.2.3.4`, `abc`, blanks,
//! pre-releases, builds, zero-prefixed, out of range) with what templates see of them and
//! how the chart's `kubeVersion` judges them, and which refusal wins when several apply.
//!
//! `testdata/checks/vectors.json` holds Helm's answers (`scripts/gen-check-vectors.sh`, from
//! `testdata/checks/gen_vectors.py`); each case runs `capstan render` as a user would, so no
//! Python is needed. Cases on a chart of the shared corpus skip without `../shared`.
//!
//! Two texts differ by design between the recorded answers and the `helm template` CLI: the
//! oracle reports a bad `--kube-version` without the CLI's `invalid kube version 'V': ` in
//! front, and words the missing-dependency refusal as its own wrapper does; the test expects
//! the CLI's words.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use capstan_stack::Version;
use capstan_stack::build::build;
use capstan_stack::render::render_release;
use serde::Deserialize;
use serde_json::Value as Json;

#[derive(Deserialize)]
struct Case {
    name: String,
    #[serde(default)]
    chart: BTreeMap<String, Json>,
    #[serde(default)]
    templates: BTreeMap<String, String>,
    #[serde(default)]
    files: BTreeMap<String, String>,
    values: Option<Json>,
    release: Option<String>,
    kube_version: Option<String>,
    corpus: Option<String>,
    expect: Expect,
}

#[derive(Deserialize)]
struct Expect {
    manifest: Option<String>,
    error: Option<String>,
}

const ORACLE_DEPENDENCY_PREFIX: &str = "chart dependencies are missing; run dependency update/build first: ";
const CLI_DEPENDENCY_PREFIX: &str = "An error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: ";

fn vectors() -> Vec<Case> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/checks/vectors.json");
    let text = std::fs::read_to_string(&path).expect("testdata/checks/vectors.json");
    serde_json::from_str(&text).expect("vectors parse")
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The case's chart, as the generator writes it: Chart.yaml fields as JSON (valid YAML).
fn write_chart(case: &Case, root: &Path) {
    let mut meta: BTreeMap<&str, Json> = BTreeMap::from([
        ("apiVersion", Json::from("v2")),
        ("name", Json::from("c")),
        ("version", Json::from("0.1.0")),
    ]);
    for (k, v) in &case.chart {
        meta.insert(k, v.clone());
    }
    std::fs::create_dir_all(root.join("templates")).unwrap();
    let chart_yaml: String = meta.iter().map(|(k, v)| format!("{k}: {v}\n")).collect();
    std::fs::write(root.join("Chart.yaml"), chart_yaml).unwrap();
    for (file, text) in &case.templates {
        std::fs::write(root.join("templates").join(file), text).unwrap();
    }
    for (file, text) in &case.files {
        std::fs::write(root.join(file), text).unwrap();
    }
}

/// What the `helm template` CLI prints for the recorded answer.
fn cli_error(case: &Case, error: &str) -> String {
    let error = error.trim_end();
    if let Some(missing) = error.strip_prefix(ORACLE_DEPENDENCY_PREFIX) {
        return format!("{CLI_DEPENDENCY_PREFIX}{missing}");
    }
    match &case.kube_version {
        Some(v) if error.starts_with("could not parse ") || error.starts_with("illegal ") => {
            format!("invalid kube version '{v}': {error}")
        }
        _ => error.to_string(),
    }
}

/// Runs `capstan render` for one case; `None` when it needs the shared corpus and that is
/// missing. Returns what differs from Helm.
fn run(case: &Case, work: &Path, shared: Option<&Path>) -> Option<Result<(), String>> {
    let dir = work.join(&case.name);
    std::fs::create_dir_all(&dir).unwrap();
    let chart = match &case.corpus {
        Some(id) => shared?.join("helm-corpus/charts").join(id),
        None => {
            let root = dir.join("c");
            write_chart(case, &root);
            root
        }
    };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_capstan"));
    cmd.current_dir(&dir).arg("render");
    if let Some(v) = &case.kube_version {
        cmd.arg(format!("--kube-version={v}"));
    }
    if let Some(values) = &case.values {
        let file = dir.join("values.json");
        std::fs::write(&file, values.to_string()).unwrap();
        cmd.arg("-f").arg(&file);
    }
    cmd.arg("--")
        .arg(case.release.as_deref().unwrap_or("release-name"))
        .arg(&chart);
    let out = cmd.output().expect("capstan runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    Some(match (&case.expect.error, &case.expect.manifest) {
        (Some(error), _) => {
            let expected = format!("Error: {}", cli_error(case, error));
            if out.status.success() {
                Err(format!("rendered, Helm refuses: {expected:?}"))
            } else if stderr.trim_end() != expected {
                Err(format!(
                    "refused with\n  {:?}\nHelm:\n  {expected:?}",
                    stderr.trim_end()
                ))
            } else {
                Ok(())
            }
        }
        (None, Some(manifest)) => {
            if !out.status.success() {
                Err(format!("refused, Helm renders: {}", stderr.trim_end()))
            } else if stdout.trim_end() != manifest.trim_end() {
                Err(format!("output\n{stdout}\nHelm:\n{manifest}"))
            } else {
                Ok(())
            }
        }
        (None, None) => Err("vector without an answer".into()),
    })
}

fn check_area(prefix: &str) {
    let shared = capstan_testenv::shared::dir("helm checks (corpus cases)");
    let work = scratch(&format!("helm-checks-{prefix}"));
    let cases: Vec<Case> = vectors()
        .into_iter()
        .filter(|c| c.name.starts_with(prefix))
        .collect();
    assert!(!cases.is_empty(), "no vectors named {prefix}*");
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in &cases {
        match run(case, &work, shared.as_deref()) {
            None => println!("SKIPPED {}: no shared corpus", case.name),
            Some(outcome) => {
                ran += 1;
                if let Err(why) = outcome {
                    failures.push(format!("{}: {why}", case.name));
                }
            }
        }
    }
    println!("helm checks {prefix}: {} of {ran} vectors differ", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn release_names_like_helm() {
    check_area("release-");
}

#[test]
fn kube_versions_like_helm() {
    check_area("kube-");
}

#[test]
fn kube_version_constraints_like_helm() {
    check_area("constraint-");
}

#[test]
fn refusal_order_like_helm() {
    check_area("order-");
}

/// values.schema.json refusals whose errors nest (allOf, anyOf, oneOf, $ref, groups): Helm
/// prints its validator's error tree, indented.
#[test]
fn schema_refusals_like_helm() {
    check_area("schema-");
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The example stack renamed: its ClusterClass release name `docker-<name>-1-30`.
fn long_named_release(letters: usize) -> capstan_stack::release::Release {
    let work = scratch(&format!("helm-checks-stack-{letters}"));
    let source = work.join("source");
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("stacks/example"),
        &source,
    );
    let csctl = source.join("csctl.yaml");
    let text = std::fs::read_to_string(&csctl).unwrap();
    let renamed = text.replace(
        "clusterStackName: example",
        &format!("clusterStackName: {}", "a".repeat(letters)),
    );
    assert_ne!(text, renamed);
    std::fs::write(&csctl, renamed).unwrap();
    build(&source, &Version::parse("v1").unwrap(), &work.join("release")).expect("the renamed stack builds")
}

/// A ClusterClass release name over 53 characters is refused as the cluster-stack operator's
/// `helm template` refuses it; 53 renders.
#[test]
fn cluster_class_release_names_like_helm() {
    let vectors = vectors();
    let expect = |name: &str| {
        let case = vectors.iter().find(|c| c.name == name).expect("vector");
        (case.release.clone().unwrap(), case.expect.error.clone())
    };
    let objects = capstan_testenv::shared::stack::example_objects();
    let options = capstan_testenv::shared::stack::deterministic();

    let (name, error) = expect("release-cluster-class-53");
    assert_eq!(error, None);
    let parts = render_release(&long_named_release(41), &objects, &options).expect("53 characters render");
    assert_eq!(parts[0].release_name, name);

    let (name, error) = expect("release-cluster-class-54");
    let release = long_named_release(42);
    let err = render_release(&release, &objects, &options).expect_err("54 characters are refused");
    assert_eq!(release.tag().cluster_class_release_name(), name);
    assert_eq!(
        err.to_string(),
        format!(
            "release {}: cluster-class (chart example-cluster-class): {}",
            release.tag().tag(),
            error.expect("Helm refuses 54 characters")
        )
    );
}
