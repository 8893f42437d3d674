//! Whole releases of `../shared/cluster-stack-releases` rendered for the example Cluster of
//! `testdata/`: the runtime values capstan computes are checked against hand-written
//! expectations, then every part (ClusterClass chart, addon chart or stages) is rendered by
//! real Helm v4.2.3 with those same values (the oracle, `tests/oracle/stack_oracle.py`) and
//! compared with capstan's output:
//!
//! - the engine output per template, with the part's release name, namespace and Kubernetes
//!   version (`versions.kubernetes` for addons), must be identical;
//! - the `helm template` stream (offline install: Helm's default Kubernetes version, without
//!   hooks and CRDs) must be identical.
//!
//! Without `../shared` the tests skip (fail under `CI=true`); without the oracle venv only the
//! Helm comparison skips.

use std::path::{Path, PathBuf};

use capstan_stack::release::{Addon, Release};
use capstan_stack::render::render_release;
use capstan_stack::{ReleaseTag, Version};
use capstan_testenv::shared::stack::{self, deterministic, example_objects};

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
    let Some(shared) = capstan_testenv::shared::dir("stack releases") else {
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
        let (required, optional) = capstan_stack::release::release_files(&tag, release.metadata());
        for file in &required {
            assert!(dir.join(file).is_file(), "{name}: {file}");
        }
        assert_eq!(
            required[2],
            format!("docker-ferrol-1-27-cluster-addon-{addon_version}.tgz")
        );
        assert_eq!(
            optional,
            ["clusteraddon.yaml", "cluster-addon-values.yaml", "hashes.json"]
        );
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
    let Some(shared) = capstan_testenv::shared::dir("stack release values") else {
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
    let Some(shared) = capstan_testenv::shared::dir("stack releases vs helm") else {
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

/// The lines a unified diff removes and adds (headers and context left out).
fn edits(diff: &str) -> (Vec<&str>, Vec<&str>) {
    let body = diff
        .lines()
        .filter(|l| !l.starts_with("---") && !l.starts_with("+++"));
    let (mut minus, mut plus) = (Vec::new(), Vec::new());
    for line in body {
        if let Some(l) = line.strip_prefix('-') {
            minus.push(l);
        } else if let Some(l) = line.strip_prefix('+') {
            plus.push(l);
        }
    }
    (minus, plus)
}

#[test]
fn diff_v1_to_v2_shows_removed_and_changed_objects_only() {
    use capstan_stack::diff::{Change, diff_releases};
    let Some(shared) = capstan_testenv::shared::dir("releases diff v1 v2") else {
        return;
    };
    let root = shared.join("cluster-stack-releases");
    let objects = example_objects();
    let render = |name: &str| {
        let release = Release::load(&root.join(name)).unwrap();
        let parts = render_release(&release, &objects, &deterministic()).unwrap();
        (release.tag().cluster_class_name(), parts)
    };
    let (old_class, old) = render("docker-ferrol-1-27-v1");
    let (new_class, new) = render("docker-ferrol-1-27-v2");
    let diffs = diff_releases(&old, &old_class, &new, &new_class).unwrap();
    assert_eq!(diffs.len(), 2);

    // The ClusterClass part: every object renamed with the release, nothing else changed.
    let class = &diffs[0];
    assert_eq!(class.part, "cluster-class");
    assert_eq!(class.changes.len(), 5);
    for change in &class.changes {
        let Change::Changed { old, new, diff } = change else {
            panic!("cluster-class: only changes expected, got {change:?}");
        };
        assert_eq!(new.name, old.name.replacen("-v1", "-v2", 1));
        let (minus, plus) = edits(diff);
        assert!(!minus.is_empty());
        let renamed: Vec<String> = minus
            .iter()
            .map(|l| l.replace("docker-ferrol-1-27-v1", "docker-ferrol-1-27-v2"))
            .collect();
        assert_eq!(renamed, plus, "{diff}");
    }

    // The addon: v2 dropped the nginx Deployment, and the metrics-server objects carry the
    // new addon version in their labels; kindnet is unchanged.
    let addon = &diffs[1];
    assert_eq!(addon.part, "cluster-addon");
    let removed: Vec<String> = addon
        .changes
        .iter()
        .filter_map(|c| match c {
            Change::Removed { key } => Some(key.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(removed, ["apps/Deployment web"]);
    assert!(!addon.changes.iter().any(|c| matches!(c, Change::Added { .. })));
    let changed: Vec<&Change> = addon
        .changes
        .iter()
        .filter(|c| matches!(c, Change::Changed { .. }))
        .collect();
    assert_eq!(changed.len(), 10);
    for change in changed {
        let Change::Changed { old, new, diff } = change else {
            unreachable!()
        };
        assert_eq!(old, new);
        assert_eq!(
            edits(diff),
            (
                vec!["    clusterAddonVersion: v1"],
                vec!["    clusterAddonVersion: v2"]
            ),
            "{new}: {diff}"
        );
    }
    assert_eq!(addon.unchanged, 4, "kindnet's objects");
}

/// A copy of a shared release that a test may break.
fn writable_copy(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        if entry.file_type().unwrap().is_file() {
            let dest = to.join(entry.file_name());
            std::fs::write(&dest, std::fs::read(entry.path()).unwrap()).unwrap();
        }
    }
}

#[test]
fn broken_releases_fail_precisely() {
    let Some(shared) = capstan_testenv::shared::dir("broken releases") else {
        return;
    };
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("broken-releases");
    let v1 = shared.join("cluster-stack-releases/docker-ferrol-1-27-v1");
    let dir = scratch.join("docker-ferrol-1-27-v1");
    let metadata = std::fs::read_to_string(v1.join("metadata.yaml")).unwrap();
    type Breakage<'a> = Box<dyn Fn(&Path) + 'a>;
    let cases: Vec<(&str, Breakage, String)> = vec![
        (
            "no metadata",
            Box::new(|d: &Path| std::fs::remove_file(d.join("metadata.yaml")).unwrap()),
            format!("{}: file not found", dir.join("metadata.yaml").display()),
        ),
        (
            "wrong apiVersion",
            Box::new(|d: &Path| std::fs::write(d.join("metadata.yaml"), metadata.replace("v1alpha1", "v1")).unwrap()),
            format!("{}: field apiVersion: expected \"metadata.clusterstack.x-k8s.io/v1alpha1\", found \"metadata.clusterstack.x-k8s.io/v1\"", dir.join("metadata.yaml").display()),
        ),
        (
            "bad version",
            Box::new(|d: &Path| std::fs::write(d.join("metadata.yaml"), metadata.replace("clusterStack: v1", "clusterStack: v1-beta")).unwrap()),
            "field versions.clusterStack: invalid cluster-stack version \"v1-beta\": pre-release part \"beta\" has no '.' between channel and patch".to_string(),
        ),
        (
            "addon version without its asset",
            Box::new(|d: &Path| std::fs::write(d.join("metadata.yaml"), metadata.replace("clusterAddon: v1", "clusterAddon: v5")).unwrap()),
            "the addon chart docker-ferrol-1-27-cluster-addon-v5.tgz (versions.components.clusterAddon v5 of metadata.yaml) is missing (found: docker-ferrol-1-27-cluster-addon-v1.tgz)".to_string(),
        ),
        (
            "stack version without its ClusterClass",
            Box::new(|d: &Path| std::fs::write(d.join("metadata.yaml"), metadata.replace("clusterStack: v1", "clusterStack: v7")).unwrap()),
            "no ClusterClass chart <stack>-cluster-class-v7.tgz for versions.clusterStack v7 of metadata.yaml (found: docker-ferrol-1-27-cluster-class-v1.tgz)".to_string(),
        ),
        (
            "Kubernetes of another stack",
            Box::new(|d: &Path| std::fs::write(d.join("metadata.yaml"), metadata.replace("v1.27.3", "v1.28.1")).unwrap()),
            "metadata.yaml: versions.kubernetes v1.28.1 is not of Kubernetes 1.27 the stack docker-ferrol-1-27 is for".to_string(),
        ),
    ];
    for (what, breakage, expected) in cases {
        writable_copy(&v1, &dir);
        breakage(&dir);
        let err = Release::load(&dir).unwrap_err().to_string();
        assert!(
            err.contains(&expected),
            "{what}:\n  got:  {err}\n  want: {expected}"
        );
    }

    // A truncated chart archive fails when its chart is loaded, naming release and file.
    writable_copy(&v1, &dir);
    let class = dir.join("docker-ferrol-1-27-cluster-class-v1.tgz");
    let data = std::fs::read(&class).unwrap();
    std::fs::write(&class, &data[..data.len() / 2]).unwrap();
    let release = Release::load(&dir).unwrap();
    let err = render_release(&release, &example_objects(), &deterministic())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "release docker-ferrol-1-27-v1: cluster-class chart {}: ",
            class.display()
        )),
        "{err}"
    );

    // A multi-stage addon archive with an entry outside its root is refused on load.
    let staged = shared.join("cluster-stack-releases/docker-ferrol-1-27-v0-sha-hipstsw");
    let dir = scratch.join("staged");
    writable_copy(&staged, &dir);
    let archive = dir.join("docker-ferrol-1-27-cluster-addon-v0-sha.hipstsw.tgz");
    let file = std::fs::File::create(&archive).unwrap();
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        file,
        flate2::Compression::default(),
    ));
    let mut header = tar::Header::new_gnu();
    header.as_old_mut().name[..10].copy_from_slice(b"../escaped");
    header.set_size(1);
    header.set_mode(0o644);
    header.set_cksum();
    builder.append(&header, &b"x"[..]).unwrap();
    builder.into_inner().unwrap().finish().unwrap();
    let err = Release::load(&dir).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "{}: entry \"../escaped\" refers to a parent directory",
            archive.display()
        )
    );

    // A stage named in clusteraddon.yaml but missing from the archive.
    writable_copy(&staged, &dir);
    let config = std::fs::read_to_string(dir.join("clusteraddon.yaml")).unwrap();
    std::fs::write(
        dir.join("clusteraddon.yaml"),
        config.replace("name: ngnix", "name: cni"),
    )
    .unwrap();
    let err = Release::load(&dir).unwrap_err().to_string();
    assert!(
        err.ends_with("clusteraddon.yaml names stage \"cni\" (hook BeforeClusterUpgrade), but docker-ferrol-1-27-cluster-addon-v0-sha.hipstsw.tgz has no chart directory cni/ (it has: metrics-server, ngnix)"),
        "{err}"
    );
}

/// A copy of an scs2 stage chart with its dependency in `charts/`, taken from the shared
/// chart repositories (`helm dependency update` would fetch the same package); the
/// requirement is pinned to the version the repository has.
fn scs2_stage_with_dependency(
    shared: &Path,
    stage: &str,
    package: &str,
    pin: Option<(&str, &str)>,
    into: &Path,
) -> PathBuf {
    let source = shared
        .join("cluster-stacks-src/providers/openstack/scs2/cluster-addon")
        .join(stage);
    let dir = into.join(stage);
    writable_copy(&source, &dir);
    if let Some((from, to)) = pin {
        let chart_yaml = dir.join("Chart.yaml");
        let text = std::fs::read_to_string(&chart_yaml).unwrap();
        assert!(text.contains(from), "{stage}/Chart.yaml pins {from}");
        std::fs::write(&chart_yaml, text.replace(from, to)).unwrap();
    }
    std::fs::create_dir_all(dir.join("charts")).unwrap();
    std::fs::copy(
        shared.join("chart-repos").join(package),
        dir.join("charts").join(Path::new(package).file_name().unwrap()),
    )
    .unwrap();
    dir
}

/// scs2's `ccm` and `cni` stages (issue 22): both hold nulls that only matter once the stage
/// has values for the subchart — `openstack-cloud-controller-manager.nodeSelector: null` in
/// ccm's values, nulls in cilium's own `values.yaml`. Rendered with the stage's values (ccm's
/// `overwrite.yaml` for the example Cluster; cni has none, so also with one harmless key for
/// cilium) they must match Helm rendering the same copy with the same values.
#[test]
fn scs2_stages_with_values_render_like_helm() {
    use capstan_chart::render::{RenderOptions, render};
    use capstan_chart::{load, values};
    use capstan_stack::values::compute_values_file;

    let Some(shared) = capstan_testenv::shared::dir("scs2 stages vs helm") else {
        return;
    };
    let Some(python) = stack::helm_python("scs2 stages vs helm") else {
        return;
    };
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("scs2-stages");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let ccm = scs2_stage_with_dependency(
        &shared,
        "ccm",
        "cloud-provider-openstack/openstack-cloud-controller-manager-2.34.2.tgz",
        None,
        &scratch,
    );
    let cni = scs2_stage_with_dependency(
        &shared,
        "cni",
        "cilium/cilium-1.17.4.tgz",
        Some(("version: 1.18.9", "version: 1.17.4")),
        &scratch,
    );
    let ccm_values = compute_values_file(&ccm.join("overwrite.yaml"), &example_objects())
        .expect("ccm's overwrite.yaml renders for the example Cluster")
        .text;
    assert!(
        ccm_values.contains("openstack-cloud-controller-manager"),
        "{ccm_values}"
    );
    let cases: [(&str, &Path, Option<String>); 4] = [
        ("ccm with the stage's values", &ccm, Some(ccm_values)),
        ("ccm without values", &ccm, None),
        ("cni without values", &cni, None),
        (
            "cni with a value for cilium",
            &cni,
            Some("cilium:\n  cluster:\n    name: harbor-east\n".into()),
        ),
    ];
    let kube_version = "v1.34.7";
    let mut requests = std::collections::BTreeMap::new();
    let mut ours = std::collections::BTreeMap::new();
    for (id, dir, text) in &cases {
        let values_path = text.as_ref().map(|t| {
            let path = scratch.join(format!("{}.values.yaml", id.replace(' ', "-")));
            std::fs::write(&path, t).unwrap();
            path
        });
        requests.insert(
            id.to_string(),
            serde_json::json!({
                "chart": dir, "values": values_path, "name": "cluster-addon",
                "namespace": "kube-system", "kube_version": kube_version, "stream": false,
            }),
        );
        let user = match text {
            Some(t) => values::parse(t, "values.yaml").unwrap(),
            None => capstan_template::Value::empty_map(),
        };
        let chart = load::load(dir).unwrap();
        let opts = RenderOptions {
            release_name: "cluster-addon".into(),
            namespace: "kube-system".into(),
            kube_version: capstan_chart::objects::KubeVersion::parse(kube_version).unwrap(),
            env: deterministic().env,
            ..RenderOptions::default()
        };
        ours.insert(
            id.to_string(),
            render(&chart, &user, &opts).map_err(|e| e.to_string()),
        );
    }
    let answers = stack::ask_helm(&shared, &python, &requests, &scratch).expect("the oracle runs");
    let mut failures = Vec::new();
    for (id, _, _) in &cases {
        let verdict = match &ours[*id] {
            Ok(rendered) => stack::verdict(&answers[*id], rendered, &None),
            Err(e) => Some(format!("capstan failed: {e}")),
        };
        match verdict {
            None => println!("{id}: identical"),
            Some(why) => failures.push(format!("{id}: {why}")),
        }
    }
    assert!(
        failures.is_empty(),
        "scs2 stages that differ from Helm: {failures:#?}"
    );
}
