//! Cosign keyed signatures of releases, on the real registry (Debian's docker-registry) with an
//! independent signer and verifier (tests/oracle/cosign_oracle.py: Python `cryptography` and
//! PyNaCl, in the venv of scripts/verify-env.sh) and releases pushed by `oci_release.py`:
//! capstan verifies what Python signed, Python verifies what capstan signed, and every refusal
//! (unsigned, another key, a payload changed after signing, a signature of another manifest)
//! stops `releases pull` and `render` with its reason.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use capstan_testenv::registry::{Auth, Registry};

use super::oci_source::ok;

const REPO: &str = "kaas/cluster-stacks";
const PASSWORD: &str = "capstan-interop";

fn shared(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("CAPSTAN_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    if dir.join("cluster-stack-releases").is_dir() && dir.join("tools/oci_release.py").is_file() {
        return Some(dir);
    }
    let reason = format!(
        "{} has no cluster-stack-releases or tools/oci_release.py",
        dir.display()
    );
    capstan_testenv::skip_or_fail(test, &reason);
    None
}

/// The python of the verify venv (made once by scripts/verify-env.sh).
fn oracle_python(test: &str) -> Option<PathBuf> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/verify-env.sh");
    match Command::new(script).output() {
        Ok(out) if out.status.success() => Some(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())),
        Ok(out) => {
            let reason = format!(
                "scripts/verify-env.sh failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            capstan_testenv::skip_or_fail(test, &reason);
            None
        }
        Err(e) => {
            capstan_testenv::skip_or_fail(test, &format!("scripts/verify-env.sh: {e}"));
            None
        }
    }
}

pub(super) struct Env {
    pub(super) reg: Registry,
    shared: PathBuf,
    pub(super) python: PathBuf,
    pub(super) work: tempfile::TempDir,
}

impl Env {
    pub(super) fn start(test: &str) -> Option<Env> {
        let bin = capstan_testenv::registry::binary_or_skip(test)?;
        let shared = shared(test)?;
        let python = oracle_python(test)?;
        Some(Env {
            reg: Registry::start(&bin, Auth::Anonymous),
            shared,
            python,
            work: tempfile::tempdir().unwrap(),
        })
    }

    pub(super) fn target(&self) -> String {
        format!("{}/{REPO}", self.reg.host())
    }

    pub(super) fn url(&self) -> String {
        format!("oci://{}", self.target())
    }

    fn cache(&self) -> String {
        self.work.path().join("cache").to_string_lossy().into_owned()
    }

    /// `oci_release.py push` (csctl's layout, independent of capstan).
    pub(super) fn publish(&self, tag: &str) {
        let dir = self.shared.join("cluster-stack-releases").join(tag);
        let out = Command::new("python3")
            .arg(self.shared.join("tools/oci_release.py"))
            .args(["push", &self.target(), tag, dir.to_str().unwrap()])
            .args(["--created", "2026-01-01T00:00:00Z"])
            .env_remove("OCI_USERNAME")
            .env_remove("OCI_PASSWORD")
            .env_remove("OCI_ACCESS_TOKEN")
            .output()
            .unwrap();
        ok(out, "oci_release.py push");
    }

    pub(super) fn oracle(&self, args: &[&str]) -> Output {
        Command::new(&self.python)
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/oracle/cosign_oracle.py"
            ))
            .args(args)
            .output()
            .unwrap()
    }

    /// A key pair made by the oracle: `DIR/cosign.key` (cosign's encrypted file under
    /// PASSWORD, or PKCS#8 without one) and `DIR/cosign.pub`.
    pub(super) fn keygen(&self, name: &str, password: Option<&str>) -> PathBuf {
        let dir = self.work.path().join(name);
        let mut args = vec!["keygen", dir.to_str().unwrap()];
        if let Some(p) = password {
            args.extend(["--password", p]);
        }
        ok(self.oracle(&args), "oracle keygen");
        dir
    }

    pub(super) fn capstan(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_capstan"))
            .args(args)
            .args(["--cache", &self.cache()])
            .env_remove("OCI_USERNAME")
            .env_remove("OCI_PASSWORD")
            .env_remove("OCI_ACCESS_TOKEN")
            .env("COSIGN_PASSWORD", PASSWORD)
            .output()
            .unwrap()
    }

    pub(super) fn pull(&self, tag: &str, key: &Path) -> Output {
        self.capstan(&[
            "releases",
            "pull",
            &self.url(),
            tag,
            "--verify-key",
            &pem(key, "cosign.pub"),
        ])
    }

    pub(super) fn render(&self, tag: &str, key: &Path) -> Output {
        let cluster = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/cluster.yaml");
        self.capstan(&[
            "render",
            &format!("{}@{tag}", self.url()),
            "--cluster",
            cluster,
            "--verify-key",
            &pem(key, "cosign.pub"),
        ])
    }
}

pub(super) fn pem(dir: &Path, name: &str) -> String {
    dir.join(name).to_string_lossy().into_owned()
}

pub(super) fn refused(out: Output, what: &str) -> String {
    assert!(
        !out.status.success(),
        "{what} passed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `sha256:<hex>` of the SubjectPublicKeyInfo in a PEM public key file.
pub(super) fn fingerprint(pub_file: &Path) -> String {
    let key = capstan_source::verify::PublicKey::from_pem(&std::fs::read(pub_file).unwrap(), "pub").unwrap();
    key.fingerprint().to_string()
}

#[test]
fn verify_cosign_interop_both_ways_on_the_real_registry() {
    let test = "verify_cosign_interop_both_ways_on_the_real_registry";
    let Some(mut env) = Env::start(test) else {
        return;
    };
    let python_key = env.keygen("python", Some(PASSWORD));
    // Python signs a csctl-made release; capstan verifies, records the signer and renders.
    // `releases list` says whether it is signed, without a policy.
    env.publish("docker-ferrol-1-27-v1");
    let signed = |env: &Env| -> serde_json::Value {
        let listed = ok(
            env.capstan(&["releases", "list", &env.url(), "-o", "json"]),
            "releases list",
        );
        serde_json::from_str::<serde_json::Value>(&listed).unwrap()[0]["signed"].clone()
    };
    assert_eq!(signed(&env), false);
    ok(
        env.oracle(&[
            "sign",
            &env.target(),
            "docker-ferrol-1-27-v1",
            &pem(&python_key, "cosign.key"),
            "--password",
            PASSWORD,
        ]),
        "oracle sign",
    );
    assert_eq!(signed(&env), true);
    let pulled = ok(
        env.pull("docker-ferrol-1-27-v1", &python_key),
        "pull --verify-key",
    );
    let signer = fingerprint(&python_key.join("cosign.pub"));
    assert!(pulled.contains(&format!("signed by {signer}")), "{pulled}");
    // With --keyring the release's chart dependencies are resolved and verified: its addon
    // chart vendors metrics-server in charts/, so there is nothing to fetch.
    let keyring = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/provenance/signer.pubring.gpg"
    );
    let pulled = ok(
        env.capstan(&[
            "releases",
            "pull",
            &env.url(),
            "docker-ferrol-1-27-v1",
            "--keyring",
            keyring,
        ]),
        "pull --keyring",
    );
    assert!(
        pulled.contains("docker-ferrol-1-27-v1: chart dependencies verified against the keyring: 0"),
        "{pulled}"
    );
    let rendered = ok(
        env.render("docker-ferrol-1-27-v1", &python_key),
        "render --verify-key",
    );
    assert!(rendered.contains("kind: ClusterClass"), "{rendered}");

    // capstan signs with the Python-made encrypted key (COSIGN_PASSWORD) and with an
    // unencrypted PKCS#8 key; Python verifies both.
    let plain_key = env.keygen("plain", None);
    for (tag, key) in [
        ("docker-ferrol-1-27-v2", &python_key),
        ("docker-ferrol-1-27-v3", &plain_key),
    ] {
        let dir = env.shared.join("cluster-stack-releases").join(tag);
        let pushed = ok(
            env.capstan(&[
                "releases",
                "push",
                dir.to_str().unwrap(),
                &env.url(),
                "--sign-key",
                &pem(key, "cosign.key"),
            ]),
            "releases push --sign-key",
        );
        assert!(
            pushed.contains(&format!("with key {}", fingerprint(&key.join("cosign.pub")))),
            "{pushed}"
        );
        let verified = ok(
            env.oracle(&["verify", &env.target(), tag, &pem(key, "cosign.pub")]),
            "oracle verify",
        );
        assert!(verified.starts_with("verified sha256:"), "{verified}");
        let other = if std::ptr::eq(key, &python_key) {
            &plain_key
        } else {
            &python_key
        };
        refused(
            env.oracle(&["verify", &env.target(), tag, &pem(other, "cosign.pub")]),
            "oracle verify, other key",
        );
        ok(env.pull(tag, key), "capstan verifies its own signature");
    }

    // A verified release is recorded in the cache: rendered again with the registry gone.
    env.reg.kill();
    ok(
        env.render("docker-ferrol-1-27-v1", &python_key),
        "render from the recorded verification",
    );
}

#[test]
fn verify_cosign_every_refusal_names_its_reason() {
    let test = "verify_cosign_every_refusal_names_its_reason";
    let Some(env) = Env::start(test) else {
        return;
    };
    let key = env.keygen("trusted", None);
    let stranger = env.keygen("stranger", None);
    let sign = |tag: &str, key: &Path, extra: &[&str]| {
        let (target, k) = (env.target(), pem(key, "cosign.key"));
        let mut args = vec!["sign", target.as_str(), tag, k.as_str()];
        args.extend_from_slice(extra);
        ok(env.oracle(&args), "oracle sign");
    };
    let zero = format!("sha256:{}", "0".repeat(64));
    /// A release, who signs it how (none: unsigned), and the reason a pull gives.
    type Case<'a> = (&'a str, Option<(&'a Path, Vec<&'a str>)>, &'a str);
    let cases: [Case; 4] = [
        ("docker-ferrol-1-27-v1", None, "no signature"),
        (
            "docker-ferrol-1-27-v2",
            Some((&stranger, vec![])),
            "signed by another key",
        ),
        (
            "docker-ferrol-1-27-v3",
            Some((&key, vec!["--tamper"])),
            "the payload was changed after signing",
        ),
        (
            "docker-ferrol-1-27-v0-sha-hipstsw",
            Some((&key, vec!["--digest", &zero])),
            "digest mismatch",
        ),
    ];
    for (tag, signer, reason) in cases {
        env.publish(tag);
        if let Some((k, extra)) = signer {
            sign(tag, k, &extra);
        }
        let err = refused(env.pull(tag, &key), &format!("pull {tag}"));
        assert!(
            err.contains(&format!("{tag}: not verified: ")) && err.contains(reason),
            "{tag}: {err}"
        );
        let err = refused(env.render(tag, &key), &format!("render {tag}"));
        assert!(err.contains(reason), "render {tag}: {err}");
        // Without a policy nothing changes: the release renders as before.
        let cluster = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/cluster.yaml");
        ok(
            env.capstan(&["render", &format!("{}@{tag}", env.url()), "--cluster", cluster]),
            "render without --verify-key",
        );
    }
    // --verify-key on a release that cannot carry a cosign signature is refused.
    let dir = env.shared.join("cluster-stack-releases/docker-ferrol-1-27-v1");
    let err = refused(
        env.capstan(&[
            "render",
            dir.to_str().unwrap(),
            "--cluster",
            concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/cluster.yaml"),
            "--verify-key",
            &pem(&key, "cosign.pub"),
        ]),
        "render DIR --verify-key",
    );
    assert!(
        err.contains(
            "--verify-key and --verify-identity verify cosign signatures of releases in an OCI registry"
        ),
        "{err}"
    );
}
