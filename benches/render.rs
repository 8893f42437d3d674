//! Chart rendering end to end (load + values + render), like `capstan render` minus output:
//! always the example cluster-class chart under `stacks/`, plus a few corpus charts when the
//! shared Helm corpus exists (`$CAPSTAN_SHARED`, `$CAPSTAN_SHARED_DIR`, `../shared`,
//! `../../shared`); without it those are skipped with a note.

// Benchmarks may unwrap and panic: a failed assumption there is a failed run (issue 34).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::hint::black_box;
use std::path::Path;

use capstan_chart::compiled::CompiledChart;
use capstan_chart::render::{RenderOptions, render};
use capstan_chart::{load, values};
use capstan_template::Value;
use criterion::{Criterion, criterion_group, criterion_main};

/// Corpus charts worth tracking: big template sets, heavy `include`/`tpl` use (bitnami
/// common), many subcharts, and the cluster-stack charts capstan exists for.
const CORPUS_CHARTS: &[&str] = &[
    "bitnami_charts__bitnami_mastodon",
    "bitnami_charts__bitnami_kube-prometheus",
    "SovereignCloudStack_cluster-stacks__providers_docker_scs_cluster-class",
    "prometheus-community_helm-charts__charts_kube-state-metrics",
    // The largest output of the corpus (4.4 MiB of CRDs through `.Files`).
    "prometheus-community_helm-charts__charts_prometheus-operator-crds",
];

/// Benchmarks one chart if it renders today; a chart the engine cannot render yet is
/// reported and skipped rather than failing the whole run.
fn bench_chart(c: &mut Criterion, name: &str, dir: &Path) {
    let opts = RenderOptions::default();
    let values = Value::empty_map();
    let once = load::load(dir)
        .map_err(|e| e.to_string())
        .and_then(|chart| render(&chart, &values, &opts).map_err(|e| e.to_string()));
    if let Err(e) = once {
        eprintln!("render bench: skipping {name}: {e}");
        return;
    }
    let chart = load::load(dir).expect("loaded above");
    c.bench_function(&format!("load {name}"), |b| {
        b.iter(|| load::load(black_box(dir)).expect("loads"))
    });
    c.bench_function(&format!("render {name}"), |b| {
        b.iter(|| render(black_box(&chart), &values, &opts).expect("renders"))
    });
    // Compiled once, then one render per value set, a different set each time (as the
    // operator renders one chart for many clusters).
    let compiled = CompiledChart::new(chart).expect("compiles");
    let sets: Vec<Value> = (0..100)
        .map(|i| {
            values::parse(
                &format!("nameOverride: n{i}\nfullnameOverride: full-{i}\n"),
                "bench",
            )
            .expect("bench values")
        })
        .collect();
    let mut next = 0;
    c.bench_function(&format!("compiled render {name}"), |b| {
        b.iter(|| {
            next = (next + 1) % sets.len();
            compiled.render(black_box(&sets[next]), &opts).expect("renders")
        })
    });
}

fn bench(c: &mut Criterion) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("stacks/example/cluster-class");
    bench_chart(c, "example cluster-class", &example);
    match common::shared_dir("helm-corpus") {
        Some(shared) => {
            for id in CORPUS_CHARTS {
                let dir = shared.join("helm-corpus/charts").join(id);
                if dir.is_dir() {
                    bench_chart(c, id, &dir);
                } else {
                    eprintln!("render bench: {id} is not in the corpus; skipped");
                }
            }
        }
        None => eprintln!("render bench: no shared Helm corpus (set CAPSTAN_SHARED); corpus charts skipped"),
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
