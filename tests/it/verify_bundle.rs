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
