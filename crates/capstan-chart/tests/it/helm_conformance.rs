//! Conformance against real Helm v4.2.3 on the corpus in `../shared/helm-corpus`:
//! every template output must be byte-identical to Helm's golden output; templates Helm
//! itself renders non-deterministically (generated secrets, certificates, timestamps) are
//! compared after YAML parsing with strings masked. Charts Helm refuses (`failing/`) must
//! fail with Helm's error text.
//!
//! Prints a per-chart table, a histogram of failure causes and
//! `helm conformance: N/130 charts identical`. The test fails only when fewer charts than
//! the recorded floor are identical (raise the floor as the engine improves), never because
//! an engine feature is still missing. `CAPSTAN_CONFORMANCE_FILTER=substring` narrows the run.

use std::collections::BTreeMap;
use std::path::Path;

use capstan_chart::compiled::CompiledChart;
use capstan_chart::render::RenderOptions;
use capstan_chart::{Chart, load};
use capstan_go::value::GoType;
use capstan_template::funcs::{Func, FuncMap};
use capstan_template::{Templates, Value};

use capstan_testenv::shared::compare::{first_difference, structurally_equal};

/// Charts known to be identical; a drop below this is a regression.
const IDENTICAL_FLOOR: usize = 130;
/// Expected failures reproduced with Helm's exact error text; a drop is a regression.
const FAILING_FLOOR: usize = 13;

#[test]
fn helm_corpus_conformance() {
    let Some(shared) = capstan_testenv::shared::dir("helm conformance") else {
        return;
    };
    let corpus = shared.join("helm-corpus");
    let filter = std::env::var("CAPSTAN_CONFORMANCE_FILTER").unwrap_or_default();
    let quiet_panics = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));

    let entries = capstan_testenv::shared::corpus(&corpus);
    let mut rows = Vec::new();
    for entry in entries.iter().filter(|e| e.id.contains(&filter)) {
        let outcome = capstan_testenv::shared::guarded(|| check_chart(&corpus, entry));
        rows.push((entry.id.clone(), outcome));
    }
    let failures = capstan_testenv::shared::expected_failures(&corpus);
    let mut failing_rows = Vec::new();
    for failure in failures.iter().filter(|f| f.id.contains(&filter)) {
        let outcome = capstan_testenv::shared::guarded(|| check_failure(&corpus, failure));
        failing_rows.push((failure.id.clone(), outcome));
    }
    std::panic::set_hook(quiet_panics);

    println!("{:<110} result", "chart");
    for (id, outcome) in rows.iter().chain(failing_rows.iter()) {
        match outcome {
            Ok(()) => println!("{id:<110} identical"),
            Err(why) => println!(
                "{id:<110} DIFFERENT: {}",
                truncate(&why.replace('\n', "\\n"), 300)
            ),
        }
    }
    let mut causes: BTreeMap<String, usize> = BTreeMap::new();
    for (_, outcome) in rows.iter().chain(failing_rows.iter()) {
        if let Err(why) = outcome {
            *causes.entry(cause(why)).or_default() += 1;
        }
    }
    let mut causes: Vec<_> = causes.into_iter().collect();
    causes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    println!("\nfailure causes (charts):");
    for (cause, n) in &causes {
        println!("{n:>4}  {cause}");
    }
    census(&corpus, &entries, &filter);
    let identical = rows.iter().filter(|(_, o)| o.is_ok()).count();
    let failing_ok = failing_rows.iter().filter(|(_, o)| o.is_ok()).count();
    println!("helm conformance: {identical}/{} charts identical", rows.len());
    println!(
        "helm conformance: {failing_ok}/{} expected failures reproduced",
        failing_rows.len()
    );
    if filter.is_empty() {
        // The floors start at zero and only ever rise.
        #[allow(clippy::absurd_extreme_comparisons)]
        let regressed = identical < IDENTICAL_FLOOR || failing_ok < FAILING_FLOOR;
        assert!(
            !regressed,
            "conformance regressed: {identical} < {IDENTICAL_FLOOR} or {failing_ok} < {FAILING_FLOOR}"
        );
    }
}

/// Every function the corpus uses that the engine does not define, with the number of
/// charts needing it and how many charts it alone blocks (a parse error stops at the first
/// undefined function, so the causes above only show one per chart).
fn census(corpus: &Path, entries: &[capstan_testenv::shared::CorpusEntry], filter: &str) {
    let mut needed: BTreeMap<String, usize> = BTreeMap::new();
    let mut alone: BTreeMap<String, usize> = BTreeMap::new();
    for entry in entries.iter().filter(|e| e.id.contains(filter)) {
        let Ok(chart) = load::load(&corpus.join("charts").join(&entry.id)) else {
            continue;
        };
        let missing = missing_functions(&chart);
        for f in &missing {
            *needed.entry(f.clone()).or_default() += 1;
        }
        if let [only] = missing.as_slice() {
            *alone.entry(only.clone()).or_default() += 1;
        }
    }
    let mut needed: Vec<_> = needed.into_iter().collect();
    needed.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    println!("\nundefined functions (charts using it / charts blocked by it alone):");
    for (f, n) in needed {
        println!("{n:>4} {:>4}  {f}", alone.get(&f).copied().unwrap_or(0));
    }
}

/// The undefined functions of all templates of `chart` and its subcharts: parse, and on
/// `function "x" not defined` define a stub `x` and parse again.
fn missing_functions(chart: &Chart) -> Vec<String> {
    fn texts(chart: &Chart, out: &mut Vec<String>) {
        out.extend(
            chart
                .templates
                .iter()
                .map(|t| String::from_utf8_lossy(&t.data).into_owned()),
        );
        for sub in &chart.dependencies {
            texts(sub, out);
        }
    }
    let mut all = Vec::new();
    texts(chart, &mut all);
    let mut funcs = FuncMap::helm();
    let mut missing = Vec::new();
    for (i, text) in all.iter().enumerate() {
        for _ in 0..64 {
            let mut set = Templates::new(funcs.clone());
            let Err(e) = set.parse(&format!("t{i}"), text) else {
                break;
            };
            let msg = e.helm_message();
            let Some(name) = msg.split("function \"").nth(1).and_then(|r| r.split('"').next()) else {
                break;
            };
            if !msg.contains("not defined") || funcs.contains(name) {
                break;
            }
            missing.push(name.to_string());
            funcs.insert(name, Func::pure_variadic(&[], GoType::Any, |_| Ok(Value::Nil)));
        }
    }
    missing.sort();
    missing.dedup();
    missing
}

fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// A short, groupable reason for a failure (which feature is missing or wrong).
fn cause(why: &str) -> String {
    let why = why.split(" [Helm: ").next().unwrap_or(why);
    if let Some(at) = why.find("function \"") {
        let rest = &why[at..];
        let end = rest[10..].find('"').map_or(rest.len(), |i| i + 11);
        return format!("missing {}", &rest[..end]);
    }
    if why.starts_with("PANIC") {
        return truncate(why, 80);
    }
    if let Some(rest) = why.strip_prefix("load: ") {
        return format!("load: {}", truncate(rest, 80));
    }
    if why.contains("not implemented") || why.contains("not wired") {
        let at = why.find("not ").unwrap_or(0);
        let start = why[..at].rfind([':', '(']).map_or(0, |i| i + 1);
        return truncate(why[start..].trim(), 80);
    }
    if let Some((_, rest)) = why.split_once("render: ") {
        // Keep the last line of a Helm-style error: the actual reason.
        let last = rest.lines().last().unwrap_or(rest).trim();
        return format!("render error: {}", truncate(last, 80));
    }
    if why.contains("template sets differ") {
        return "template sets differ".into();
    }
    "output differs".into()
}

fn check_chart(corpus: &Path, entry: &capstan_testenv::shared::CorpusEntry) -> Result<(), String> {
    let golden_path = corpus.join("golden").join(format!("{}.json", entry.id));
    let golden: BTreeMap<String, String> =
        serde_json::from_str(&std::fs::read_to_string(golden_path).map_err(|e| format!("golden: {e}"))?)
            .map_err(|e| format!("golden: {e}"))?;
    let chart = load::load(&corpus.join("charts").join(&entry.id)).map_err(|e| format!("load: {e}"))?;
    // Compiled like the operator renders: the render takes the template set parsed at compile time.
    let ours = CompiledChart::new(chart)
        .and_then(|c| c.render(&Value::empty_map(), &RenderOptions::default()))
        .map_err(|e| format!("render: {e}"))?;
    if !golden.keys().eq(ours.keys()) {
        let missing: Vec<_> = golden.keys().filter(|k| !ours.contains_key(*k)).collect();
        let extra: Vec<_> = ours.keys().filter(|k| !golden.contains_key(*k)).collect();
        return Err(format!(
            "template sets differ: missing {missing:?}, extra {extra:?}"
        ));
    }
    for (name, want) in &golden {
        let have = &ours[name];
        if have == want {
            continue;
        }
        if entry.nondeterministic_templates.iter().any(|t| t == name) {
            structurally_equal(want, have).map_err(|e| format!("{name}: {e}"))?;
            continue;
        }
        return Err(format!("{name}: {}", first_difference(want, have)));
    }
    Ok(())
}

/// A chart Helm refuses must fail with Helm's error text (load or render).
fn check_failure(corpus: &Path, failure: &capstan_testenv::shared::ExpectedFailure) -> Result<(), String> {
    let (stage, error) = match load::load(&corpus.join("failing").join(&failure.id)) {
        Err(e) => ("load", e.to_string()),
        Ok(chart) => match CompiledChart::new(chart)
            .and_then(|c| c.render(&Value::empty_map(), &RenderOptions::default()))
        {
            Err(e) => ("render", e.to_string()),
            Ok(_) => return Err(format!("rendered, but Helm fails with: {}", failure.helm_error)),
        },
    };
    if capstan_testenv::shared::one_line(&error) == failure.helm_error {
        Ok(())
    } else {
        Err(format!("{stage}: {error} [Helm: {}]", failure.helm_error))
    }
}
