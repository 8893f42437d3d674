//! The example ClusterClass chart in `stacks/example/cluster-class` rendered by capstan
//! (library and CLI) against Helm v4.2.3's output checked in under `stacks/example/expected`
//! (see `stacks/example/README.md` to regenerate it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use capstan_chart::coalesce::merge_tables;
use capstan_chart::manifest::{self, StreamOptions};
use capstan_chart::render::{RenderOptions, render};
use capstan_chart::{load, values};
use capstan_template::Value;

/// Whether mismatches fail the test (the differences are printed either way). On since the
/// engine renders the chart identically; turn off only while a known engine rework lands.
const ENFORCED: bool = true;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("stacks/example")
}

fn expected(name: &str) -> BTreeMap<String, String> {
    let text =
        std::fs::read_to_string(example().join("expected").join(name)).expect("expected output readable");
    serde_json::from_str(&text).expect("expected output parses")
}

fn check(what: &str, result: Result<(), String>) {
    match result {
        Ok(()) => println!("{what}: identical to Helm"),
        Err(why) if ENFORCED => panic!("{what}: {why}"),
        Err(why) => println!("{what}: NOT YET identical: {why}"),
    }
}

fn diff(want: &BTreeMap<String, String>, have: &BTreeMap<String, String>) -> Result<(), String> {
    if !want.keys().eq(have.keys()) {
        return Err(format!(
            "templates differ: {:?} vs {:?}",
            want.keys().collect::<Vec<_>>(),
            have.keys().collect::<Vec<_>>()
        ));
    }
    for (name, text) in want {
        if have[name] != *text {
            return Err(format!(
                "{name} differs:\n--- helm\n{text}\n--- capstan\n{}",
                have[name]
            ));
        }
    }
    Ok(())
}

fn render_with(values: &Value, opts: &RenderOptions) -> Result<BTreeMap<String, String>, String> {
    let chart = load::load(&example().join("cluster-class")).map_err(|e| format!("load: {e}"))?;
    render(&chart, values, opts).map_err(|e| format!("render: {e}"))
}

#[test]
fn example_chart_renders_like_helm() {
    let result = render_with(&Value::empty_map(), &RenderOptions::default())
        .and_then(|ours| diff(&expected("cluster-class.json"), &ours));
    check("default values", result);
}

#[test]
fn example_chart_with_custom_values_renders_like_helm() {
    let result = (|| {
        let text =
            std::fs::read_to_string(example().join("custom-values.yaml")).map_err(|e| e.to_string())?;
        let user = values::parse(&text, "custom-values.yaml").map_err(|e| e.to_string())?;
        let base = Value::empty_map();
        merge_tables(&base, &user);
        let opts = RenderOptions {
            release_name: "stack-v2".into(),
            namespace: "capi".into(),
            ..RenderOptions::default()
        };
        diff(
            &expected("cluster-class.custom.json"),
            &render_with(&base, &opts)?,
        )
    })();
    check("custom values", result);
}

#[test]
fn example_chart_stream_matches_helm_template() {
    let result = (|| {
        let chart = load::load(&example().join("cluster-class")).map_err(|e| format!("load: {e}"))?;
        let rendered =
            render(&chart, &Value::empty_map(), &RenderOptions::default()).map_err(|e| e.to_string())?;
        let manifests = manifest::build(&chart, &rendered).map_err(|e| e.to_string())?;
        let ours = manifest::stream(&chart, &manifests, &StreamOptions::default());
        let want = std::fs::read_to_string(example().join("expected/cluster-class.stream.yaml"))
            .map_err(|e| e.to_string())?;
        if ours.trim() == want.trim() {
            Ok(())
        } else {
            Err(format!("--- helm\n{want}\n--- capstan\n{ours}"))
        }
    })();
    check("helm template stream", result);
}

#[test]
fn cli_templates_json_matches_helm() {
    let output = Command::new(env!("CARGO_BIN_EXE_capstan"))
        .args(["render", "-o", "templates-json"])
        .arg(example().join("cluster-class"))
        .output()
        .expect("capstan runs");
    let result = if output.status.success() {
        let golden =
            std::fs::read_to_string(example().join("expected/cluster-class.json")).expect("golden readable");
        let ours = String::from_utf8_lossy(&output.stdout);
        // Byte-identical to the oracle's JSON file, not only equal as data.
        if ours.trim_end() == golden.trim_end() {
            Ok(())
        } else {
            Err("templates-json output differs from the golden file".to_string())
        }
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    };
    check("capstan render -o templates-json", result);
}

#[test]
fn loader_refuses_a_chart_escaping_symlink() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("symlink-escape");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("templates")).expect("temp chart");
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: c\nversion: 0.1.0\n",
    )
    .expect("Chart.yaml");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("/etc", dir.join("templates/etc")).expect("symlink");
        let err = load::load(&dir)
            .expect_err("escaping symlink refused")
            .to_string();
        assert!(
            err.contains("templates/etc") && err.contains("outside the chart"),
            "{err}"
        );
    }
}

#[test]
fn cli_show_only_filters_like_helm_template() {
    let run = |pattern: &str| {
        Command::new(env!("CARGO_BIN_EXE_capstan"))
            .args(["render", "-s", pattern])
            .arg(example().join("cluster-class"))
            .output()
            .expect("capstan runs")
    };
    let output = run("templates/docker-*");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let sources: Vec<&str> = text.lines().filter(|l| l.starts_with("# Source: ")).collect();
    assert_eq!(
        sources.len(),
        4,
        "one DockerClusterTemplate and three DockerMachineTemplates: {sources:?}"
    );
    assert!(sources.iter().all(|s| s.contains("/templates/docker-")));
    let missing = run("templates/nope.yaml");
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .contains("could not find template templates/nope.yaml in chart")
    );
}

#[test]
fn cli_values_from_stdin_match_helm() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_capstan"))
        .args(["render", "stack-v2"])
        .arg(example().join("cluster-class"))
        .args(["-n", "capi", "-f", "-", "-o", "templates-json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("capstan runs");
    let values = std::fs::read(example().join("custom-values.yaml")).expect("values readable");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&values)
        .expect("values written");
    let output = child.wait_with_output().expect("capstan finishes");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let ours: BTreeMap<String, String> = serde_json::from_slice(&output.stdout).expect("JSON output");
    check(
        "capstan render -f - (stdin values)",
        diff(&expected("cluster-class.custom.json"), &ours),
    );
}

#[test]
fn cli_checks_the_charts_kube_version_like_helm_template() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kube-version/c");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("templates")).expect("temp chart");
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: c\nversion: 0.1.0\nkubeVersion: \">= 1.40.0\"\n",
    )
    .expect("Chart.yaml");
    std::fs::write(dir.join("templates/a.yaml"), "kind: A\n").expect("template");
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_capstan"))
            .arg("render")
            .arg(&dir)
            .args(extra)
            .output()
            .expect("capstan runs")
    };
    let refused = run(&[]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr)
            .contains("chart requires kubeVersion: >= 1.40.0 which is incompatible with Kubernetes v1.36.0")
    );
    let accepted = run(&["--kube-version", "v1.41.2"]);
    assert!(
        accepted.status.success(),
        "{}",
        String::from_utf8_lossy(&accepted.stderr)
    );
}
