//! What the verify tests share: the files of testdata/verify, and the independent verifiers of
//! tests/oracle run with the python of scripts/verify-env.sh.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The python of scripts/verify-env.sh, or a skip (a failure under CI).
pub fn python(test: &str) -> Option<PathBuf> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/verify-env.sh");
    match Command::new(script).output() {
        Ok(out) if out.status.success() => Some(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())),
        Ok(out) => {
            let reason = format!("scripts/verify-env.sh: {}", String::from_utf8_lossy(&out.stderr));
            capstan_testenv::skip_or_fail(test, &reason);
            None
        }
        Err(e) => {
            capstan_testenv::skip_or_fail(test, &format!("scripts/verify-env.sh: {e}"));
            None
        }
    }
}

/// That python when it has sigstore-python (which verify-env.sh installs when it can).
pub fn sigstore_python(test: &str) -> Option<PathBuf> {
    let python = python(test)?;
    let has = Command::new(&python).args(["-c", "import sigstore"]).status();
    if !has.is_ok_and(|s| s.success()) {
        capstan_testenv::skip_or_fail(test, "sigstore-python is not installed in the verify venv");
        return None;
    }
    Some(python)
}

/// The JSON that `script` of tests/oracle prints when run by `python` on `files`, each written
/// into `dir` under its name first and passed as an argument in that order.
pub fn run_oracle(
    python: &Path,
    script_name: &str,
    dir: &Path,
    files: &[(&str, &[u8])],
) -> serde_json::Value {
    let paths: Vec<PathBuf> = files
        .iter()
        .map(|(name, bytes)| {
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            path
        })
        .collect();
    let out = Command::new(python)
        .arg(script(script_name))
        .args(&paths)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script_name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The path of a script of tests/oracle.
pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/oracle")
        .join(name)
}

/// The path of `path` under testdata/verify.
pub fn testdata(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/verify")
        .join(path)
}

/// The bytes of `path` under testdata/verify.
pub fn fixture(path: &str) -> Vec<u8> {
    let path = testdata(path);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
