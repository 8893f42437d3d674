//! Stack source trees (`../shared/cluster-stacks-src/providers/**`) built into releases the way
//! `csctl create` builds them, then rendered for the example Cluster and compared with real
//! Helm rendering the built charts with the same values. `openstack/scs2` ships its addon
//! stages without their dependencies: rendering it must fail naming the stack, the chart and
//! the missing dependency, with the message `helm template` prints.

use std::path::{Path, PathBuf};

use capstan_stack::build::{BuildError, build, content_hash, hash_version};
use capstan_stack::release::Addon;
use capstan_stack::render::render_release;
use capstan_stack::{Metadata, Version};
use capstan_testenv::shared::stack::{self, deterministic, example_objects};

fn sources(shared: &Path) -> Vec<PathBuf> {
    let root = shared.join("cluster-stacks-src/providers");
    let mut out = Vec::new();
    for provider in std::fs::read_dir(&root).expect("providers readable").flatten() {
        for stack in std::fs::read_dir(provider.path()).unwrap().flatten() {
            if stack.path().join("csctl.yaml").is_file() {
                out.push(stack.path());
            }
        }
    }
    out.sort();
    out
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn content_hash_is_csctls() {
    let Some(shared) = capstan_testenv::shared::dir("stack content hash") else {
        return;
    };
    // hashes.json of the published v0-sha release records the hash of the node-image
    // directory of its source tree, which cso-test/2 still holds unchanged.
    let node_image = shared.join("cluster-stacks-src/cso-test/2/docker/ferrol/1-27/node-image");
    assert_eq!(
        content_hash(&node_image).unwrap(),
        "doi1jxn627h9jnwutjkfrhn3ypvbqgrjjphikq64"
    );
    let hashes = std::fs::read_to_string(
        shared.join("cluster-stack-releases/docker-ferrol-1-27-v0-sha-hipstsw/hashes.json"),
    )
    .unwrap();
    assert!(hashes.contains("\"nodeImageDir\": \"doi1jxn627h9jnwutjkfrhn3ypvbqgrjjphikq64\""));
}

#[test]
fn every_source_stack_builds_and_renders_like_helm() {
    let Some(shared) = capstan_testenv::shared::dir("stack sources vs helm") else {
        return;
    };
    let python = stack::helm_python("stack sources vs helm");
    let out = scratch("stack-build");
    let objects = example_objects();
    let mut questions = Vec::new();
    let mut built = Vec::new();
    for source in sources(&shared) {
        let rel = source.strip_prefix(&shared).unwrap().display().to_string();
        let version = hash_version(&source).unwrap();
        assert!(version.is_hash(), "{rel}: {version}");
        let dest = out.join(rel.replace('/', "_"));
        let release = build(&source, &version, &dest).unwrap_or_else(|e| panic!("{rel}: {e}"));
        built.push(release.tag().tag());
        // The layout of a published release.
        let metadata = Metadata::load(&dest.join("metadata.yaml")).unwrap();
        assert_eq!(metadata.cluster_stack, version);
        assert_eq!(metadata.cluster_addon, version);
        assert!(dest.join(release.tag().cluster_class_asset()).is_file());
        assert!(dest.join(release.tag().cluster_addon_asset(&version)).is_file());
        assert!(dest.join("hashes.json").is_file());
        assert!(
            matches!(release.addon(), Addon::Staged { .. }),
            "{rel}: every provider stack is multi-stage"
        );
        if rel.ends_with("openstack/scs2") {
            let err = render_release(&release, &objects, &deterministic())
                .expect_err("scs2's addon charts lack their dependencies")
                .to_string();
            let tag = release.tag().tag();
            let expected = format!(
                "release {tag}: cluster-addon/cni (chart CNI): An error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: cilium"
            );
            assert_eq!(err, expected);
            continue;
        }
        questions.extend(stack::release_questions(&release, &objects, &out));
    }
    assert_eq!(
        built.len(),
        3,
        "docker/scs, openstack/scs, openstack/scs2: {built:?}"
    );
    let Some(python) = python else {
        return;
    };
    // docker/scs: class + 2 stages; openstack/scs: class + 4 stages.
    assert_eq!(questions.len(), 2 * 8);
    let failures = stack::differences(&shared, &python, &questions, &out);
    assert!(failures.is_empty(), "parts that differ from Helm: {failures:?}");
}

#[test]
fn helm_refuses_scs2_the_same_way() {
    let Some(shared) = capstan_testenv::shared::dir("scs2 vs helm template") else {
        return;
    };
    let Some(python) = stack::helm_python("scs2 vs helm template") else {
        return;
    };
    let source = shared.join("cluster-stacks-src/providers/openstack/scs2");
    let out = scratch("stack-build-scs2");
    let release = build(&source, &Version::hash("abc1234").unwrap(), &out.join("release")).unwrap();
    let err = render_release(&release, &example_objects(), &deterministic())
        .unwrap_err()
        .to_string();
    let unpacked = out.join("addon");
    let Addon::Staged { archive, .. } = release.addon() else {
        panic!("scs2 is multi-stage")
    };
    stack::unpack(archive, &unpacked);
    let answer = std::process::Command::new(&python)
        .arg(shared.join("tools/helm_oracle.py"))
        .arg(unpacked.join("cni"))
        .arg("--stream")
        .output()
        .unwrap();
    let answer: serde_json::Value = serde_json::from_slice(&answer.stdout).unwrap();
    let helm = answer["error"].as_str().expect("Helm refuses the chart");
    assert!(helm.contains("missing in charts/ directory: cilium"), "{helm}");
    assert!(
        err.ends_with("found in Chart.yaml, but missing in charts/ directory: cilium"),
        "{err}"
    );
}

#[test]
fn bad_sources_fail_precisely() {
    let Some(shared) = capstan_testenv::shared::dir("bad stack sources") else {
        return;
    };
    let base = shared.join("cluster-stacks-src/providers/docker/scs");
    let out = scratch("stack-build-bad");
    let copy = out.join("src");
    copy_tree(&base, &copy);
    let csctl = std::fs::read_to_string(copy.join("csctl.yaml")).unwrap();
    let version = Version::hash("abc1234").unwrap();
    let cases = [
        (
            csctl.replace("type: docker", "type: my-docker"),
            "field config.provider.type: invalid provider \"my-docker\": it contains \"-\"",
        ),
        (
            csctl.replace("clusterStackName: scs", "clusterStackName: \"\""),
            "field config.clusterStackName: is empty",
        ),
        (
            csctl.replace("kubernetesVersion: v1.30.10", "kubernetesVersion: 1.30"),
            "field config.kubernetesVersion: expected a string, found the number 1.3",
        ),
        (
            csctl.replace("csctl.clusterstack.x-k8s.io/v1alpha1", "v1"),
            "field apiVersion: expected \"csctl.clusterstack.x-k8s.io/v1alpha1\"",
        ),
    ];
    for (i, (text, expected)) in cases.iter().enumerate() {
        std::fs::write(copy.join("csctl.yaml"), text).unwrap();
        let err = build(&copy, &version, &out.join(format!("r{i}")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("csctl.yaml: "), "{err}");
        assert!(err.contains(expected), "got {err}\nwant {expected}");
    }
    std::fs::write(copy.join("csctl.yaml"), &csctl).unwrap();
    // A stage that clusteraddon.yaml names but the tree lacks.
    std::fs::remove_dir_all(copy.join("cluster-addon/cni")).unwrap();
    let err = build(&copy, &version, &out.join("r-stage")).unwrap_err();
    assert!(matches!(err, BuildError::Release(_)), "{err}");
    let err = err.to_string();
    assert!(
        err.contains("clusteraddon.yaml names stage \"cni\" (hook AfterControlPlaneInitialized), but docker-scs-1-30-cluster-addon-v0-sha.abc1234.tgz has no chart directory cni/ (it has: metrics-server)"),
        "{err}"
    );
    // The output directory must be empty.
    let err = build(&base, &version, &out.join("r-stage"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("not empty"), "{err}");
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
            let mut perms = std::fs::metadata(&dest).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            std::fs::set_permissions(&dest, perms).unwrap();
        }
    }
}
