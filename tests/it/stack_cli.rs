//! The example stack of `stacks/example` as a whole release, and the CLI of whole releases:
//! `capstan render RELEASE --cluster …` and `capstan releases diff OLD NEW --cluster …`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use capstan_stack::build::{build, hash_version};
use capstan_stack::release::Release;
use capstan_stack::render::{labelled_stream, render_release};
use capstan_stack::{Hook, Version};
use capstan_testenv::shared::stack::{self, deterministic, example_objects, testdata};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("stacks/example")
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn capstan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_capstan"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("capstan runs")
}

fn example_release(dir: &str) -> Release {
    build(
        &example(),
        &Version::parse("v1").unwrap(),
        &scratch(dir).join("release"),
    )
    .expect("the example stack builds")
}

#[test]
fn example_stack_is_a_whole_release() {
    let release = example_release("example-release");
    assert_eq!(release.tag().tag(), "docker-example-1-30-v1");
    let capstan_stack::release::Addon::Staged { config, .. } = release.addon() else {
        panic!("the example addon has stages")
    };
    assert_eq!(config.stage_names(), ["cni", "cluster-info"]);
    assert_eq!(
        config.stages(Hook::AfterControlPlaneInitialized)[1]
            .wait_for_pre_condition
            .as_ref()
            .unwrap()
            .objects[0]
            .kind,
        "DaemonSet"
    );
    let parts = render_release(&release, &example_objects(), &deterministic()).unwrap();
    let names: Vec<&str> = parts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["cluster-class", "cluster-addon/cni", "cluster-addon/cluster-info"]
    );
    // The ClusterClass is named by the scheme, in the Cluster's namespace.
    assert!(
        parts[0]
            .stream
            .contains("kind: ClusterClass\nmetadata:\n  name: docker-example-1-30-v1\n")
    );
    assert_eq!(parts[0].namespace, "tenant-a");
    // Hand-checked runtime values of testdata/cluster.yaml and its control plane and
    // infrastructure cluster.
    assert_eq!(
        parts[1].values.as_ref().unwrap().text,
        "podCIDR: 10.244.0.0/16\npodLabels:\n  environment: \"staging\"\n  team: \"platform\"\n"
    );
    assert_eq!(
        parts[2].values.as_ref().unwrap().text,
        "cluster:\n  name: harbor-east\n  namespace: tenant-a\n  endpoint: \"172.18.0.3:6443\"\ncontrolPlane:\n  replicas: 3\n  version: \"v1.30.4\"\ninfrastructure:\n  kind: \"DockerCluster\"\n  loadBalancerImage: \"kindest\"\n"
    );
    // CRDs of a stage come first, the Kubernetes version is the release's.
    assert!(
        parts[2]
            .stream
            .starts_with("---\n# Source: example-cluster-info/crds/clusterinfos.yaml\n")
    );
    assert!(parts[2].stream.contains("    minor: \"1.30\"\n"));
}

#[test]
fn example_release_renders_like_helm() {
    let Some(shared) = capstan_testenv::shared::dir("example release vs helm") else {
        return;
    };
    let Some(python) = stack::helm_python("example release vs helm") else {
        return;
    };
    let release = example_release("example-release-helm");
    let out = scratch("example-release-oracle");
    let questions = stack::release_questions(&release, &example_objects(), &out);
    assert_eq!(questions.len(), 2 * 3);
    let failures = stack::differences(&shared, &python, &questions, &out);
    assert!(failures.is_empty(), "parts that differ from Helm: {failures:?}");
}

#[test]
fn cli_renders_the_example_stack() {
    let out = capstan(&["render", "stacks/example", "--cluster", "testdata/cluster.yaml"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let version = hash_version(&example()).unwrap();
    let release = build(&example(), &version, &scratch("example-cli").join("release")).unwrap();
    let objects = capstan_stack::values::ClusterObjects::load(&testdata("cluster.yaml"), None, None).unwrap();
    let parts = render_release(&release, &objects, &deterministic()).unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), labelled_stream(&parts));
    assert!(
        labelled_stream(&parts)
            .contains("# Source: cluster-addon/cni/example-cni/templates/daemonset.yaml\n")
    );

    let dir = scratch("example-cli-output-dir");
    let out = capstan(&[
        "render",
        "stacks/example",
        "--cluster",
        "testdata/cluster.yaml",
        "--output-dir",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        dir.join("cluster-addon/cluster-info/example-cluster-info/crds/clusterinfos.yaml")
            .is_file()
    );
    assert!(
        dir.join("cluster-class/example-cluster-class/templates/cluster-class.yaml")
            .is_file()
    );

    let out = capstan(&[
        "render",
        "stacks/example",
        "--cluster",
        "testdata/cluster.yaml",
        "-o",
        "json",
    ]);
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json[1]["part"], "cluster-addon/cni");
    assert_eq!(json[1]["namespace"], "kube-system");
    assert_eq!(json[0]["objects"][0]["kind"], "ClusterClass");
}

#[test]
fn cli_keeps_rendering_single_charts() {
    let out = capstan(&["render", "stacks/example/cluster-class"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let expected = std::fs::read_to_string(example().join("expected/cluster-class.stream.yaml")).unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim_end(),
        expected.trim_end()
    );
}

#[test]
fn cli_errors_name_the_problem() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["render", "stacks/example"],
            "rendering a release needs --cluster FILE",
        ),
        (
            &[
                "render",
                "stacks/example",
                "--cluster",
                "testdata/cluster.yaml",
                "--set",
                "a=1",
            ],
            "--set applies to a single chart",
        ),
        (
            &[
                "render",
                "stacks/example/cluster-class",
                "--cluster",
                "testdata/cluster.yaml",
            ],
            "is neither a release directory",
        ),
        (
            &[
                "render",
                "docker-ferrol-1-27-v3",
                "--cluster",
                "testdata/cluster.yaml",
                "--cache",
                concat!(env!("CARGO_TARGET_TMPDIR"), "/empty-release-cache"),
            ],
            "docker-ferrol-1-27-v3 is a release tag, but no release of that tag is in the cache",
        ),
        (
            &["render", "stacks/example", "--cluster", "testdata/nope.yaml"],
            "testdata/nope.yaml: file not found",
        ),
    ];
    for (args, expected) in cases {
        let out = capstan(args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}

#[test]
fn cli_releases_diff() {
    let Some(shared) = capstan_testenv::shared::dir("releases diff cli") else {
        return;
    };
    let root = shared.join("cluster-stack-releases");
    let (v1, v2) = (
        root.join("docker-ferrol-1-27-v1"),
        root.join("docker-ferrol-1-27-v2"),
    );
    let out = capstan(&[
        "releases",
        "diff",
        v1.to_str().unwrap(),
        v2.to_str().unwrap(),
        "--cluster",
        "testdata/cluster.yaml",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("docker-ferrol-1-27-v1 → docker-ferrol-1-27-v2\n"),
        "{text}"
    );
    assert!(
        text.contains("\ncluster-class: 0 added, 0 removed, 5 changed, 0 unchanged\n"),
        "{text}"
    );
    assert!(text.contains("  changed  cluster.x-k8s.io/ClusterClass tenant-a/docker-ferrol-1-27-v2 (was docker-ferrol-1-27-v1)\n"));
    assert!(
        text.contains("\ncluster-addon: 0 added, 1 removed, 10 changed, 4 unchanged\n"),
        "{text}"
    );
    assert!(text.contains("  removed  apps/Deployment web\n"));
    assert!(text.contains("-    clusterAddonVersion: v1\n+    clusterAddonVersion: v2\n"));

    let out = capstan(&[
        "releases",
        "diff",
        v2.to_str().unwrap(),
        v2.to_str().unwrap(),
        "--cluster",
        "testdata/cluster.yaml",
        "-o",
        "json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json[0]["changes"].as_array().unwrap().len(),
        0,
        "a release does not differ from itself"
    );
    assert_eq!(json[1]["unchanged"], 14);
}

/// `capstan render RELEASE --cluster … -f FILE` renders the addons with the user's values
/// layered over the computed ones, exactly as real Helm renders the addon chart with
/// `-f computed.yaml -f FILE` (the reference operator's `-f -`, then the user's file): a map
/// merged into a subchart's values, a scalar and a list replaced, a null deleting a default.
#[test]
fn cli_user_values_render_like_helm_with_repeated_f() {
    use capstan_stack::render::CompiledRelease;
    use capstan_stack::user_values::UserValues;
    let test = "cli user values vs helm -f";
    let Some(shared) = capstan_testenv::shared::dir(test) else {
        return;
    };
    let Some(python) = stack::helm_python(test) else {
        return;
    };
    let dir = shared.join("cluster-stack-releases/docker-ferrol-1-27-v1");
    let release = Release::load(&dir).expect("the shared release loads");
    let out = scratch("cli-user-values");
    let user_file = out.join("user-values.yaml");
    let user_text = "metrics-server:\n  replicas: 3\n  commonLabels:\n    team: platform\n  \
                     args: null\n  defaultArgs:\n    - --cert-dir=/tmp\n";
    std::fs::write(&user_file, user_text).unwrap();

    // The binary prints what the library renders with the file layered on.
    let objects = example_objects();
    let user = [UserValues::parse(&user_file.display().to_string(), user_text).unwrap()];
    let compiled = CompiledRelease::new(&release).unwrap();
    let parts = compiled
        .render_with_user_values(&objects, &deterministic(), &user)
        .unwrap();
    let cli = capstan(&[
        "render",
        dir.to_str().unwrap(),
        "--cluster",
        "testdata/cluster.yaml",
        "--control-plane",
        "testdata/control-plane.yaml",
        "--infra-cluster",
        "testdata/infra-cluster.yaml",
        "--values",
        user_file.to_str().unwrap(),
    ]);
    assert!(cli.status.success(), "{}", String::from_utf8_lossy(&cli.stderr));
    let printed = String::from_utf8(cli.stdout).unwrap();
    assert_eq!(printed, labelled_stream(&parts));
    let without = compiled.render(&objects, &deterministic()).unwrap();
    assert_ne!(
        parts[1].rendered, without[1].rendered,
        "the user values change the addons"
    );
    assert!(
        printed.contains("    team: platform\n"),
        "the user's label is applied"
    );
    // `args: null` deleted the parent chart's default for its subchart.
    let flag = "--kubelet-insecure-tls";
    assert!(labelled_stream(&without).contains(flag) && !printed.contains(flag));

    // Real Helm, given the computed values and the user's file as two -f files, agrees.
    let computed = compiled.addon_values(&objects).unwrap();
    let computed_file = out.join("computed.yaml");
    std::fs::write(&computed_file, &computed[0].1.as_ref().unwrap().text).unwrap();
    let addon = &release.addon_charts().unwrap()[0];
    let chart_path = match release.addon() {
        capstan_stack::release::Addon::Single { chart, .. } => chart.clone(),
        capstan_stack::release::Addon::Staged { .. } => panic!("ferrol v1 has a single addon chart"),
    };
    let mut questions =
        stack::questions_for("ferrol user values", &chart_path, &addon.chart, &parts[1], &out);
    for question in &mut questions {
        question.set_values_files(&[&computed_file, &user_file]);
    }
    let failures = stack::differences(&shared, &python, &questions, &out);
    assert!(failures.is_empty(), "parts that differ from Helm: {failures:?}");
}

/// A cached release that does not load (a chart that is not gzip, stored as such): the error
/// names the release and its file, never the scratch copy the CLI loaded it from, which is
/// gone when the error is read (issue 45 §11).
#[test]
fn a_cached_release_that_does_not_load_is_named_by_its_tag() {
    let release = example_release("broken-cached-release");
    let dir = release.dir().to_path_buf();
    let tag = release.tag().tag().to_string();
    let cache_dir = scratch("broken-cached-release-cache");
    let cache = capstan_source::cache::Cache::open(&cache_dir).unwrap();
    let mut files = std::collections::BTreeMap::new();
    let mut broken = None;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let mut bytes = std::fs::read(&path).unwrap();
        if name.contains("cluster-class") && name.ends_with(".tgz") {
            bytes = b"not a gzip archive".to_vec();
            broken = Some(name.clone());
        }
        let file = cache
            .put_blob(
                &name,
                bytes.as_slice(),
                &capstan_source::cache::Expected::default(),
            )
            .unwrap();
        files.insert(name, file);
    }
    let broken = broken.expect("the example release has a cluster-class chart");
    cache
        .commit_release(&capstan_source::cache::ReleaseManifest {
            key: format!("github.com/example/stacks/{tag}"),
            origin: "a test".to_string(),
            files,
        })
        .unwrap();

    let out = capstan(&[
        "render",
        &tag,
        "--cluster",
        "testdata/cluster.yaml",
        "--cache",
        cache_dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("{tag}/{broken}")),
        "names the release's file: {err}"
    );
    let scratch_root = std::env::temp_dir().join("capstan-");
    assert!(
        !err.contains(scratch_root.to_str().unwrap()),
        "names no scratch path: {err}"
    );
}
