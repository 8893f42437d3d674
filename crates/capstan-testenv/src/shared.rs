//! Helpers for tests that use `../shared` (the Helm corpus and tools beside the checkout).
//! A user's checkout has none: tests then skip with a printed reason, except under
//! `CI=true`, where it must exist.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};

pub mod compare;
pub mod stack;

use serde::Deserialize;

/// The shared directory, or `None` (after printing why) when the test should skip.
/// Looks at `$CAPSTAN_SHARED_DIR`, then `../shared` beside the checkout, then `../../shared`
/// (a git worktree kept in a sibling directory of the main checkout).
pub fn dir(test: &str) -> Option<PathBuf> {
    let manifest = PathBuf::from(crate::REPO_ROOT);
    let candidates = std::env::var_os("CAPSTAN_SHARED_DIR")
        .map(PathBuf::from)
        .into_iter()
        .chain([
            manifest.join("..").join("shared"),
            manifest.join("../..").join("shared"),
        ]);
    for path in candidates {
        if path.join("helm-corpus").is_dir() {
            return Some(path);
        }
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    assert!(!ci, "{test}: ../shared is missing, and CI=true requires it");
    println!("SKIPPED {test}: ../shared not found (it holds the Helm corpus; CI provides it)");
    None
}

/// One chart of `helm-corpus/corpus.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct CorpusEntry {
    pub id: String,
    #[serde(default)]
    pub nondeterministic_templates: Vec<String>,
    #[serde(default)]
    pub helm_template_cli_would_fail: bool,
}

/// One chart of `helm-corpus/expected_failures.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct ExpectedFailure {
    pub id: String,
    pub helm_error: String,
}

pub fn corpus(corpus_dir: &Path) -> Vec<CorpusEntry> {
    let text = std::fs::read_to_string(corpus_dir.join("corpus.json")).expect("corpus.json readable");
    serde_json::from_str(&text).expect("corpus.json parses")
}

pub fn expected_failures(corpus_dir: &Path) -> Vec<ExpectedFailure> {
    let text = std::fs::read_to_string(corpus_dir.join("expected_failures.json"))
        .expect("expected_failures.json readable");
    serde_json::from_str(&text).expect("expected_failures.json parses")
}

/// Helm's multi-line errors as the corpus stores them (newlines as ` | `).
pub fn one_line(error: &str) -> String {
    error.replace('\n', " | ")
}

/// The python of the Helm oracle venv (`scripts/oracle-env.sh`), if it already exists;
/// tests never create it.
pub fn oracle_python() -> Option<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    let python = cache.join("capstan/helm-venv/bin/python");
    python.is_file().then_some(python)
}

/// Runs `f`, turning a panic into an error string, so one chart that trips an engine bug
/// does not hide the results of the others.
pub fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(format!("PANIC: {msg}"))
        }
    }
}

/// A list file of names, one per line (`#` comments and blank lines ignored); empty when absent.
/// The known-failures lists of the differential tests use it.
pub fn name_list(path: &Path) -> std::collections::BTreeSet<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect()
}
