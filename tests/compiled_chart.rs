//! A compiled chart renders from many threads at once exactly as a fresh single-threaded
//! render does with the same values: 8 threads, different values each (including values
//! that enable different subcharts, so different template sets), several renders per thread.

mod shared;

use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use capstan::chart::compiled::CompiledChart;
use capstan::chart::render::{RenderOptions, render};
use capstan::chart::{Chart, load, values};
use capstan::template::Value;
use capstan::template::funcs::FuncEnv;

const THREADS: usize = 8;
const RENDERS_PER_THREAD: usize = 3;

/// Values set `i`: a different name everywhere, and settings that change the output.
fn values_text(chart: &str, i: usize) -> String {
    let mut text = format!("nameOverride: n{i}\nfullnameOverride: full-{i}\n");
    match chart {
        "example" => text.push_str(&format!(
            "controlPlane:\n  replicas: {}\nnetwork:\n  podCIDR: 10.{i}.0.0/16\n",
            1 + 2 * (i % 3)
        )),
        // Subcharts enabled, disabled, their values nulled or left alone: different
        // template sets, and value sets that share an enablement with different values.
        _ => text.push_str(match i % 4 {
            0 => "postgresql:\n  enabled: true\nredis:\n  enabled: true\n",
            1 => "postgresql:\n  enabled: false\nredis:\n  enabled: false\n",
            2 => "postgresql: null\ntags:\n  unused: false\n",
            _ => "redis:\n  enabled: false\n  architecture: standalone\n",
        }),
    }
    text
}

/// Options with randomness and time fixed per value set, so two renders can be compared.
fn options(i: usize) -> RenderOptions {
    RenderOptions {
        release_name: format!("rel-{i}"),
        env: Rc::new(FuncEnv::deterministic(1000 + i as u64, 1_700_000_000)),
        ..RenderOptions::default()
    }
}

fn user_values(chart: &str, i: usize) -> Value {
    values::parse(&values_text(chart, i), "values.yaml").expect("test values parse")
}

fn check(name: &str, chart: Chart) {
    let expected: Vec<BTreeMap<String, String>> = (0..THREADS)
        .map(|i| render(&chart, &user_values(name, i), &options(i)).expect("single-threaded render"))
        .collect();
    assert_ne!(
        expected[0], expected[1],
        "{name}: the value sets must change the output"
    );

    let compiled = Arc::new(CompiledChart::new(chart).expect("compiles"));
    let outputs: Vec<Vec<BTreeMap<String, String>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|i| {
                let compiled = Arc::clone(&compiled);
                s.spawn(move || {
                    (0..RENDERS_PER_THREAD)
                        .map(|_| {
                            compiled
                                .render(&user_values(name, i), &options(i))
                                .expect("compiled render")
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("render thread"))
            .collect()
    });
    for (i, renders) in outputs.iter().enumerate() {
        for (n, got) in renders.iter().enumerate() {
            assert!(
                got == &expected[i],
                "{name}: thread {i}, render {n} differs from the single-threaded render: templates {:?}",
                got.iter()
                    .filter(|(k, v)| expected[i].get(*k) != Some(v))
                    .map(|(k, _)| k)
                    .collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn example_cluster_class_from_8_threads() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("stacks/example/cluster-class");
    check("example", load::load(&dir).expect("example chart loads"));
}

#[test]
fn mastodon_with_subcharts_toggled_from_8_threads() {
    let Some(shared) = shared::dir("mastodon_with_subcharts_toggled_from_8_threads") else {
        return;
    };
    let dir = shared.join("helm-corpus/charts/bitnami_charts__bitnami_mastodon");
    check("mastodon", load::load(&dir).expect("mastodon loads"));
}
