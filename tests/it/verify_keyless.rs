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
    let tag = format!("sha256-{}.sig", DIGEST.trim_start_matches("sha256:"));
    rt.block_on(async {
        client
            .push_blob(&repo.repository, Bytes::from(fixture("payload.json")))
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
    });
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
