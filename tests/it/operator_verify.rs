//! The operator's signature policy on the real API server and the real registry: a
//! ClusterStack whose `spec.verify` trusts the `*.pub` keys of a Secret gets its signed
//! release Ready with the signer recorded, while a release signed by another key stays
//! `SourceVerified=False` (`WrongKey`) with a Warning Event and a metric, its ClusterClass never
//! applied; the operator's `--verify-key` on a stack whose source is not an OCI registry says
//! verification is only available there (no silent pass). The signatures are capstan's own
//! (cosign's format; tests/it/verify_cosign.rs checks it against an independent signer); the
//! keyless ones are made by `capstan_testenv::keyless`, under a trusted root of their own.

use std::time::Duration;

use crate::operator_common::{NS, eventually, names};
use capstan_operator::api::{ClusterStack, ClusterStackRelease};
use capstan_source::oci::release::{self, OciRepo, PushOptions};
use capstan_source::oci::{Client, Config, signature};
use capstan_source::verify::SigningKey;
use capstan_testenv::registry::{Auth, Registry};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};

const SIGNED: &str = "docker-ferrol-1-27-v1";
const STRANGER: &str = "docker-ferrol-1-27-v2";

/// `(status, reason)` of release `name`'s condition `type_`.
fn condition(release: &ClusterStackRelease, type_: &str) -> Option<(String, String)> {
    let status = release.status.as_ref()?;
    let c = capstan_operator::api::conditions::find(&status.conditions, type_)?;
    Some((format!("{:?}", c.status), c.reason.clone()))
}

/// `(type, reason)` of the Events about ClusterStackRelease `name`.
async fn events_of(client: kube::Client, name: &str) -> Vec<(String, String)> {
    crate::operator_common::events_about(client, NS, "ClusterStackRelease", name)
        .await
        .into_iter()
        .map(|e| (e.type_.unwrap_or_default(), e.reason.unwrap_or_default()))
        .collect()
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0.0)
}

/// The operator's test environment and a registry with its client, of `kaas/cluster-stacks`.
async fn start_with_registry(test: &str) -> Option<(crate::operator_common::Env, Registry, OciRepo, Client)> {
    let bin = capstan_testenv::registry::binary_or_skip(test)?;
    let env = crate::operator_common::start(test, &[]).await?;
    let reg = Registry::start(&bin, Auth::Anonymous);
    let repo = OciRepo::parse(&format!("oci://{}/kaas/cluster-stacks", reg.host())).unwrap();
    let client = Client::new(&reg.host(), Config::default()).unwrap();
    Some((env, reg, repo, client))
}

/// The ClusterStack `ferrol` (v1 and v2) of the registry's releases under `verify`.
async fn create_stack(env: &crate::operator_common::Env, reg: &Registry, verify: serde_json::Value) {
    let stack: ClusterStack = serde_json::from_value(serde_json::json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1",
        "kind": "ClusterStack",
        "metadata": {"name": "ferrol", "namespace": NS},
        "spec": {
            "provider": "docker", "name": "ferrol", "kubernetesVersion": "1.27",
            "channel": "stable", "autoSubscribe": false, "versions": ["v1", "v2"], "interval": "2s",
            "source": {"oci": {"repository": format!("{}/kaas/cluster-stacks", reg.host())}},
            "verify": verify,
        }
    }))
    .unwrap();
    env.stacks()
        .create(&PostParams::default(), &stack)
        .await
        .expect("ClusterStack created");
}

/// The release v1 once it alone is Ready.
async fn v1_alone_ready(
    env: &crate::operator_common::Env,
    operator: &capstan_testenv::ChildGuard,
) -> ClusterStackRelease {
    eventually("v1 ready", Duration::from_secs(120), operator, || async {
        (env.ready_releases().await == names(&[SIGNED])).then_some(())
    })
    .await;
    env.releases().get(SIGNED).await.expect("v1")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stack_with_a_policy_applies_only_releases_its_keys_signed() {
    let test = "a_stack_with_a_policy_applies_only_releases_its_keys_signed";
    let Some((env, reg, repo, client)) = start_with_registry(test).await else {
        return;
    };
    let (trusted, stranger) = (SigningKey::generate().unwrap(), SigningKey::generate().unwrap());
    for (tag, key) in [(SIGNED, &trusted), (STRANGER, &stranger)] {
        let pushed = release::push(&client, &repo, &env.releases.join(tag), &PushOptions::default())
            .await
            .unwrap_or_else(|e| panic!("pushing {tag}: {e}"));
        signature::sign(&client, &repo, &pushed.digest, key)
            .await
            .unwrap_or_else(|e| panic!("signing {tag}: {e}"));
    }
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "release-keys", "namespace": NS},
        "stringData": {"cosign.pub": trusted.public_key().to_pem()},
    }))
    .unwrap();
    Api::<Secret>::namespaced(env.client(), NS)
        .create(&PostParams::default(), &secret)
        .await
        .expect("Secret created");
    let verify = serde_json::json!({"provider": "cosign", "secretRef": {"name": "release-keys"}});
    create_stack(&env, &reg, verify).await;
    let metrics_addr = format!("127.0.0.1:{}", capstan_testenv::registry::free_port());
    let operator = env.operator(0, &["--metrics-addr", &metrics_addr]);

    // The release the trusted key signed: Ready, the signer recorded.
    let v1 = v1_alone_ready(&env, &operator).await;
    assert_eq!(
        v1.status.as_ref().and_then(|s| s.verified_by.as_deref()),
        Some(trusted.public_key().fingerprint())
    );
    assert_eq!(
        condition(&v1, "SourceVerified"),
        Some(("True".into(), "Verified".into()))
    );
    // The release another key signed: refused with its reason and a Warning Event.
    let v2 = eventually("v2 refused", Duration::from_secs(60), &operator, || async {
        let v2 = env.releases().get(STRANGER).await.ok()?;
        (condition(&v2, "SourceVerified") == Some(("False".into(), "WrongKey".into()))).then_some(v2)
    })
    .await;
    let status = v2.status.as_ref().expect("v2 status");
    assert!(!status.ready && status.verified_by.is_none(), "{status:?}");
    assert_eq!(condition(&v2, "Ready"), Some(("False".into(), "WrongKey".into())));
    assert!(
        condition(&v2, "Rendered").is_none() && condition(&v2, "Applied").is_none(),
        "a refused release is neither rendered nor applied: {status:?}"
    );
    let events = eventually("a WrongKey Event", Duration::from_secs(30), &operator, || async {
        let events = events_of(env.client(), STRANGER).await;
        events
            .contains(&("Warning".to_string(), "WrongKey".to_string()))
            .then_some(events)
    })
    .await;
    assert!(!events.iter().any(|(_, reason)| reason == "Ready"), "{events:?}");
    // Only the verified release's ClusterClass is there, several passes later too.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(env.class_names().await, names(&[SIGNED]));
    let text = reqwest::get(format!("http://{metrics_addr}/metrics"))
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    let verified = metric(&text, "capstan_source_verifications_total{result=\"verified\"}");
    let refused = metric(&text, "capstan_source_verifications_total{result=\"WrongKey\"}");
    // The pass is recorded in the cache: v1 is verified once however many passes follow.
    assert!(verified == 1.0 && refused >= 1.0, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_s_verify_key_refuses_a_source_without_signatures() {
    let test = "the_operator_s_verify_key_refuses_a_source_without_signatures";
    let Some(env) = crate::operator_common::start(test, &[SIGNED]).await else {
        return;
    };
    let key = SigningKey::generate().unwrap();
    let key_file = env.logs.path().join("cosign.pub");
    std::fs::write(&key_file, key.public_key().to_pem()).unwrap();
    env.create_stack(&["v1"], "2s").await;
    let operator = env.operator(0, &["--verify-key", key_file.to_str().unwrap()]);
    let v1 = eventually("v1 refused", Duration::from_secs(120), &operator, || async {
        let v1 = env.releases().get(SIGNED).await.ok()?;
        condition(&v1, "SourceVerified").is_some().then_some(v1)
    })
    .await;
    assert_eq!(
        condition(&v1, "SourceVerified"),
        Some(("False".into(), "VerificationUnsupported".into()))
    );
    let message = v1
        .status
        .as_ref()
        .and_then(|s| capstan_operator::api::conditions::find(&s.conditions, "SourceVerified"))
        .map(|c| c.message.clone())
        .unwrap_or_default();
    assert!(
        message.contains("only for releases from an OCI source"),
        "{message}"
    );
    assert!(env.class_names().await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyless_policy_applies_only_releases_its_identities_signed_under_its_root() {
    let test = "a_keyless_policy_applies_only_releases_its_identities_signed_under_its_root";
    let Some((env, reg, repo, client)) = start_with_registry(test).await else {
        return;
    };
    let now = crate::verify_keyless::now();
    // Each signature made by its own authority and log: the stack trusts the first's root.
    let mut roots = Vec::new();
    for tag in [SIGNED, STRANGER] {
        let pushed = release::push(&client, &repo, &env.releases.join(tag), &PushOptions::default())
            .await
            .unwrap_or_else(|e| panic!("pushing {tag}: {e}"));
        let made = capstan_testenv::keyless::signed(
            &format!("{}/kaas/cluster-stacks", reg.host()),
            &pushed.digest,
            now - 120,
            now - 60,
            true,
        );
        crate::verify_keyless::push_keyless(&client, &repo, &pushed.digest, &made).await;
        roots.push(made.trusted_root);
    }
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "sigstore-root", "namespace": NS},
        "stringData": {"trusted_root.json": String::from_utf8(roots[0].clone()).unwrap()},
    }))
    .unwrap();
    Api::<Secret>::namespaced(env.client(), NS)
        .create(&PostParams::default(), &secret)
        .await
        .expect("Secret created");
    let verify = serde_json::json!({
        "provider": "cosign",
        "matchOIDCIdentity": [{"issuer": r"https://issuer\.example\.org", "subject": r".*@example\.org"}],
        "trustedRootSecretRef": {"name": "sigstore-root"},
    });
    create_stack(&env, &reg, verify).await;
    let operator = env.operator(0, &[]);

    let v1 = v1_alone_ready(&env, &operator).await;
    assert_eq!(
        v1.status.as_ref().and_then(|s| s.verified_by.as_deref()),
        Some("dev@example.org (issuer https://issuer.example.org)")
    );
    let v2 = eventually("v2 refused", Duration::from_secs(60), &operator, || async {
        let v2 = env.releases().get(STRANGER).await.ok()?;
        (condition(&v2, "SourceVerified") == Some(("False".into(), "BadInclusionProof".into()))).then_some(v2)
    })
    .await;
    let status = v2.status.as_ref().expect("v2 status");
    assert!(!status.ready && status.verified_by.is_none(), "{status:?}");
    assert_eq!(env.class_names().await, names(&[SIGNED]));
}
