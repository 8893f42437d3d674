//! A compiled chart renders from many threads at once exactly as a fresh single-threaded
//! render does with the same values: 8 threads, different values each (including values
//! that enable different subcharts, so different template sets), several renders per thread.

use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use capstan_chart::compiled::CompiledChart;
use capstan_chart::render::{RenderOptions, render};
use capstan_chart::{Chart, load, values};
use capstan_template::Value;
use capstan_template::funcs::FuncEnv;

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
    let dir = Path::new(capstan_testenv::REPO_ROOT).join("stacks/example/cluster-class");
    check("example", load::load(&dir).expect("example chart loads"));
}

#[test]
fn mastodon_with_subcharts_toggled_from_8_threads() {
    let Some(shared) = capstan_testenv::shared::dir("mastodon_with_subcharts_toggled_from_8_threads") else {
        return;
    };
    let dir = shared.join("helm-corpus/charts/bitnami_charts__bitnami_mastodon");
    check("mastodon", load::load(&dir).expect("mastodon loads"));
}

/// A render reusing an earlier render's dependency processing must still fail where Helm's
/// processing fails: `sub: null` from the user, where the parent's values have no `sub` table,
/// is `type mismatch on sub` (issue 22), also after a render with `{}` was cached.
#[test]
fn a_cached_enablement_still_refuses_a_null_subchart_table() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("p");
    let write = |rel: &str, text: &str| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "Chart.yaml",
        "apiVersion: v2\nname: p\nversion: 0.1.0\ndependencies:\n- name: sub\n",
    );
    write("templates/t.yaml", "{{ toJson .Values }}");
    write(
        "charts/sub/Chart.yaml",
        "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
    );
    write("charts/sub/values.yaml", "x: 1\n");
    write("charts/sub/templates/s.yaml", "{{ toJson .Values }}");
    let compiled = CompiledChart::new(load::load(&root).unwrap()).unwrap();
    let json = |text: &str| Value::from_json(&serde_json::from_str(text).unwrap());
    let opts = RenderOptions::default();
    let first = compiled
        .render(&json("{}"), &opts)
        .expect("renders with no values");
    assert_eq!(first["p/charts/sub/templates/s.yaml"], r#"{"global":{},"x":1}"#);
    let err = compiled
        .render(&json(r#"{"sub":null}"#), &opts)
        .expect_err("Helm refuses a null subchart table");
    assert_eq!(err.to_string(), "type mismatch on sub: %!t(<nil>)");
}
