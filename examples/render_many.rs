//! Compiles a chart once and renders it once per value set, as the operator renders an addon
//! chart for many clusters. Used by `scripts/bench-compiled.sh` (see docs/benchmarks.md).
//!
//! ```text
//! render_many CHART_DIR VALUES.jsonl [--release NAME] [--dump N DIR]
//! ```
//!
//! Each line of VALUES.jsonl is one value set (JSON). Prints one TSV line:
//! `renders  compile_ms  total_ms  per_render_ms  median_ms`, where the times of the renders
//! include reading each value set. `--dump N DIR` writes the outputs of the first N renders
//! as `DIR/<i>.json` (`{template: text}`) for comparison with Helm.

// Examples may unwrap and panic: a failed assumption there is a failed run (issue 34).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use capstan_chart::compiled::CompiledChart;
use capstan_chart::render::RenderOptions;
use capstan_chart::{load, values};

// The allocator of the `capstan` binary, so the numbers are the binary's.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(chart_dir), Some(values_file)) = (args.next(), args.next()) else {
        bail!("usage: render_many CHART_DIR VALUES.jsonl [--release NAME] [--dump N DIR]");
    };
    let mut release = "release-name".to_string();
    let mut dump: Option<(usize, PathBuf)> = None;
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--release" => release = args.next().context("--release NAME")?,
            "--dump" => {
                let n = args.next().context("--dump N DIR")?.parse()?;
                dump = Some((n, PathBuf::from(args.next().context("--dump N DIR")?)));
            }
            other => bail!("unknown flag {other}"),
        }
    }
    let sets: Vec<String> = std::fs::read_to_string(&values_file)
        .with_context(|| format!("reading {values_file}"))?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();

    let start = Instant::now();
    let chart =
        load::load(std::path::Path::new(&chart_dir)).with_context(|| format!("loading {chart_dir}"))?;
    let compiled = CompiledChart::new(chart)?;
    let compile_ms = start.elapsed().as_secs_f64() * 1000.0;

    let opts = RenderOptions {
        release_name: release,
        ..RenderOptions::default()
    };
    let mut times = Vec::with_capacity(sets.len());
    let all = Instant::now();
    for (i, text) in sets.iter().enumerate() {
        let t = Instant::now();
        let user = values::parse(text, &format!("{values_file}:{}", i + 1))?;
        let out = compiled.render(&user, &opts)?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        if let Some((n, dir)) = &dump
            && i < *n
        {
            std::fs::create_dir_all(dir)?;
            std::fs::write(dir.join(format!("{i}.json")), serde_json::to_string(&out)?)?;
        }
    }
    let total_ms = all.elapsed().as_secs_f64() * 1000.0;
    times.sort_by(f64::total_cmp);
    let median = times.get(times.len() / 2).copied().unwrap_or(0.0);
    println!(
        "{}\t{compile_ms:.3}\t{total_ms:.3}\t{:.4}\t{median:.4}",
        sets.len(),
        total_ms / sets.len().max(1) as f64
    );
    Ok(())
}
