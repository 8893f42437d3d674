//! Release builds for x86-64 Linux link the functions a render runs next to each other, in the
//! order of `build/hot-functions.txt` (written by `scripts/gen-hot-functions.sh`). A one-shot
//! `capstan render` then faults in a few pages of code instead of pages scattered over the
//! whole binary (docs/benchmarks.md, "Cold start").
//!
//! Only when the linker takes the option: lld does (the default linker of Rust on this target),
//! GNU ld does not, so a small program is linked with it first and the option is left out if
//! that fails. Names missing from the build (the list is of mangled names, which change with
//! the toolchain and the dependencies) are skipped by the linker.

use std::env;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const ORDER_FILE: &str = "build/hot-functions.txt";

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed={ORDER_FILE}");
    println!("cargo::rerun-if-env-changed=RUSTC_LINKER");
    // Set to build the default order, to measure what the ordering saves (scripts/bench-cold.sh).
    println!("cargo::rerun-if-env-changed=CAPSTAN_NO_CODE_ORDER");
    if env::var_os("CAPSTAN_NO_CODE_ORDER").is_some() {
        return;
    }
    let release = env::var("PROFILE").is_ok_and(|p| p == "release");
    let target = env::var("TARGET").is_ok_and(|t| t == "x86_64-unknown-linux-gnu");
    let Some(dir) = env::var_os("CARGO_MANIFEST_DIR") else {
        return;
    };
    let order = PathBuf::from(dir).join(ORDER_FILE);
    if !release || !target || !order.is_file() {
        return;
    }
    let args = [
        format!("-Wl,--symbol-ordering-file={}", order.display()),
        "-Wl,--no-warn-symbol-ordering".to_string(),
    ];
    if !links_with(&args) {
        println!(
            "cargo::warning=the linker does not take --symbol-ordering-file: code is linked in its default order"
        );
        return;
    }
    for kind in ["bins", "examples"] {
        for arg in &args {
            println!("cargo::rustc-link-arg-{kind}={arg}");
        }
    }
}

/// Whether an empty program links with these linker arguments, under the same rustc, linker
/// and flags as the crate.
fn links_with(link_args: &[String]) -> bool {
    let Some(out_dir) = env::var_os("OUT_DIR") else {
        return false;
    };
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let mut cmd = Command::new(rustc);
    cmd.args([
        "--crate-type=bin",
        "--crate-name=link_probe",
        "--edition=2021",
        "-o",
    ])
    .arg(Path::new(&out_dir).join("link_probe"))
    .arg("-");
    if let Ok(flags) = env::var("CARGO_ENCODED_RUSTFLAGS") {
        cmd.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    }
    if let Some(linker) = env::var_os("RUSTC_LINKER") {
        cmd.arg("-C").arg(format!("linker={}", linker.to_string_lossy()));
    }
    for arg in link_args {
        cmd.arg("-C").arg(format!("link-arg={arg}"));
    }
    let Ok(mut child) = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    if let Some(mut stdin) = child.stdin.take()
        && stdin.write_all(b"fn main() {}\n").is_err()
    {
        return false;
    }
    child.wait().is_ok_and(|status| status.success())
}
