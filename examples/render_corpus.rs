//! Loads and renders every chart of the Helm corpus in-process and prints per-chart times:
//! the numbers behind `scripts/bench-render.sh` and `docs/benchmarks.md`.
//!
//! ```text
//! cargo run --release --example render_corpus -- [--reps N] [--filter SUBSTR] [--tsv] [--skip-rsa] [CHART_DIR…]
//! ```
//!
//! Without chart directories it reads `$CAPSTAN_SHARED/helm-corpus` (or
//! `$CAPSTAN_SHARED_DIR`, `../shared`, `../../shared`); a chart directory inside a corpus
//! (`…/helm-corpus/charts/<id>`) is compared with its golden output too. Each chart is timed as Helm's oracle
//! times it (load the chart, then render it with default values), `--reps` times; the
//! median is reported. Charts whose Helm output holds generated keys or certificates
//! (RSA key generation: `genCA`, `genSelfSignedCert`, `genPrivateKey`, …) are flagged `rsa`
//! and summed separately, since key generation dominates their time for Helm and capstan alike;
//! `--skip-rsa` leaves them out.

// Examples may unwrap and panic: a failed assumption there is a failed run (issue 34).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use capstan_chart::load;
use capstan_chart::render::{RenderOptions, render};
use capstan_template::Value;

struct Args {
    reps: usize,
    filter: String,
    tsv: bool,
    skip_rsa: bool,
    charts: Vec<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        reps: 5,
        filter: String::new(),
        tsv: false,
        skip_rsa: false,
        charts: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--reps" => {
                let n = it.next().ok_or("--reps needs a number")?;
                args.reps = n.parse().map_err(|_| format!("--reps {n}: not a number"))?;
                args.reps = args.reps.max(1);
            }
            "--filter" => args.filter = it.next().ok_or("--filter needs a substring")?,
            "--tsv" => args.tsv = true,
            "--skip-rsa" => args.skip_rsa = true,
            "-h" | "--help" => {
                return Err(
                    "usage: render_corpus [--reps N] [--filter SUBSTR] [--tsv] [--skip-rsa] [CHART_DIR…]"
                        .into(),
                );
            }
            _ => args.charts.push(PathBuf::from(a)),
        }
    }
    Ok(args)
}

/// The shared directory holding `helm-corpus`, like the tests find it.
fn shared_dir() -> Option<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    ["CAPSTAN_SHARED", "CAPSTAN_SHARED_DIR"]
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from)
        .chain([manifest.join("../shared"), manifest.join("../../shared")])
        .find(|p| p.join("helm-corpus").is_dir())
}

/// One chart to time: its id, directory and (for corpus charts) Helm's golden output.
struct Target {
    id: String,
    dir: PathBuf,
    golden: Option<BTreeMap<String, String>>,
    nondeterministic: Vec<String>,
}

#[derive(serde::Deserialize)]
struct CorpusEntry {
    id: String,
    #[serde(default)]
    nondeterministic_templates: Vec<String>,
}

fn corpus_entries(corpus: &Path) -> Result<Vec<CorpusEntry>, String> {
    let text =
        std::fs::read_to_string(corpus.join("corpus.json")).map_err(|e| format!("corpus.json: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("corpus.json: {e}"))
}

fn corpus_target(corpus: &Path, e: CorpusEntry) -> Target {
    let golden = std::fs::read_to_string(corpus.join("golden").join(format!("{}.json", e.id)))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    Target {
        dir: corpus.join("charts").join(&e.id),
        id: e.id,
        golden,
        nondeterministic: e.nondeterministic_templates,
    }
}

fn corpus_targets(corpus: &Path, filter: &str) -> Result<Vec<Target>, String> {
    Ok(corpus_entries(corpus)?
        .into_iter()
        .filter(|e| e.id.contains(filter))
        .map(|e| corpus_target(corpus, e))
        .collect())
}

/// A chart given by directory: a corpus chart (`…/helm-corpus/charts/<id>`) gets its golden
/// output and keygen flag; any other directory is only timed.
fn dir_target(dir: &Path) -> Target {
    let id = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    let corpus = dir.parent().and_then(Path::parent);
    if let (Some(id), Some(corpus)) = (&id, corpus)
        && let Ok(entries) = corpus_entries(corpus)
        && let Some(e) = entries.into_iter().find(|e| &e.id == id)
    {
        return Target {
            dir: dir.to_path_buf(),
            ..corpus_target(corpus, e)
        };
    }
    Target {
        id: dir.display().to_string(),
        dir: dir.to_path_buf(),
        golden: None,
        nondeterministic: Vec::new(),
    }
}

/// Whether Helm generated keys or certificates for this chart: a non-deterministic template
/// whose output holds a PEM block (plain or base64-encoded).
fn uses_keygen(t: &Target) -> bool {
    let Some(golden) = &t.golden else {
        return false;
    };
    t.nondeterministic.iter().any(|name| {
        golden
            .get(name)
            .is_some_and(|out| out.contains("-----BEGIN") || out.contains("LS0tLS1CRUdJTi"))
    })
}

enum Outcome {
    /// Rendered; `identical` when every deterministic template equals Helm's golden output.
    Rendered {
        identical: Option<bool>,
        templates: usize,
    },
    Failed(String),
}

/// CPU time of this process so far. On a shared, loaded machine wall time mostly measures
/// waiting for a core; CPU time is what the render itself costs. `clock_gettime` brings the
/// running task's time up to date; `/proc/self/schedstat` lags by up to a scheduler tick,
/// which read 0 ms for a third of the corpus's sub-millisecond renders.
fn cpu_time() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}

/// Wall and CPU time of one load+render.
#[derive(Clone, Copy, Default)]
struct Times {
    wall: Duration,
    cpu: Duration,
}

/// Loads and renders once; the time covers both, like the oracle's `--timing`.
fn render_once(t: &Target) -> (Times, Outcome) {
    let cpu_start = cpu_time();
    let start = Instant::now();
    let result = std::panic::catch_unwind(|| {
        let chart = load::load(&t.dir).map_err(|e| format!("load: {e}"))?;
        render(&chart, &Value::empty_map(), &RenderOptions::default()).map_err(|e| format!("render: {e}"))
    });
    let elapsed = Times {
        wall: start.elapsed(),
        cpu: cpu_time().saturating_sub(cpu_start),
    };
    let outcome = match result {
        Ok(Ok(out)) => Outcome::Rendered {
            identical: t.golden.as_ref().map(|g| {
                g.len() == out.len()
                    && g.iter().all(|(name, want)| {
                        t.nondeterministic.contains(name) || out.get(name).is_some_and(|have| have == want)
                    })
            }),
            templates: out.len(),
        },
        Ok(Err(e)) => Outcome::Failed(e),
        Err(_) => Outcome::Failed("panic".into()),
    };
    (elapsed, outcome)
}

/// Medians of wall and CPU time, each taken separately.
fn median(xs: &[Times]) -> Times {
    let mid = |mut v: Vec<Duration>| {
        v.sort();
        v.get(v.len() / 2).copied().unwrap_or_default()
    };
    Times {
        wall: mid(xs.iter().map(|t| t.wall).collect()),
        cpu: mid(xs.iter().map(|t| t.cpu).collect()),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

// The allocator of the `capstan` binary, so the numbers are the binary's.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let targets = if args.charts.is_empty() {
        let Some(shared) = shared_dir() else {
            eprintln!("render_corpus: no chart given and no shared corpus found (set CAPSTAN_SHARED)");
            std::process::exit(2);
        };
        match corpus_targets(&shared.join("helm-corpus"), &args.filter) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("render_corpus: {e}");
                std::process::exit(2);
            }
        }
    } else {
        args.charts.iter().map(|dir| dir_target(dir)).collect()
    };
    // Keep engine panics (caught per chart) from cluttering the table.
    std::panic::set_hook(Box::new(|_| {}));

    if args.tsv {
        println!("id\tstatus\twall_ms\tcpu_ms\trsa\ttemplates\tdetail\tfirst_wall_ms\tfirst_cpu_ms");
    }
    let (mut total, mut total_rsa) = (Times::default(), Times::default());
    let (mut timed, mut rendered, mut identical, mut rsa_count) = (0, 0, 0, 0);
    let wall = Instant::now();
    let cpu_start = cpu_time();
    for t in &targets {
        let rsa = uses_keygen(t);
        if rsa && args.skip_rsa {
            continue;
        }
        timed += 1;
        let mut times = Vec::with_capacity(args.reps);
        let mut outcome = None;
        for _ in 0..args.reps {
            let (d, o) = render_once(t);
            times.push(d);
            outcome = Some(o);
        }
        let m = median(&times);
        // The first render in the process: cold caches, like one `capstan render` call.
        let first = times.first().copied().unwrap_or_default();
        let (status, templates, detail) = match outcome {
            Some(Outcome::Rendered {
                identical: same,
                templates,
            }) => {
                rendered += 1;
                if same == Some(true) {
                    identical += 1;
                }
                let sum = if rsa {
                    rsa_count += 1;
                    &mut total_rsa
                } else {
                    &mut total
                };
                sum.wall += m.wall;
                sum.cpu += m.cpu;
                let status = match same {
                    Some(true) => "identical",
                    Some(false) => "different",
                    None => "rendered",
                };
                (status, templates, String::new())
            }
            Some(Outcome::Failed(e)) => (
                "failed",
                0,
                e.replace(['\n', '\t'], " ").chars().take(160).collect(),
            ),
            None => ("failed", 0, String::new()),
        };
        if args.tsv {
            println!(
                "{}\t{status}\t{:.3}\t{:.3}\t{}\t{templates}\t{detail}\t{:.3}\t{:.3}",
                t.id,
                ms(m.wall),
                ms(m.cpu),
                u8::from(rsa),
                ms(first.wall),
                ms(first.cpu),
            );
        } else {
            println!(
                "{:>9.3} ms wall {:>9.3} ms cpu  {status:<9} {}{}",
                ms(m.wall),
                ms(m.cpu),
                if rsa { "[rsa] " } else { "" },
                t.id
            );
        }
    }
    let summary = format!(
        "charts: {timed} rendered: {rendered} identical-to-helm: {identical}\n\
         sum of per-chart medians, without keygen charts: {:.1} ms wall, {:.1} ms cpu; \
         keygen charts ({rsa_count}): {:.1} ms wall, {:.1} ms cpu\n\
         this run ({} reps each): {:.1} ms wall, {:.1} ms cpu",
        ms(total.wall),
        ms(total.cpu),
        ms(total_rsa.wall),
        ms(total_rsa.cpu),
        args.reps,
        ms(wall.elapsed()),
        ms(cpu_time().saturating_sub(cpu_start)),
    );
    if args.tsv {
        eprintln!("{summary}");
    } else {
        println!("{summary}");
    }
}
