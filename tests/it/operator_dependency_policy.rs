//! A ClusterStack's own dependency policy (`spec.dependencyPolicy`) on the real API server
//! with `capstan operator`: the example stack's ClusterClass chart depends on the chart of a
//! Helm repository served on loopback with its `.prov` (real GnuPG, testdata/provenance). Under
//! a rule whose keyring Secret holds another key the release is refused — `SourceVerified=False`
//! `WrongKey` naming the chart, the dependency and its repository, a Warning Event, the metric —
//! and its ClusterClass never appears; with the signer's keyring it becomes Ready, its
//! `status.dependencies` naming the signer; with the stranger's keyring again it is refused
//! while the ClusterClass applied before stays.

use std::path::Path;
use std::time::Duration;

use crate::operator_common::{NS, eventually, names};
use capstan_operator::api::{ClusterStack, ClusterStackRelease};
use capstan_testenv::StaticServer;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams, PostParams};

const RELEASE: &str = "docker-example-1-30-v1";
/// The repository as the chart's Chart.yaml names it (the operator fetches it from a mirror).
const REPOSITORY: &str = "https://charts.example/signed";

/// `(status, reason, message)` of the release's condition `type_`.
fn condition(release: &ClusterStackRelease, type_: &str) -> Option<(String, String, String)> {
    let status = release.status.as_ref()?;
    let c = capstan_operator::api::conditions::find(&status.conditions, type_)?;
    Some((format!("{:?}", c.status), c.reason.clone(), c.message.clone()))
}

/// The example stack with a ClusterClass chart that depends on the fixture chart `demo`,
/// built as release v1 into `dir`.
fn example_with_dependency(dir: &Path) -> std::path::PathBuf {
    let source = dir.join("example");
    crate::git_source::copy_dir(
        &Path::new(capstan_testenv::REPO_ROOT).join("stacks/example"),
        &source,
    );
    let chart_yaml = source.join("cluster-class/Chart.yaml");
    let mut text = std::fs::read_to_string(&chart_yaml).unwrap();
    text.push_str(&format!(
        "dependencies:\n  - name: demo\n    version: 0.1.0\n    repository: {REPOSITORY}\n"
    ));
    std::fs::write(&chart_yaml, text).unwrap();
    let out = dir.join(RELEASE);
    let version = capstan_stack::Version::parse("v1").unwrap();
    capstan_stack::build::build(&source, &version, &out).expect("example release builds");
    out
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stack_s_dependency_policy_admits_only_charts_its_keyring_signed() {
    let test = "a_stack_s_dependency_policy_admits_only_charts_its_keyring_signed";
    let Some(env) = crate::operator_common::start(test, &[]).await else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let fixtures = Path::new(capstan_testenv::REPO_ROOT).join("testdata/provenance");
    let helm_repo = scratch.path().join("helm-repo");
    std::fs::create_dir_all(&helm_repo).unwrap();
    for name in ["index.yaml", "demo-0.1.0.tgz", "demo-0.1.0.tgz.prov"] {
        std::fs::copy(fixtures.join(name), helm_repo.join(name)).unwrap();
    }
    let server = StaticServer::start(&helm_repo);
    let release = example_with_dependency(scratch.path());
    env.github
        .add_release_dir(crate::operator_common::REPO, &release)
        .expect("release published");

    // One Secret per keyring, as `gpg --export` writes it.
    let secrets: Api<Secret> = Api::namespaced(env.client(), NS);
    for (name, ring) in [
        ("signer-keyring", "signer.pubring.gpg"),
        ("stranger-keyring", "stranger.pubring.gpg"),
    ] {
        let bytes = std::fs::read(fixtures.join(ring)).unwrap();
        let secret: Secret = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": NS},
            "data": {"pubring.gpg": k8s_openapi::ByteString(bytes)},
        }))
        .unwrap();
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .expect("Secret created");
    }
    let policy =
        |secret: &str| serde_json::json!([{"repository": REPOSITORY, "keyringSecretRef": {"name": secret}}]);
    let stack: ClusterStack = serde_json::from_value(serde_json::json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1",
        "kind": "ClusterStack",
        "metadata": {"name": "example", "namespace": NS},
        "spec": {
            "provider": "docker", "name": "example", "kubernetesVersion": "1.30",
            "channel": "stable", "autoSubscribe": true, "versions": [], "interval": "5s",
            "source": {"github": {"owner": "scs", "repo": "cluster-stacks"}},
            "dependencyPolicy": policy("stranger-keyring"),
        }
    }))
    .unwrap();
    env.stacks()
        .create(&PostParams::default(), &stack)
        .await
        .expect("ClusterStack created");
    let metrics_addr = format!("127.0.0.1:{}", capstan_testenv::registry::free_port());
    let mirror = format!("{REPOSITORY}={}", server.url());
    let operator = env.operator(
        0,
        &["--metrics-addr", &metrics_addr, "--repository-mirror", &mirror],
    );
    let refused = |release: &ClusterStackRelease| {
        condition(release, "SourceVerified")
            .filter(|(status, reason, _)| status == "False" && reason == "WrongKey")
    };

    // A keyring without the signer: refused, naming chart, dependency, repository, reason.
    let v1 = eventually("v1 refused", Duration::from_secs(120), &operator, || async {
        let v1 = env.releases().get(RELEASE).await.ok()?;
        refused(&v1).is_some().then_some(v1)
    })
    .await;
    let (_, _, message) = refused(&v1).unwrap();
    for part in [
        "chart example-cluster-class",
        "dependency demo from https://charts.example/signed",
        "demo 0.1.0: provenance not verified (WrongKey)",
    ] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    let status = v1.status.as_ref().unwrap();
    assert!(!status.ready && status.dependencies.is_empty(), "{status:?}");
    assert!(
        condition(&v1, "Rendered").is_none() && condition(&v1, "Applied").is_none(),
        "a refused release is neither rendered nor applied: {status:?}"
    );
    assert_eq!(condition(&v1, "Ready").map(|c| c.1), Some("WrongKey".to_string()));
    eventually("a WrongKey Event", Duration::from_secs(30), &operator, || async {
        crate::operator_common::events_about(env.client(), NS, "ClusterStackRelease", RELEASE)
            .await
            .iter()
            .any(|e| e.type_.as_deref() == Some("Warning") && e.reason.as_deref() == Some("WrongKey"))
            .then_some(())
    })
    .await;
    assert!(env.class_names().await.is_empty());
    let text = reqwest::get(format!("http://{metrics_addr}/metrics"))
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    assert!(
        metric(&text, "capstan_source_verifications_total{result=\"WrongKey\"}") >= 1.0,
        "{text}"
    );

    // The signer's keyring: Ready, the signer recorded (at the release's next pass: within the
    // drift interval, a minute here).
    let patch = |secret: &str| serde_json::json!({"spec": {"dependencyPolicy": policy(secret)}});
    env.stacks()
        .patch(
            "example",
            &PatchParams::default(),
            &Patch::Merge(&patch("signer-keyring")),
        )
        .await
        .expect("policy patched");
    eventually("v1 ready", Duration::from_secs(120), &operator, || async {
        (env.ready_releases().await == names(&[RELEASE])).then_some(())
    })
    .await;
    let v1 = env.releases().get(RELEASE).await.unwrap();
    let signer = capstan_source::verify::provenance::Keyring::parse(
        &std::fs::read(fixtures.join("signer.pubring.gpg")).unwrap(),
        "signer",
    )
    .unwrap()
    .fingerprints()[0]
        .clone();
    let dependencies = &v1.status.as_ref().unwrap().dependencies;
    assert_eq!(dependencies.len(), 1, "{dependencies:?}");
    let demo = &dependencies[0];
    assert_eq!(
        (demo.chart.as_str(), demo.name.as_str(), demo.version.as_str()),
        ("example-cluster-class", "demo", "0.1.0")
    );
    assert_eq!(
        (demo.repository.as_str(), demo.method.as_str()),
        (REPOSITORY, "provenance")
    );
    assert_eq!(
        demo.signer,
        format!("{signer} (Capstan Test Signer <signer@capstan.test>)")
    );
    let (status, reason, message) = condition(&v1, "SourceVerified").unwrap();
    assert_eq!((status.as_str(), reason.as_str()), ("True", "Verified"));
    assert!(
        message.contains(&format!("demo 0.1.0 (provenance by {signer}")),
        "{message}"
    );
    assert_eq!(env.class_names().await, names(&[RELEASE]));
    // `capstan get releases -o json` shows the signer.
    let out = std::process::Command::new(crate::operator_common::capstan_binary())
        .args(["get", "releases", "-n", NS, "-o", "json", "--kubeconfig"])
        .arg(env.cluster.kubeconfig_path())
        .output()
        .expect("capstan get releases");
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && listed.contains(&signer),
        "{listed}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The stranger's keyring again: refused, and the ClusterClass applied before stays.
    env.stacks()
        .patch(
            "example",
            &PatchParams::default(),
            &Patch::Merge(&patch("stranger-keyring")),
        )
        .await
        .expect("policy patched");
    eventually(
        "v1 refused again",
        Duration::from_secs(120),
        &operator,
        || async {
            let v1 = env.releases().get(RELEASE).await.ok()?;
            refused(&v1).is_some().then_some(())
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        env.class_names().await,
        names(&[RELEASE]),
        "the previous class keeps running"
    );
    drop(server);
}
