//! The `helm template` stream (documents split, kind-sorted, `# Source:` headers) against
//! what real Helm prints for the corpus charts. Helm's streams are generated at test time
//! with the oracle venv (`scripts/oracle-env.sh`) and cached under the target directory;
//! without the venv or `../shared` the test skips with a printed reason.
//!
//! Charts the `helm template` CLI refuses are left out; charts with non-deterministic
//! templates (generated secrets, certificates) are compared document by document, structurally
//! where a document differs. Prints `render stream: N/M charts identical`; fails only below the floor.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use capstan_chart::load;
use capstan_chart::manifest::{self, StreamOptions};
use capstan_chart::render::{RenderOptions, render};
use capstan_template::Value;

/// Charts whose stream is known to be identical; a drop below this is a regression.
const IDENTICAL_FLOOR: usize = 125;

#[derive(serde::Deserialize)]
struct Answer {
    manifest: Option<String>,
    error: Option<String>,
}

/// The shared folder and the Helm oracle's python, or `None` after saying which is missing.
fn shared_and_oracle(test: &str) -> Option<(PathBuf, PathBuf)> {
    let shared = capstan_testenv::shared::dir(test)?;
    let Some(python) = capstan_testenv::shared::oracle_python() else {
        println!("SKIPPED {test}: no oracle venv (run scripts/oracle-env.sh to create it)");
        return None;
    };
    Some((shared, python))
}

#[test]
fn helm_template_stream_matches_helm() {
    let Some((shared, python)) = shared_and_oracle("render stream") else {
        return;
    };
    let corpus = shared.join("helm-corpus");
    let filter = std::env::var("CAPSTAN_CONFORMANCE_FILTER").unwrap_or_default();
    let entries: Vec<_> = capstan_testenv::shared::corpus(&corpus)
        .into_iter()
        .filter(|e| !e.helm_template_cli_would_fail)
        .filter(|e| e.id.contains(&filter))
        .collect();
    let charts: BTreeMap<String, PathBuf> = entries
        .iter()
        .map(|e| (e.id.clone(), corpus.join("charts").join(&e.id)))
        .collect();
    let answers = match helm_streams(&python, &shared, &charts) {
        Ok(a) => a,
        Err(why) => {
            println!("SKIPPED render stream: the oracle failed: {why}");
            return;
        }
    };

    let quiet_panics = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut identical = 0;
    for (id, path) in &charts {
        let outcome = match answers.get(id) {
            Some(answer) => {
                let structural = entries
                    .iter()
                    .any(|e| &e.id == id && !e.nondeterministic_templates.is_empty());
                capstan_testenv::shared::guarded(|| compare(path, answer, structural))
            }
            None => Err("no answer from the oracle".into()),
        };
        match outcome {
            Ok(()) => {
                identical += 1;
                println!("{id:<110} identical");
            }
            Err(why) => println!("{id:<110} DIFFERENT: {}", why.replace('\n', "\\n")),
        }
    }
    std::panic::set_hook(quiet_panics);
    println!("render stream: {identical}/{} charts identical", charts.len());
    if filter.is_empty() {
        #[allow(clippy::absurd_extreme_comparisons)]
        let regressed = identical < IDENTICAL_FLOOR;
        assert!(
            !regressed,
            "stream conformance regressed: {identical} < {IDENTICAL_FLOOR}"
        );
    }
}

/// Our stream for the chart (no hooks, no CRDs: what the oracle's install returns).
fn compare(path: &Path, answer: &Answer, structural: bool) -> Result<(), String> {
    let ours = load::load(path)
        .map_err(|e| format!("load: {e}"))
        .and_then(|chart| {
            let rendered = render(&chart, &Value::empty_map(), &RenderOptions::default())
                .map_err(|e| format!("render: {e}"))?;
            let manifests = manifest::build(&chart, &rendered).map_err(|e| format!("manifest: {e}"))?;
            let opts = StreamOptions {
                no_hooks: true,
                ..StreamOptions::default()
            };
            Ok(manifest::stream(&chart, &manifests, &opts))
        });
    match (ours, &answer.manifest, &answer.error) {
        (Ok(ours), Some(want), _) => {
            if ours.trim() == want.trim() {
                return Ok(());
            }
            if structural {
                return same_documents(want.trim(), ours.trim());
            }
            for (i, (w, h)) in want.trim().lines().zip(ours.trim().lines()).enumerate() {
                if w != h {
                    return Err(format!("line {}: want {w:?}, got {h:?}", i + 1));
                }
            }
            Err("length differs".into())
        }
        (Ok(_), None, Some(err)) => Err(format!("rendered, but Helm fails: {err}")),
        (Err(ours), _, Some(err))
            if capstan_testenv::shared::one_line(&ours).contains(&capstan_testenv::shared::one_line(err)) =>
        {
            Ok(())
        }
        (Err(ours), _, _) => Err(ours),
        (Ok(_), None, None) => Err("empty oracle answer".into()),
    }
}

/// For charts with generated content: the same documents in the same order, each identical or
/// equal in structure (generated strings masked).
fn same_documents(want: &str, ours: &str) -> Result<(), String> {
    let (w, o): (Vec<&str>, Vec<&str>) = (want.split("\n---\n").collect(), ours.split("\n---\n").collect());
    if w.len() != o.len() {
        return Err(format!("{} documents vs {}", w.len(), o.len()));
    }
    for (a, b) in w.iter().zip(&o) {
        if a != b {
            capstan_testenv::shared::compare::structurally_equal(a, b)?;
        }
    }
    Ok(())
}

/// Helm's streams for `charts`, from the cache when it has every chart.
fn helm_streams(
    python: &Path,
    shared: &Path,
    charts: &BTreeMap<String, PathBuf>,
) -> Result<BTreeMap<String, Answer>, String> {
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("helm-streams.json");
    if let Ok(text) = std::fs::read_to_string(&cache)
        && let Ok(cached) = serde_json::from_str::<BTreeMap<String, Answer>>(&text)
        && charts.keys().all(|k| cached.contains_key(k))
    {
        return Ok(cached);
    }
    let request = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("helm-streams-request.json");
    std::fs::write(
        &request,
        serde_json::to_string(charts).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let script = Path::new(capstan_testenv::REPO_ROOT).join("tests/oracle/stream_oracle.py");
    let output = Command::new(python)
        .arg(script)
        .arg(shared)
        .arg(&request)
        .output()
        .map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let answers: BTreeMap<String, Answer> = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    // Only a complete run is cached (a filtered run answers a subset).
    let _ = std::fs::write(&cache, &text);
    Ok(answers)
}

/// Where `---` separators meet whitespace Go's `\s` does not cover (a no-break space after a
/// value) and text glued to them: the split must be Helm's to the byte.
#[test]
fn separator_edge_cases_match_helm() {
    let Some((shared, python)) = shared_and_oracle("render stream separators") else {
        return;
    };
    let chart = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("separator-edges");
    std::fs::create_dir_all(chart.join("templates")).expect("create the chart");
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: edges\nversion: 0.1.0\n",
    )
    .expect("write Chart.yaml");
    let template =
        "a: 1\n---\nb: 2 \n \t\n---c: 3\n---\ne: 5\u{a0}\n---\u{a0}f: 6\n--- \n---\ng: 7\n\n\n---\n\n";
    std::fs::write(chart.join("templates/edges.yaml"), template).expect("write the template");

    let output = Command::new(&python)
        .arg(shared.join("tools/helm_oracle.py"))
        .arg(&chart)
        .arg("--stream")
        .output()
        .expect("run the Helm oracle");
    let answer: Answer = serde_json::from_slice(&output.stdout).expect("the oracle's JSON answer");
    assert!(
        answer.error.is_none(),
        "Helm refused the chart: {:?}",
        answer.error
    );
    let want = answer.manifest.expect("Helm's stream");
    // The corpus comparison, byte for byte (no generated content here).
    compare(
        &chart,
        &Answer {
            manifest: Some(want.clone()),
            error: None,
        },
        false,
    )
    .unwrap_or_else(|why| panic!("stream differs from Helm's: {why}\nHelm:\n{want}"));
    assert!(
        want.contains("e: 5\u{a0}\n"),
        "the no-break space stays in its document: {want:?}"
    );
}
