//! A CPU profile of one phase (issue 36 §4): `perf record` sampling the operator and the
//! workload API servers while the phase runs, then `perf report` by thread name and by binary
//! and symbol (flat: the
//! release binary has symbols but no unwinding tables to walk, and a flat profile answers
//! "where does the CPU go" for these processes). Optional: `--perf-dir`; without `perf` on
//! the machine it says so and the run goes on.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::Context as _;

/// Samples a second per process, enough for a phase of minutes.
const FREQUENCY: &str = "199";

pub struct Recording {
    child: Child,
    data: PathBuf,
    report: PathBuf,
}

/// Starts sampling `pids` (one `perf record`, all of them) into `dir/<name>.data`; `None`
/// (said on stderr) when perf cannot start.
pub fn start(dir: &Path, name: &str, pids: &[u32]) -> Option<Recording> {
    let pids = pids.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    let data = dir.join(format!("{name}.data"));
    let child = Command::new("perf")
        .args([
            "record",
            "--quiet",
            "-e",
            "cpu-clock",
            "-F",
            FREQUENCY,
            "-p",
            &pids,
            "-o",
        ])
        .arg(&data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match child {
        Ok(child) => Some(Recording {
            child,
            data,
            report: dir.join(format!("{name}.txt")),
        }),
        Err(e) => {
            eprintln!("operator_scale: no profile ({e}): is perf installed (Debian: linux-perf)?");
            None
        }
    }
}

impl Recording {
    /// Stops sampling (SIGINT, as perf expects, so it writes its data) and writes the report:
    /// the share of samples by thread name, then by binary and symbol, entries of at least 0.5 %.
    pub fn finish(mut self) -> anyhow::Result<PathBuf> {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .context("signalling perf record")?;
        self.child.wait().context("waiting for perf record")?;
        let mut text = String::new();
        // By thread name (the operator's are tokio-rt-worker), then by binary and symbol.
        for sort in ["comm", "dso,symbol"] {
            let report = Command::new("perf")
                .args([
                    "report",
                    "--stdio",
                    "--sort",
                    sort,
                    "--percent-limit",
                    "0.5",
                    "-i",
                ])
                .arg(&self.data)
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .output()
                .context("running perf report")?;
            text.push_str(&String::from_utf8_lossy(&report.stdout));
        }
        std::fs::write(&self.report, text).with_context(|| format!("writing {}", self.report.display()))?;
        Ok(self.report)
    }
}
