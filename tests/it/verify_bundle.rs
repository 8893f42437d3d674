//! Sigstore bundles (cosign v3's format) as OCI referrers of releases, on the real registry
//! (Debian's docker-registry, distribution 2.8: it has no referrers API, so bundles are found
//! through the tag fallback `sha256-<hex>`; the oracle checks which one it used). Keyed bundles
//! are made by an independent signer (tests/oracle/bundle_oracle.py: Python `cryptography`),
//! the keyless one is real (testdata/verify/bundle/README.md). `releases pull` and `render`
//! accept a bundle by a trusted key — a message signature or a DSSE in-toto statement — and a
//! release with both a `.sig` and a bundle by either; every refusal names its reason.

use std::path::Path;
use std::process::Output;

use super::oci_source::ok;
use super::verify_cosign::{Env, fingerprint, pem, refused};

fn bundle_oracle(env: &Env, args: &[&str]) -> Output {
    std::process::Command::new(&env.python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/oracle/bundle_oracle.py"
        ))
        .args(args)
        .output()
        .unwrap()
}

/// A keyed bundle of release `tag` by `key` (oracle options `extra`), pushed as its referrer.
fn attach_keyed(env: &Env, tag: &str, key: &Path, extra: &[&str]) {
    let out = env.work.path().join(format!("{tag}.bundle.json"));
    let (target, k, o) = (
        env.target(),
        pem(key, "cosign.key"),
        out.to_string_lossy().into_owned(),
    );
    let mut args = vec!["keyed", target.as_str(), tag, k.as_str(), o.as_str()];
    args.extend_from_slice(extra);
    ok(bundle_oracle(env, &args), "oracle keyed bundle");
    attach(env, tag, &o);
}

fn attach(env: &Env, tag: &str, bundle: &str) {
    let pushed = ok(
        bundle_oracle(env, &["push", &env.target(), tag, bundle]),
        "oracle push bundle",
    );
    assert_eq!(
        pushed.trim(),
        "tag-fallback",
        "docker-registry 2.8 has no referrers API"
    );
}

#[test]
fn verify_bundle_keyed_bundles_found_as_referrers_verify() {
    let test = "verify_bundle_keyed_bundles_found_as_referrers_verify";
    let Some(env) = Env::start(test) else {
        return;
    };
    let key = env.keygen("trusted", None);
    let other = env.keygen("other", None);
    let signer = fingerprint(&key.join("cosign.pub"));
    let signed = |env: &Env, tag: &str| -> bool {
        let listed = ok(
            env.capstan(&["releases", "list", &env.url(), "-o", "json"]),
            "releases list",
        );
        let list: serde_json::Value = serde_json::from_str(&listed).unwrap();
        let release = list
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r.to_string().contains(tag))
            .unwrap_or_else(|| panic!("{tag} not listed: {listed}"))
            .clone();
        release["signed"] == true
    };
    // A message signature over the manifest's digest, and a DSSE in-toto statement.
    for (tag, extra) in [
        ("docker-ferrol-1-27-v1", vec![]),
        ("docker-ferrol-1-27-v2", vec!["--dsse"]),
    ] {
        env.publish(tag);
        assert!(!signed(&env, tag), "{tag} listed as signed before any bundle");
        attach_keyed(&env, tag, &key, &extra);
        assert!(signed(&env, tag), "{tag} listed as unsigned with a bundle");
        let pulled = ok(env.pull(tag, &key), "pull --verify-key, bundle");
        assert!(pulled.contains(&format!("signed by {signer}")), "{tag}: {pulled}");
        let rendered = ok(env.render(tag, &key), "render --verify-key, bundle");
        assert!(rendered.contains("kind: ClusterClass"), "{rendered}");
    }
    // A `.sig` by one key and a bundle by another: either key verifies it.
    let tag = "docker-ferrol-1-27-v3";
    env.publish(tag);
    ok(
        env.oracle(&["sign", &env.target(), tag, &pem(&other, "cosign.key")]),
        "oracle sign",
    );
    attach_keyed(&env, tag, &key, &["--dsse"]);
    for k in [&key, &other] {
        let pulled = ok(env.pull(tag, k), "pull, .sig and bundle");
        let by = fingerprint(&k.join("cosign.pub"));
        assert!(pulled.contains(&format!("signed by {by}")), "{pulled}");
    }
}

#[test]
fn verify_bundle_every_refusal_names_its_reason() {
    let test = "verify_bundle_every_refusal_names_its_reason";
    let Some(env) = Env::start(test) else {
        return;
    };
    let key = env.keygen("trusted", None);
    let stranger = env.keygen("stranger", None);
    let zero = format!("sha256:{}", "0".repeat(64));
    /// A release, who made its bundle how (none: no bundle), and the reason a pull gives.
    type Case<'a> = (&'a str, Option<(&'a Path, Vec<&'a str>)>, &'a str);
    let cases: [Case; 4] = [
        ("docker-ferrol-1-27-v1", None, "no signature"),
        (
            "docker-ferrol-1-27-v2",
            Some((&stranger, vec!["--dsse"])),
            "signed by another key",
        ),
        (
            "docker-ferrol-1-27-v3",
            Some((&key, vec!["--dsse", "--tamper"])),
            "the payload was changed after signing",
        ),
        (
            "docker-ferrol-1-27-v0-sha-hipstsw",
            Some((&key, vec!["--digest", &zero])),
            "digest mismatch",
        ),
    ];
    for (tag, maker, reason) in cases {
        env.publish(tag);
        if let Some((k, extra)) = maker {
            attach_keyed(&env, tag, k, &extra);
        }
        let err = refused(env.pull(tag, &key), &format!("pull {tag}"));
        assert!(
            err.contains(&format!("{tag}: not verified: ")) && err.contains(reason),
            "{tag}: {err}"
        );
        let err = refused(env.render(tag, &key), &format!("render {tag}"));
        assert!(err.contains(reason), "render {tag}: {err}");
    }
    // A DSSE statement of another manifest, next to the tampered one of v3.
    attach_keyed(
        &env,
        "docker-ferrol-1-27-v3",
        &key,
        &["--dsse", "--digest", &zero],
    );
    let err = refused(
        env.pull("docker-ferrol-1-27-v3", &key),
        "pull, statement of another digest",
    );
    assert!(
        err.contains(&format!("digest mismatch: the signature is of {zero}")),
        "{err}"
    );

    // The real keyless bundle, as a referrer of a release it was not made for: read from the
    // registry and checked through the log and the identity up to its subject.
    let real = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/verify/bundle/bundle-v02.json"
    );
    let root = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/verify/keyless/trusted_root.json"
    );
    attach(&env, "docker-ferrol-1-27-v1", real);
    let keyless = |subject: &str| {
        env.capstan(&[
            "releases",
            "pull",
            &env.url(),
            "docker-ferrol-1-27-v1",
            "--verify-identity",
            &format!("https://token\\.actions\\.githubusercontent\\.com={subject}"),
            "--trusted-root",
            root,
        ])
    };
    let err = refused(
        keyless("https://github\\.com/sigstore-conformance/.*"),
        "pull, keyless bundle of another artifact",
    );
    assert!(
        err.contains("digest mismatch: the signature is of sha256:a0cfc712"),
        "{err}"
    );
    let err = refused(
        keyless("https://github\\.com/someone/.*"),
        "pull, another identity",
    );
    assert!(
        err.contains("identity mismatch: signed by https://github.com/sigstore-conformance/"),
        "{err}"
    );
}

/// `releases mirror` copies a release's Sigstore bundles with it, as `cosign copy` does: the
/// copy in the mirror (a registry without a referrers API: an index at the tag fallback) is
/// listed as signed and verifies by the same key, and by no other, from the mirror alone.
#[test]
fn verify_bundle_a_mirrored_release_keeps_its_bundles() {
    let test = "verify_bundle_a_mirrored_release_keeps_its_bundles";
    let Some(env) = Env::start(test) else {
        return;
    };
    let key = env.keygen("trusted", None);
    let other = env.keygen("other", None);
    let tag = "docker-ferrol-1-27-v1";
    env.publish(tag);
    attach_keyed(&env, tag, &key, &["--dsse"]);
    let mirror = format!("oci://{}/airgap/stacks", env.reg.host());
    let source = format!("{}@{tag}", env.url());
    let out = ok(
        env.capstan(&["releases", "mirror", &source, &mirror]),
        "releases mirror",
    );
    assert!(out.contains("with 1 Sigstore bundle(s)"), "{out}");

    let listed = ok(
        env.capstan(&["releases", "list", &mirror, "-o", "json"]),
        "releases list of the mirror",
    );
    let list: serde_json::Value = serde_json::from_str(&listed).unwrap();
    let copy = list
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r.to_string().contains(tag));
    assert_eq!(
        copy.map(|r| r["signed"].clone()),
        Some(serde_json::json!(true)),
        "{listed}"
    );
    let with = |k: &Path| {
        env.capstan(&[
            "releases",
            "pull",
            &mirror,
            tag,
            "--verify-key",
            &pem(k, "cosign.pub"),
        ])
    };
    let err = refused(with(&other), "pull from the mirror by another key");
    assert!(err.contains("signed by another key"), "{err}");
    let pulled = ok(with(&key), "pull from the mirror, bundle");
    let signer = fingerprint(&key.join("cosign.pub"));
    assert!(pulled.contains(&format!("signed by {signer}")), "{pulled}");
}

/// The sigstore-conformance suite's `bundle-malformed-json_fail` bundle (truncated JSON).
const MALFORMED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/testdata/verify/bundle/bundle-malformed-json_fail.sigstore.json"
);

/// An unreadable bundle among a release's referrers is skipped and named, in either order: a
/// valid keyed bundle beside it verifies; refused only when none does, naming each reason.
#[test]
fn verify_bundle_an_unreadable_bundle_does_not_block_a_valid_one() {
    let test = "verify_bundle_an_unreadable_bundle_does_not_block_a_valid_one";
    let Some(env) = Env::start(test) else {
        return;
    };
    let key = env.keygen("trusted", None);
    let stranger = env.keygen("stranger", None);
    let signer = fingerprint(&key.join("cosign.pub"));
    let skipped = "skipped an unreadable signature: Sigstore bundle sha256:";
    for (tag, malformed_first) in [("docker-ferrol-1-27-v1", true), ("docker-ferrol-1-27-v2", false)] {
        env.publish(tag);
        if malformed_first {
            attach(&env, tag, MALFORMED);
        }
        attach_keyed(&env, tag, &key, &["--dsse"]);
        if !malformed_first {
            attach(&env, tag, MALFORMED);
        }
        let pulled = ok(env.pull(tag, &key), "pull, a valid and a malformed bundle");
        assert!(pulled.contains(&format!("signed by {signer}")), "{tag}: {pulled}");
        assert!(
            pulled.contains(skipped) && pulled.contains("not JSON"),
            "{tag}: {pulled}"
        );
        let rendered = ok(env.render(tag, &key), "render, a valid and a malformed bundle");
        assert!(rendered.contains("kind: ClusterClass"), "{rendered}");
    }
    // The malformed one alone, then beside a stranger's: refused, naming each reason.
    let tag = "docker-ferrol-1-27-v3";
    env.publish(tag);
    attach(&env, tag, MALFORMED);
    let err = refused(env.pull(tag, &key), "pull, only a malformed bundle");
    assert!(
        err.contains(&format!("{tag}: not verified: Sigstore bundle sha256:"))
            && err.contains("unreadable: not JSON"),
        "{err}"
    );
    attach_keyed(&env, tag, &stranger, &[]);
    let err = refused(env.pull(tag, &key), "pull, a malformed and a stranger's bundle");
    assert!(
        err.contains("not verified: none of 2 signatures verifies")
            && err.contains("unreadable: not JSON")
            && err.contains("signed by another key"),
        "{err}"
    );
}

/// A bundle manifest holding `bundle`, a referrer of the manifest `digest` (which the
/// registry need not hold), listed in the index at the fallback tag `sha256-<hex>`.
async fn push_referrer(
    client: &capstan_source::oci::Client,
    repository: &str,
    digest: &str,
    bundle: Vec<u8>,
) {
    use bytes::Bytes;
    const BUNDLE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
    const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
    const INDEX: &str = "application/vnd.oci.image.index.v1+json";
    let size = bundle.len();
    let layer = client.push_blob(repository, Bytes::from(bundle)).await.unwrap();
    let empty = client
        .push_blob(repository, Bytes::from_static(b"{}"))
        .await
        .unwrap();
    let manifest = serde_json::json!({
        "schemaVersion": 2, "mediaType": MANIFEST, "artifactType": BUNDLE,
        "config": {"mediaType": "application/vnd.oci.empty.v1+json", "size": 2, "digest": empty},
        "layers": [{"mediaType": BUNDLE, "size": size, "digest": layer}],
        "subject": {"mediaType": MANIFEST, "size": 1, "digest": digest},
    })
    .to_string();
    let fallback = digest.replace("sha256:", "sha256-");
    let mut index = match client.manifest(repository, &fallback).await {
        Ok(m) => serde_json::from_slice(&m.bytes).unwrap(),
        Err(_) => serde_json::json!({"schemaVersion": 2, "mediaType": INDEX, "manifests": []}),
    };
    // Pushed under a tag of its own: the registry answers with its digest.
    let own_tag = format!("bundle-{}", index["manifests"].as_array().unwrap().len());
    let at = client
        .put_manifest(repository, &own_tag, MANIFEST, Bytes::from(manifest.clone()))
        .await
        .unwrap();
    index["manifests"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "mediaType": MANIFEST, "digest": at, "size": manifest.len(), "artifactType": BUNDLE,
        }));
    client
        .put_manifest(repository, &fallback, INDEX, Bytes::from(index.to_string()))
        .await
        .unwrap();
}

/// The same for keyless bundles, read from the real registry: the real bundle of
/// testdata/verify/bundle/bundle-v02.json and the malformed one, in either order, as referrers
/// of the artifact it signed; verified offline under the trusted root it chains to.
#[test]
fn verify_bundle_an_unreadable_bundle_does_not_block_a_valid_keyless_one() {
    use capstan_source::cache::Cache;
    use capstan_source::oci::release::OciRepo;
    use capstan_source::oci::{Client, Config, signature};
    use capstan_source::verify::{Identity, Policy, TrustedRoot};
    use capstan_testenv::registry::{Auth, Registry};
    let test = "verify_bundle_an_unreadable_bundle_does_not_block_a_valid_keyless_one";
    let Some(bin) = capstan_testenv::registry::binary_or_skip(test) else {
        return;
    };
    let digest = "sha256:a0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf";
    let testdata = |name: &str| {
        std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("testdata/verify")
                .join(name),
        )
        .unwrap()
    };
    let root = TrustedRoot::from_json(&testdata("keyless/trusted_root.json"), "trusted_root.json").unwrap();
    let policy = Policy::keyless(
        vec![
            Identity::new(
                r"https://token\.actions\.githubusercontent\.com",
                r"https://github\.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.*",
            )
            .unwrap(),
        ],
        root,
    );
    let reg = Registry::start(&bin, Auth::Anonymous);
    let client = Client::new(&reg.host(), Config::default()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (valid, malformed) = (
        testdata("bundle/bundle-v02.json"),
        std::fs::read(MALFORMED).unwrap(),
    );
    for (name, first, second, skipped_at) in [
        ("malformed-first", &malformed, &valid, 0),
        ("valid-first", &valid, &malformed, 1),
    ] {
        let repo = OciRepo::parse(&format!("oci://{}/conformance/{name}", reg.host())).unwrap();
        rt.block_on(push_referrer(&client, &repo.repository, digest, first.clone()));
        rt.block_on(push_referrer(&client, &repo.repository, digest, second.clone()));
        let scratch = tempfile::tempdir().unwrap();
        let cache = Cache::open(scratch.path()).unwrap();
        let verified = rt
            .block_on(signature::verify(&client, &cache, &repo, "a", digest, &policy))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            verified
                .signer
                .starts_with("https://github.com/sigstore-conformance/"),
            "{name}: {verified:?}"
        );
        assert_eq!(verified.skipped.len(), 1, "{name}: {verified:?}");
        assert!(
            verified.skipped[0].starts_with("Sigstore bundle sha256:")
                && verified.skipped[0].contains("not JSON"),
            "{name} ({skipped_at}): {verified:?}"
        );
    }
    // Under an identity it does not name: refused, naming both reasons.
    let repo = OciRepo::parse(&format!("oci://{}/conformance/valid-first", reg.host())).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let cache = Cache::open(scratch.path()).unwrap();
    let other = Policy::keyless(
        vec![
            Identity::new(
                r"https://token\.actions\.githubusercontent\.com",
                r"https://github\.com/someone/.*",
            )
            .unwrap(),
        ],
        TrustedRoot::from_json(&testdata("keyless/trusted_root.json"), "trusted_root.json").unwrap(),
    );
    let err = rt
        .block_on(signature::verify(&client, &cache, &repo, "a", digest, &other))
        .unwrap_err();
    assert_eq!(
        err.refusal().map(|r| r.reason()),
        Some("IdentityMismatch"),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("none of 2 signatures verifies")
            && text.contains("identity mismatch")
            && text.contains("unreadable: not JSON"),
        "{text}"
    );
}
