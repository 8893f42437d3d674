//! Whole releases of `../shared/cluster-stack-releases` rendered for the example Cluster of
//! `testdata/`: the runtime values capstan computes are checked against hand-written
//! expectations, then every part (ClusterClass chart, addon chart or stages) is rendered by
//! real Helm v4.2.3 with those same values (the oracle, `tests/shared/stack_oracle.py`) and
//! compared with capstan's output:
//!
//! - the engine output per template, with the part's release name, namespace and Kubernetes
//!   version (`versions.kubernetes` for addons), must be identical;
//! - the `helm template` stream (offline install: Helm's default Kubernetes version, without
//!   hooks and CRDs) must be identical.
//!
//! Without `../shared` the tests skip (fail under `CI=true`); without the oracle venv only the
//! Helm comparison skips.

mod shared;

use std::path::{Path, PathBuf};

use capstan::stack::release::{Addon, Release};
use capstan::stack::render::render_release;
use capstan::stack::{ReleaseTag, Version};
use shared::stack::{self, deterministic, example_objects};

fn releases(shared: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(shared.join("cluster-stack-releases"))
        .expect("cluster-stack-releases readable")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn shared_releases_load_with_their_layout() {
    let Some(shared) = shared::dir("stack releases") else {
        return;
    };
    let dirs = releases(&shared);
    assert_eq!(dirs.len(), 4, "four shared releases");
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let tag = ReleaseTag::parse(&name).expect("the directory is named by its tag");
        let release = Release::load(&dir).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(release.tag(), &tag);
        assert_eq!(Release::load_tagged(&dir, &tag).unwrap().tag(), &tag);
        let (addon_version, staged) = match name.as_str() {
            "docker-ferrol-1-27-v0-sha-hipstsw" => ("v0-sha.hipstsw", true),
            "docker-ferrol-1-27-v1" => ("v1", false),
            "docker-ferrol-1-27-v2" => ("v2", false),
            // v3 reuses the addon of v2: the asset is named by the metadata's addon version.
            "docker-ferrol-1-27-v3" => ("v2", false),
            other => panic!("unexpected release {other}"),
        };
        assert_eq!(
            release.metadata().cluster_addon,
            Version::parse(addon_version).unwrap()
        );
        match release.addon() {
            Addon::Staged {
                archive,
                config,
                stage_dirs,
            } => {
                assert!(staged, "{name}");
                assert!(archive.ends_with("docker-ferrol-1-27-cluster-addon-v0-sha.hipstsw.tgz"));
                assert_eq!(config.stage_names(), ["metrics-server", "ngnix"]);
                assert_eq!(stage_dirs, &["metrics-server", "ngnix"]);
            }
            Addon::Single {
                chart,
                values_template,
            } => {
                assert!(!staged, "{name}");
                assert!(chart.ends_with(format!("docker-ferrol-1-27-cluster-addon-{addon_version}.tgz")));
                assert!(values_template.is_some());
            }
        }
        let wrong = ReleaseTag::parse("docker-ferrol-1-27-v9").unwrap();
        let err = Release::load_tagged(&dir, &wrong).unwrap_err().to_string();
        assert!(
            err.contains("release tag docker-ferrol-1-27-v9 has version v9"),
            "{err}"
        );
    }
}

#[test]
fn runtime_values_of_the_example_cluster() {
    let Some(shared) = shared::dir("stack release values") else {
        return;
    };
    let objects = example_objects();
    for dir in releases(&shared) {
        let release = Release::load(&dir).unwrap();
        let parts = render_release(&release, &objects, &deterministic())
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let names: Vec<&str> = parts.iter().map(|p| p.name.as_str()).collect();
        let tag = release.tag().tag();
        // Hand-checked: the template puts the Cluster's endpoint host into the
        // metrics-server labels, next to the addon version it was written for.
        let addon_version = match tag.as_str() {
            "docker-ferrol-1-27-v1" => "v1",
            "docker-ferrol-1-27-v2" | "docker-ferrol-1-27-v3" => "v2",
            _ => {
                assert_eq!(
                    names,
                    [
                        "cluster-class",
                        "cluster-addon/metrics-server",
                        "cluster-addon/ngnix"
                    ]
                );
                // The stages have no overwrite.yaml: no runtime values.
                assert!(parts.iter().all(|p| p.values.is_none()));
                continue;
            }
        };
        assert_eq!(names, ["cluster-class", "cluster-addon"], "{tag}");
        let values = parts[1].values.as_ref().expect("single-chart addon values");
        assert_eq!(
            values.text,
            format!(
                "metrics-server:\n  commonLabels:\n    domain: \"172.18.0.3\"\n    clusterAddonVersion: \"{addon_version}\"\n"
            ),
            "{tag}"
        );
        assert!(
            parts[1].stream.contains("domain: 172.18.0.3"),
            "{tag}: the value reaches the objects"
        );
        assert_eq!(parts[0].release_name, "docker-ferrol-1-27");
        assert_eq!(parts[0].namespace, "tenant-a", "the Cluster's namespace");
        assert_eq!(parts[1].namespace, "kube-system");
        assert_eq!(parts[1].kube_version, "v1.27.3");
    }
}

#[test]
fn shared_releases_render_like_helm() {
    let Some(shared) = shared::dir("stack releases vs helm") else {
        return;
    };
    let Some(python) = stack::helm_python("stack releases vs helm") else {
        return;
    };
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("stack-releases-oracle");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let objects = example_objects();
    let mut questions = Vec::new();
    for dir in releases(&shared) {
        let release = Release::load(&dir).unwrap();
        questions.extend(stack::release_questions(&release, &objects, &scratch));
    }
    assert_eq!(questions.len(), 2 * 9, "nine parts across the four releases");
    let failures = stack::differences(&shared, &python, &questions, &scratch);
    assert!(failures.is_empty(), "parts that differ from Helm: {failures:?}");
}
