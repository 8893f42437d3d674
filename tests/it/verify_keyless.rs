//! Keyless cosign signatures read from the real registry (Debian's docker-registry). The
//! signature is a real one made by `cosign sign` for a foreign image digest
//! (testdata/verify/keyless/README.md): its layer — payload blob and annotations, byte for byte —
//! is pushed in a signature manifest at that digest's `sha256-<hex>.sig` tag, and capstan reads
//! and verifies it from there offline against Sigstore's public-good trusted root. The CLI's
//! keyless flags refuse what they cannot check.

use std::path::PathBuf;
use std::process::Command;

use bytes::Bytes;
use capstan_source::cache::Cache;
use capstan_source::oci::release::OciRepo;
use capstan_source::oci::{Client, Config, signature};
use capstan_source::verify::{Identity, Policy, TrustedRoot};
use capstan_testenv::registry::{Auth, Registry};

const DIGEST: &str = "sha256:c05263d2ff654c3a94243662440913f045075d59c436e2c69e9145ec2b87a321";

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/verify/keyless")
            .join(name),
    )
    .unwrap()
}

fn policy(subject: &str) -> Policy {
    let root = TrustedRoot::from_json(&fixture("trusted_root.json"), "trusted_root.json").unwrap();
    Policy::keyless(
        vec![Identity::new(r"https://token\.actions\.githubusercontent\.com", subject).unwrap()],
        root,
    )
}

#[test]
fn verify_keyless_a_real_signature_is_read_and_verified_from_the_real_registry() {
    let test = "verify_keyless_a_real_signature_is_read_and_verified_from_the_real_registry";
    let Some(bin) = capstan_testenv::registry::binary_or_skip(test) else {
        return;
    };
    let mut reg = Registry::start(&bin, Auth::Anonymous);
    let repo = OciRepo::parse(&format!("oci://{}/salrashid123/server_image", reg.host())).unwrap();
    let client = Client::new(&reg.host(), Config::default()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    // The real layer (its descriptor and annotations as cosign wrote them) in a manifest of
    // our own: the registry needs its config blob, which the source does not show.
    let real: serde_json::Value = serde_json::from_slice(&fixture("signature-manifest.json")).unwrap();
    let layer = real["layers"][0].clone();
    rt.block_on(push_signature(
        &client,
        &repo,
        DIGEST,
        fixture("payload.json"),
        layer,
    ));
    assert!(rt.block_on(signature::is_signed(&client, &repo, DIGEST)).unwrap());

    let scratch = tempfile::tempdir().unwrap();
    let cache = Cache::open(scratch.path()).unwrap();
    // Boxed: the error is large, and the closure only hands it to the assertions.
    let verify = |digest: &str, policy: &Policy| {
        rt.block_on(signature::verify(
            &client, &cache, &repo, "v0.0.30", digest, policy,
        ))
        .map_err(Box::new)
    };
    let workflow = r"https://github\.com/salrashid123/go-bazel-github-workflow/\.github/workflows/release\.yaml@refs/tags/v.*";
    let refused = verify(DIGEST, &policy("https://github\\.com/other/.*")).unwrap_err();
    assert_eq!(
        refused.refusal().map(|r| r.reason()),
        Some("IdentityMismatch"),
        "{refused}"
    );
    assert!(
        refused
            .to_string()
            .contains("salrashid123/server_image:v0.0.30: not verified: identity mismatch"),
        "{refused}"
    );
    let other_digest = format!("sha256:{}", "1".repeat(64));
    let refused = verify(&other_digest, &policy(workflow)).unwrap_err();
    assert_eq!(
        refused.refusal().map(|r| r.reason()),
        Some("NoSignature"),
        "{refused}"
    );

    let verified = verify(DIGEST, &policy(workflow)).unwrap();
    let who = verified.keyless.clone().unwrap();
    assert_eq!(
        (who.subject.as_str(), who.issuer.as_str()),
        (
            "https://github.com/salrashid123/go-bazel-github-workflow/.github/workflows/release.yaml@refs/tags/v0.0.30",
            "https://token.actions.githubusercontent.com"
        )
    );
    // Recorded: verified again with the registry gone, but not under another identity.
    reg.kill();
    let again = verify(DIGEST, &policy(workflow)).unwrap();
    assert_eq!(again, verified);
    assert!(signature::cached_verification(&cache, &repo, "v0.0.30", DIGEST, &policy("x")).is_none());
}

/// A signature manifest at `digest`'s `sha256-<hex>.sig` tag holding one `layer` (a
/// descriptor as JSON) whose blob is `payload`.
pub(super) async fn push_signature(
    client: &Client,
    repo: &OciRepo,
    digest: &str,
    payload: Vec<u8>,
    layer: serde_json::Value,
) {
    let config = Bytes::from_static(b"{\"rootfs\":{\"type\":\"layers\"}}");
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "size": config.len(),
            "digest": "sha256:771d8c9be16b0dab3efba69c21e6e7bfdd23e2a044e2dfae68acaefe3b8bd0e6",
        },
        "layers": [layer],
    });
    let tag = format!("sha256-{}.sig", digest.trim_start_matches("sha256:"));
    client
        .push_blob(&repo.repository, Bytes::from(payload))
        .await
        .unwrap();
    client.push_blob(&repo.repository, config).await.unwrap();
    client
        .put_manifest(
            &repo.repository,
            &tag,
            "application/vnd.oci.image.manifest.v1+json",
            Bytes::from(manifest.to_string()),
        )
        .await
        .unwrap();
}

/// A keyless signature made by `capstan_testenv::keyless` pushed for `digest`, in cosign's
/// layer: the payload blob with the signature, certificate and bundle annotations.
pub(super) async fn push_keyless(
    client: &Client,
    repo: &OciRepo,
    digest: &str,
    made: &capstan_testenv::keyless::Made,
) {
    use capstan_source::verify::cosign;
    let mut layer = cosign::payload_layer(&made.payload, &made.signature);
    if let Some(a) = layer.annotations.as_mut() {
        a.0.push((cosign::CERTIFICATE_ANNOTATION.into(), made.certificate.clone()));
        a.0.push((cosign::BUNDLE_ANNOTATION.into(), made.bundle.clone()));
    }
    let layer = serde_json::to_value(&layer).unwrap();
    push_signature(client, repo, digest, made.payload.clone(), layer).await;
}

/// Unix seconds now.
pub(super) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[test]
fn verify_keyless_pull_and_render_accept_a_keyless_signed_release_and_refuse_others() {
    let test = "verify_keyless_pull_and_render_accept_a_keyless_signed_release_and_refuse_others";
    let Some(env) = super::verify_cosign::Env::start(test) else {
        return;
    };
    let tag = "docker-ferrol-1-27-v1";
    env.publish(tag);
    let repo = OciRepo::parse(&env.url()).unwrap();
    let client = Client::new(&env.reg.host(), Config::default()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let head = rt.block_on(client.head_manifest(&repo.repository, tag)).unwrap();
    let digest = head.and_then(|h| h.digest).unwrap();
    let now = now();
    let made = capstan_testenv::keyless::signed(&env.target(), &digest, now - 120, now - 60, true);
    rt.block_on(push_keyless(&client, &repo, &digest, &made));
    let root = env.work.path().join("trusted_root.json");
    std::fs::write(&root, &made.trusted_root).unwrap();
    let root = root.to_string_lossy().into_owned();
    let identity = r"https://issuer\.example\.org=dev@example\.org";
    let keyless = ["--verify-identity", identity, "--trusted-root", root.as_str()];

    let url = env.url();
    let mut pull = vec!["releases", "pull", url.as_str(), tag];
    pull.extend(keyless);
    let pulled = super::oci_source::ok(env.capstan(&pull), "pull --verify-identity");
    assert!(
        pulled.contains(&format!(
            "verified {digest}, signed by dev@example.org (issuer https://issuer.example.org)"
        )),
        "{pulled}"
    );
    let release = format!("{}@{tag}", env.url());
    let cluster = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/cluster.yaml");
    let mut render = vec!["render", release.as_str(), "--cluster", cluster];
    render.extend(keyless);
    let rendered = super::oci_source::ok(env.capstan(&render), "render --verify-identity");
    assert!(rendered.contains("kind: ClusterClass"), "{rendered}");

    // Another identity, or the public-good root (which never issued this certificate).
    let mut other = vec![
        "releases",
        "pull",
        url.as_str(),
        tag,
        "--verify-identity",
        r"https://issuer\.example\.org=ops@example\.org",
        "--trusted-root",
        root.as_str(),
    ];
    let err = super::verify_cosign::refused(env.capstan(&other), "pull, another identity");
    assert!(
        err.contains(&format!(
            "{tag}: not verified: identity mismatch: signed by dev@example.org"
        )),
        "{err}"
    );
    other.truncate(6);
    other[5] = identity;
    let err = super::verify_cosign::refused(env.capstan(&other), "pull, public-good root");
    assert!(err.contains("not verified: bad transparency log entry"), "{err}");
}

#[test]
fn verify_keyless_cli_flags_are_checked_before_anything_is_read() {
    let capstan = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_capstan"))
            .args(args)
            .output()
            .unwrap()
    };
    let scratch = tempfile::tempdir().unwrap();
    let cache = scratch.path().to_string_lossy().into_owned();
    let root = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/verify/keyless/trusted_root.json"
    );
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/verify");
    let table: [(&[&str], &str); 4] = [
        (&["--verify-identity", "no-equals-sign"], "give ISSUER=SUBJECT"),
        (&["--verify-identity", "https://x=("], "regex parse error"),
        (
            &["--trusted-root", root],
            "give --verify-identity ISSUER=SUBJECT with it",
        ),
        (
            &["--verify-identity", "https://x=.*", "--trusted-root", dir],
            "reading --trusted-root",
        ),
    ];
    for (flags, want) in table {
        let mut args = vec![
            "releases",
            "pull",
            "oci://127.0.0.1:9/kaas/stacks",
            "v1",
            "--cache",
            &cache,
        ];
        args.extend_from_slice(flags);
        let out = capstan(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(want), "{flags:?}: {err}");
    }
}
