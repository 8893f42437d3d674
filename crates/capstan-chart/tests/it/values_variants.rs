//! Values variants: corpus charts that ship `ci/*.yaml` values files are rendered with each of
//! them (as `helm template -f ci/x.yaml` would) and compared with real Helm v4.2.3, asked at
//! test time through the oracle venv and cached under the target directory.
//!
//! Templates Helm renders non-deterministically (the corpus lists them for default values; for
//! a variant, those whose output differs between two Helm runs) are compared structurally. Prints
//! `values variants: N/M identical`; fails only below the recorded floor.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use capstan_chart::render::{RenderOptions, render};
use capstan_chart::{load, values};

use capstan_testenv::shared::compare::{first_difference, structurally_equal};

/// Variants known to be identical; a drop below this is a regression.
const IDENTICAL_FLOOR: usize = 169;

#[derive(serde::Deserialize)]
struct Answer {
    output: Option<BTreeMap<String, String>>,
    error: Option<String>,
}

/// `chart id/ci/file.yaml` → (chart dir, values file) for every corpus chart with `ci/`.
fn variants(
    corpus: &Path,
    entries: &[capstan_testenv::shared::CorpusEntry],
) -> BTreeMap<String, (PathBuf, PathBuf)> {
    let mut out = BTreeMap::new();
    for entry in entries {
        let chart = corpus.join("charts").join(&entry.id);
        let Ok(files) = std::fs::read_dir(chart.join("ci")) else {
            continue;
        };
        for file in files.flatten() {
            let path = file.path();
            if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                let name = path
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                out.insert(format!("{}/ci/{name}", entry.id), (chart.clone(), path));
            }
        }
    }
    out
}

/// Helm's answers from run number `run` (each run is cached on its own).
fn helm_answers(
    python: &Path,
    shared: &Path,
    request: &BTreeMap<String, (PathBuf, PathBuf)>,
    label: &str,
    run: usize,
) -> Result<BTreeMap<String, Answer>, String> {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let cache = tmp.join(format!("helm-{label}-{run}.json"));
    if let Ok(text) = std::fs::read_to_string(&cache)
        && let Ok(cached) = serde_json::from_str::<BTreeMap<String, Answer>>(&text)
        && request.keys().all(|k| cached.contains_key(k))
    {
        return Ok(cached);
    }
    let request_file = tmp.join(format!("helm-{label}-request.json"));
    std::fs::write(
        &request_file,
        serde_json::to_string(request).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let script = Path::new(capstan_testenv::REPO_ROOT).join("tests/oracle/variants_oracle.py");
    let output = Command::new(python)
        .arg(script)
        .arg(shared)
        .arg(&request_file)
        .output()
        .map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let answers = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let _ = std::fs::write(&cache, &text);
    Ok(answers)
}

fn check(
    chart_dir: &Path,
    values_file: &Path,
    answer: &Answer,
    nondeterministic: &[String],
) -> Result<(), String> {
    let ours = load::load(chart_dir)
        .map_err(|e| format!("load: {e}"))
        .and_then(|chart| {
            let text = std::fs::read_to_string(values_file).map_err(|e| e.to_string())?;
            let user = values::parse(&text, &values_file.display().to_string()).map_err(|e| e.to_string())?;
            render(&chart, &user, &RenderOptions::default()).map_err(|e| format!("render: {e}"))
        });
    let want = match (&answer.output, &answer.error) {
        (Some(want), _) => want,
        (None, Some(err)) => {
            return match ours {
                Err(ours)
                    if capstan_testenv::shared::one_line(&ours)
                        .contains(&capstan_testenv::shared::one_line(err)) =>
                {
                    Ok(())
                }
                Err(ours) => Err(format!("both fail, differently: {ours} [Helm: {err}]")),
                Ok(_) => Err(format!("rendered, but Helm fails: {err}")),
            };
        }
        (None, None) => return Err("empty oracle answer".into()),
    };
    let ours = ours?;
    if !want.keys().eq(ours.keys()) {
        return Err("template sets differ".into());
    }
    for (name, w) in want {
        let h = &ours[name];
        if h == w {
            continue;
        }
        if nondeterministic.iter().any(|t| t == name) {
            structurally_equal(w, h).map_err(|e| format!("{name}: {e}"))?;
            continue;
        }
        return Err(format!("{name}: {}", first_difference(w, h)));
    }
    Ok(())
}

#[test]
fn values_variants_render_like_helm() {
    let Some(shared_dir) = capstan_testenv::shared::dir("values variants") else {
        return;
    };
    let Some(python) = capstan_testenv::shared::oracle_python() else {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !ci,
            "values variants: the Helm oracle venv is missing (scripts/oracle-env.sh)"
        );
        println!("SKIPPED values variants: no Helm oracle venv (run scripts/oracle-env.sh)");
        return;
    };
    let corpus = shared_dir.join("helm-corpus");
    let entries = capstan_testenv::shared::corpus(&corpus);
    let request = variants(&corpus, &entries);
    let (answers, again) = match (
        helm_answers(&python, &shared_dir, &request, "values-variants", 0),
        helm_answers(&python, &shared_dir, &request, "values-variants", 1),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(why), _) | (_, Err(why)) => panic!("values variants: the oracle failed: {why}"),
    };
    let identical = compare_all(&request, &answers, &again, &entries);
    println!("values variants: {identical}/{} identical", request.len());
    #[allow(clippy::absurd_extreme_comparisons)]
    let regressed = identical < IDENTICAL_FLOOR;
    assert!(
        !regressed,
        "values variants regressed: {identical} < {IDENTICAL_FLOOR}"
    );
}

/// Compares capstan with Helm for every request; prints one line each; returns how many are
/// identical.
fn compare_all(
    request: &BTreeMap<String, (PathBuf, PathBuf)>,
    answers: &BTreeMap<String, Answer>,
    again: &BTreeMap<String, Answer>,
    entries: &[capstan_testenv::shared::CorpusEntry],
) -> usize {
    let quiet_panics = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut identical = 0;
    for (key, (chart, file)) in request {
        let id = key.split('/').next().unwrap_or_default();
        let mut nondeterministic = entries
            .iter()
            .find(|e| e.id == id)
            .map(|e| e.nondeterministic_templates.clone())
            .unwrap_or_default();
        if let (Some(Answer { output: Some(a), .. }), Some(Answer { output: Some(b), .. })) =
            (answers.get(key), again.get(key))
        {
            nondeterministic.extend(
                a.iter()
                    .filter(|(k, v)| b.get(*k) != Some(v))
                    .map(|(k, _)| k.clone()),
            );
        }
        let outcome = match answers.get(key) {
            Some(answer) => {
                capstan_testenv::shared::guarded(|| check(chart, file, answer, &nondeterministic))
            }
            None => Err("no answer from the oracle".into()),
        };
        match outcome {
            Ok(()) => {
                identical += 1;
                println!("{key:<120} identical");
            }
            Err(why) => println!("{key:<120} DIFFERENT: {}", why.replace('\n', "\\n")),
        }
    }
    std::panic::set_hook(quiet_panics);
    identical
}

/// Variants where the user holds values for subcharts: the issue-22 class (nulls a chart
/// writes for its subcharts, nulls in a subchart's own values) only shows then.
const SUBCHART_KEY: &str = "capstanProbe";

/// The user values giving every subchart (by the name its parent knows it by, nested ones
/// too) one harmless key; `None` for a chart without subcharts.
fn subchart_values(chart: &capstan_chart::Chart) -> Option<serde_json::Value> {
    let mut out = serde_json::Map::new();
    for sub in &chart.dependencies {
        let mut names: Vec<String> = chart
            .metadata
            .dependencies
            .iter()
            .filter(|d| d.name == sub.name())
            .map(|d| {
                if d.alias.is_empty() {
                    d.name.clone()
                } else {
                    d.alias.clone()
                }
            })
            .collect();
        if names.is_empty() {
            names.push(sub.name().to_string());
        }
        let mut table = match subchart_values(sub) {
            Some(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        table.insert(SUBCHART_KEY.into(), serde_json::Value::from("harmless"));
        for name in names {
            out.insert(name, serde_json::Value::Object(table.clone()));
        }
    }
    (!out.is_empty()).then_some(serde_json::Value::Object(out))
}

/// Floor of the subchart variants known to be identical.
const SUBCHART_IDENTICAL_FLOOR: usize = 66;

#[test]
fn corpus_charts_with_subchart_values_render_like_helm() {
    let Some(shared_dir) = capstan_testenv::shared::dir("subchart values variants") else {
        return;
    };
    let Some(python) = capstan_testenv::shared::oracle_python() else {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !ci,
            "subchart values variants: the Helm oracle venv is missing (scripts/oracle-env.sh)"
        );
        println!("SKIPPED subchart values variants: no Helm oracle venv (run scripts/oracle-env.sh)");
        return;
    };
    let corpus = shared_dir.join("helm-corpus");
    let entries = capstan_testenv::shared::corpus(&corpus);
    let values_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("subchart-values");
    std::fs::create_dir_all(&values_dir).unwrap();
    let mut request = BTreeMap::new();
    for entry in &entries {
        let dir = corpus.join("charts").join(&entry.id);
        let Ok(chart) = load::load(&dir) else { continue };
        let Some(user) = subchart_values(&chart) else {
            continue;
        };
        let file = values_dir.join(format!("{}.yaml", entry.id.replace('/', "_")));
        // JSON is YAML: Helm and capstan read the same file.
        std::fs::write(&file, serde_json::to_string_pretty(&user).unwrap()).unwrap();
        request.insert(format!("{}/subchart-values", entry.id), (dir, file));
    }
    let (answers, again) = match (
        helm_answers(&python, &shared_dir, &request, "subchart-values", 0),
        helm_answers(&python, &shared_dir, &request, "subchart-values", 1),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(why), _) | (_, Err(why)) => panic!("subchart values variants: the oracle failed: {why}"),
    };
    let identical = compare_all(&request, &answers, &again, &entries);
    println!(
        "subchart values variants: {identical}/{} identical",
        request.len()
    );
    assert!(
        identical >= SUBCHART_IDENTICAL_FLOOR,
        "subchart values variants regressed: {identical} < {SUBCHART_IDENTICAL_FLOOR}"
    );
}
