//! Helm provenance of chart dependencies (`--keyring`), on a loopback Helm repository serving
//! a chart signed by real GnuPG (testdata/provenance/make.sh): the signed chart resolves and
//! its `.prov` is kept with it (a second resolution makes no request); each bad case refuses
//! the resolution naming the chart, the dependency, its version, the repository and the reason;
//! the CLI's `dependency update` and `render --dependency-update` take `--keyring`.

use std::path::{Path, PathBuf};

use capstan_source::cache::Cache;
use capstan_source::charts::{ChartResolver, Settings};
use capstan_source::verify::provenance::Keyring;
use capstan_testenv::StaticServer;

const REPOSITORY: &str = "https://charts.example/signed";

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/provenance")
}

fn keyring(name: &str) -> Keyring {
    Keyring::parse(&std::fs::read(fixtures().join(name)).unwrap(), name).unwrap()
}

/// A copy of the signed repository (index, archive, `.prov`) to change per case.
fn repository(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for name in ["index.yaml", "demo-0.1.0.tgz", "demo-0.1.0.tgz.prov"] {
        std::fs::copy(fixtures().join(name), dir.join(name)).unwrap();
    }
}

fn parent(dir: &Path) {
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        format!(
            "apiVersion: v2\nname: parent\nversion: 0.1.0\ndependencies:\n  - name: demo\n    version: 0.1.0\n    repository: {REPOSITORY}\n"
        ),
    )
    .unwrap();
}

/// A scratch directory with the signed repository served on loopback and a parent chart
/// depending on it; the cache in `scratch/cache`.
fn signed_setup() -> (tempfile::TempDir, StaticServer, Cache, PathBuf) {
    let scratch = tempfile::tempdir().unwrap();
    repository(&scratch.path().join("repo"));
    parent(&scratch.path().join("parent"));
    let server = StaticServer::start(&scratch.path().join("repo"));
    let cache = Cache::open(scratch.path().join("cache")).unwrap();
    let chart_dir = scratch.path().join("parent");
    (scratch, server, cache, chart_dir)
}

fn settings(server: &StaticServer, keyring: Option<Keyring>) -> Settings {
    Settings {
        mirrors: vec![(REPOSITORY.into(), server.url())],
        keyring,
        ..Settings::default()
    }
}

fn resolve(
    server: &StaticServer,
    cache: &Cache,
    chart_dir: &Path,
    keyring: Option<Keyring>,
) -> Result<Vec<String>, String> {
    let chart = capstan_chart::load::load(chart_dir).unwrap();
    let resolver = ChartResolver::new(cache.clone(), settings(server, keyring)).unwrap();
    resolver
        .resolve_chart(chart, Some(chart_dir))
        .map(|c| c.dependencies.iter().map(|d| d.name().to_string()).collect())
        .map_err(|e| e.to_string())
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn chart_provenance_a_signed_dependency_resolves_and_its_provenance_is_kept() {
    let (_scratch, server, cache, chart_dir) = signed_setup();

    let got = resolve(&server, &cache, &chart_dir, Some(keyring("signer.pubring.gpg")));
    assert_eq!(got, Ok(vec!["demo".to_string()]));
    let fetched: Vec<String> = server.log().into_iter().map(|(line, _)| line).collect();
    assert!(
        fetched.iter().any(|l| l.contains("/demo-0.1.0.tgz.prov")),
        "{fetched:?}"
    );
    let cold = server.requests();
    // Cached: neither the chart nor its provenance is fetched again, and it is checked again
    // (a keyring without the signer now refuses it).
    assert_eq!(
        resolve(&server, &cache, &chart_dir, Some(keyring("signer.pub.asc"))),
        got
    );
    let err = resolve(&server, &cache, &chart_dir, Some(keyring("stranger.pubring.gpg"))).unwrap_err();
    assert!(err.contains("(WrongKey)"), "{err}");
    assert_eq!(server.requests(), cold, "{:?}", server.log());
    // Without a keyring nothing is checked, as before.
    let plain = tempfile::tempdir().unwrap();
    let before = server.requests();
    let cache = Cache::open(plain.path()).unwrap();
    assert_eq!(resolve(&server, &cache, &chart_dir, None), got);
    assert!(!server.log()[before..].iter().any(|(l, _)| l.contains(".prov")));
}

/// Issue 35 §3: each check's verdict is handed to the caller (the operator's status), and a
/// pass is recorded in the cache with its signer, so the same archive is not checked again
/// while the signer is in the keyring: with the kept `.prov` gone and the repository stopped
/// it still resolves; a keyring without the signer still refuses it.
#[test]
fn chart_provenance_verdicts_name_the_signer_and_a_recorded_pass_is_reused() {
    use capstan_source::charts::{Outcome, Signer};
    let (scratch, server, cache, chart_dir) = signed_setup();
    let cache_dir = scratch.path().join("cache");
    let signer = keyring("signer.pubring.gpg").fingerprints()[0].clone();
    let verdicts = |settings: Settings| {
        let chart = capstan_chart::load::load(&chart_dir).unwrap();
        let resolver = ChartResolver::new(cache.clone(), settings).unwrap();
        let resolved = resolver.resolve_chart(chart, Some(&chart_dir)).map(|_| ());
        (resolved.map_err(|e| e.to_string()), resolver.verdicts())
    };
    let (resolved, found) = verdicts(settings(&server, Some(keyring("signer.pubring.gpg"))));
    assert_eq!(resolved, Ok(()));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (
            found[0].chart.as_str(),
            found[0].dependency.as_str(),
            found[0].version.as_str()
        ),
        ("parent", "demo", "0.1.0")
    );
    assert_eq!(found[0].repository, REPOSITORY);
    assert_eq!(
        found[0].outcome,
        Outcome::Signed(Signer {
            method: "provenance".into(),
            signer: format!("{signer} (Capstan Test Signer <signer@capstan.test>)"),
        })
    );
    // The kept `.prov` removed and the repository stopped: the recorded pass is enough.
    std::fs::remove_dir_all(cache_dir.join("state/provenance")).unwrap();
    let mirror = settings(&server, None).mirrors;
    drop(server);
    let offline = |ring: &str| Settings {
        mirrors: mirror.clone(),
        keyring: Some(keyring(ring)),
        ..Settings::default()
    };
    let (resolved, found) = verdicts(offline("signer.pub.asc"));
    assert_eq!(resolved, Ok(()));
    assert!(
        matches!(&found[0].outcome, Outcome::Signed(s) if s.signer.starts_with(&signer)),
        "{found:?}"
    );
    // Not under a keyring without the signer: checked again, which needs the `.prov`.
    let (resolved, found) = verdicts(offline("stranger.pubring.gpg"));
    assert!(resolved.is_err(), "{resolved:?}");
    assert!(
        found.iter().all(|v| !matches!(v.outcome, Outcome::Signed(_))),
        "{found:?}"
    );
}

/// A refusal's verdict carries the reason the operator's condition names.
#[test]
fn chart_provenance_a_refusal_s_verdict_names_its_reason() {
    use capstan_source::charts::{Outcome, Verdict};
    let (_scratch, server, cache, chart_dir) = signed_setup();
    let chart = capstan_chart::load::load(&chart_dir).unwrap();
    let resolver =
        ChartResolver::new(cache, settings(&server, Some(keyring("stranger.pubring.gpg")))).unwrap();
    let err = resolver
        .resolve_chart(chart, Some(&chart_dir))
        .map(|_| ())
        .unwrap_err()
        .to_string();
    let found = resolver.verdicts();
    let refused = Verdict::first_refused(&found).expect("a refusal");
    let Outcome::Refused { reason, message } = &refused.outcome else {
        unreachable!()
    };
    assert_eq!(*reason, "WrongKey");
    assert!(err.contains(message.as_str()), "{err} / {message}");
    assert_eq!(refused.dependency, "demo");
}

#[test]
fn chart_provenance_a_repository_policy_overrides_the_default_keyring_for_its_repository() {
    use capstan_source::charts::RepositoryPolicy;
    let scratch = tempfile::tempdir().unwrap();
    repository(&scratch.path().join("repo"));
    parent(&scratch.path().join("parent"));
    let server = StaticServer::start(&scratch.path().join("repo"));
    let chart_dir = scratch.path().join("parent");
    let rule = |url: &str, ring: Option<&str>| RepositoryPolicy {
        repository: url.into(),
        keyring: ring.map(keyring),
        ..RepositoryPolicy::default()
    };
    // (default keyring, rules, the refusal or None when the chart resolves)
    let table: Vec<(Option<&str>, Vec<RepositoryPolicy>, Option<&str>)> = vec![
        // The rule of the chart's repository (as Chart.yaml writes it, not the mirror) wins.
        (
            Some("stranger.pubring.gpg"),
            vec![rule(REPOSITORY, Some("signer.pubring.gpg"))],
            None,
        ),
        (
            Some("signer.pubring.gpg"),
            vec![rule(REPOSITORY, Some("stranger.pubring.gpg"))],
            Some("(WrongKey)"),
        ),
        // The longest matching URL wins over a rule for the whole host.
        (
            None,
            vec![
                rule("https://charts.example/", Some("signer.pubring.gpg")),
                rule(REPOSITORY, Some("stranger.pubring.gpg")),
            ],
            Some("(WrongKey)"),
        ),
        // A rule requiring nothing exempts its repository from the default.
        (Some("stranger.pubring.gpg"), vec![rule(REPOSITORY, None)], None),
        // A rule for another repository leaves the default.
        (
            Some("stranger.pubring.gpg"),
            vec![rule("https://charts.example/sign", Some("signer.pubring.gpg"))],
            Some("(WrongKey)"),
        ),
        (
            None,
            vec![rule("https://charts.example/sign", Some("stranger.pubring.gpg"))],
            None,
        ),
    ];
    for (i, (default, rules, want)) in table.into_iter().enumerate() {
        let cache = Cache::open(scratch.path().join(format!("cache-{i}"))).unwrap();
        let resolver = ChartResolver::new(
            cache,
            Settings {
                repository_policies: rules,
                ..settings(&server, default.map(keyring))
            },
        )
        .unwrap();
        let got = resolver
            .resolve_chart(capstan_chart::load::load(&chart_dir).unwrap(), Some(&chart_dir))
            .map(|c| c.dependencies.len())
            .map_err(|e| e.to_string());
        match want {
            None => assert_eq!(got, Ok(1), "row {i}"),
            Some(reason) => {
                let err = got.unwrap_err();
                assert!(
                    err.contains(&format!("dependency demo from {REPOSITORY}")) && err.contains(reason),
                    "row {i}: {err}"
                );
            }
        }
    }
}

#[test]
fn chart_provenance_every_bad_case_refuses_naming_chart_version_repository_and_reason() {
    let good = std::fs::read(fixtures().join("demo-0.1.0.tgz.prov")).unwrap();
    let archive = std::fs::read(fixtures().join("demo-0.1.0.tgz")).unwrap();
    // The same chart, another archive: the gzip header's mtime changed (the index names it).
    let mut other_archive = archive.clone();
    other_archive[4] ^= 1;
    let index = std::fs::read_to_string(fixtures().join("index.yaml")).unwrap();
    let other_index = index.replace(&sha256(&archive), &sha256(&other_archive));
    let tampered = String::from_utf8(good.clone())
        .unwrap()
        .replace("description: A chart", "description: A Chart")
        .into_bytes();
    type Change = Box<dyn Fn(&Path)>;
    let write = |name: &'static str, bytes: Vec<u8>| -> Change {
        Box::new(move |dir: &Path| std::fs::write(dir.join(name), &bytes).unwrap())
    };
    let cases: Vec<(&str, Change, &str, &str)> = vec![
        (
            "no .prov",
            Box::new(|dir: &Path| std::fs::remove_file(dir.join("demo-0.1.0.tgz.prov")).unwrap()),
            "signer.pubring.gpg",
            "(NoProvenance): no provenance file: GET ",
        ),
        (
            "Chart.yaml of another version",
            write(
                "demo-0.1.0.tgz.prov",
                std::fs::read(fixtures().join("other-version.prov")).unwrap(),
            ),
            "signer.pubring.gpg",
            "(ChartMismatch): the provenance signs demo 0.2.0, not demo 0.1.0",
        ),
        (
            "another archive",
            Box::new(move |dir: &Path| {
                std::fs::write(dir.join("demo-0.1.0.tgz"), &other_archive).unwrap();
                std::fs::write(dir.join("index.yaml"), &other_index).unwrap();
            }),
            "signer.pubring.gpg",
            "(DigestMismatch): sha256 sum does not match for demo-0.1.0.tgz",
        ),
        (
            "a keyring without the signer",
            Box::new(|_: &Path| {}),
            "stranger.pubring.gpg",
            "(WrongKey): signed by a key not in the keyring",
        ),
        (
            "the signed text changed",
            write("demo-0.1.0.tgz.prov", tampered),
            "signer.pubring.gpg",
            "(TamperedSignature): the signature does not verify",
        ),
    ];
    for (what, change, ring, reason) in cases {
        let scratch = tempfile::tempdir().unwrap();
        let repo = scratch.path().join("repo");
        repository(&repo);
        change(&repo);
        parent(&scratch.path().join("parent"));
        let server = StaticServer::start(&repo);
        let cache = Cache::open(scratch.path().join("cache")).unwrap();
        let err = resolve(
            &server,
            &cache,
            &scratch.path().join("parent"),
            Some(keyring(ring)),
        )
        .expect_err(what);
        let head = format!(
            "chart parent: dependency demo from {REPOSITORY} (mirror {}): demo 0.1.0: provenance not verified ",
            server.url()
        );
        assert!(err.starts_with(&head) && err.contains(reason), "{what}: {err}");
    }
}

#[test]
fn chart_provenance_the_cli_takes_keyring_on_dependency_update_and_render() {
    let scratch = tempfile::tempdir().unwrap();
    repository(&scratch.path().join("repo"));
    let chart_dir = scratch.path().join("parent");
    parent(&chart_dir);
    std::fs::write(
        chart_dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: parent\n",
    )
    .unwrap();
    let server = StaticServer::start(&scratch.path().join("repo"));
    let capstan = |args: &[&str], ring: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_capstan"))
            .args(args)
            .arg("--cache")
            .arg(scratch.path().join(format!("cache-{ring}")))
            .arg("--repository-mirror")
            .arg(format!("{REPOSITORY}={}", server.url()))
            .arg("--keyring")
            .arg(fixtures().join(ring))
            .output()
            .unwrap()
    };
    let dir = chart_dir.to_str().unwrap();
    let out = capstan(&["render", dir, "--dependency-update"], "stranger.pubring.gpg");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("demo 0.1.0: provenance not verified (WrongKey)"),
        "{stderr}"
    );
    let out = capstan(&["dependency", "update", dir], "stranger.pubring.gpg");
    assert!(!out.status.success());
    assert!(
        !chart_dir.join("charts/demo-0.1.0.tgz").exists(),
        "a refused chart was written"
    );

    let out = capstan(&["render", dir, "--dependency-update"], "signer.pubring.gpg");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("name: release-name-demo"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = capstan(&["dependency", "update", dir], "signer.pubring.gpg");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(chart_dir.join("charts/demo-0.1.0.tgz").is_file());
}

#[test]
fn chart_provenance_the_cli_takes_a_dependency_policy_file() {
    let scratch = tempfile::tempdir().unwrap();
    repository(&scratch.path().join("repo"));
    let chart_dir = scratch.path().join("parent");
    parent(&chart_dir);
    let server = StaticServer::start(&scratch.path().join("repo"));
    for ring in ["signer.pubring.gpg", "stranger.pubring.gpg"] {
        std::fs::copy(fixtures().join(ring), scratch.path().join(ring)).unwrap();
    }
    let render = |policy: &str, extra: &[&str]| {
        let file = scratch.path().join("policy.yaml");
        std::fs::write(&file, policy).unwrap();
        let cache = tempfile::tempdir().unwrap();
        std::process::Command::new(env!("CARGO_BIN_EXE_capstan"))
            .args(["render", chart_dir.to_str().unwrap(), "--dependency-update"])
            .arg("--cache")
            .arg(cache.path())
            .arg("--repository-mirror")
            .arg(format!("{REPOSITORY}={}", server.url()))
            .arg("--dependency-policy")
            .arg(&file)
            .args(extra)
            .output()
            .unwrap()
    };
    let stranger = fixtures().join("stranger.pubring.gpg");
    let out = render(
        &format!("repositories:\n- url: {REPOSITORY}\n  keyring: signer.pubring.gpg\n"),
        &["--keyring", stranger.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = render(
        "repositories:\n- url: https://charts.example\n  keyring: stranger.pubring.gpg\n",
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains(&format!("dependency demo from {REPOSITORY}"))
            && stderr.contains("demo 0.1.0: provenance not verified (WrongKey)"),
        "{stderr}"
    );
    let out = render(
        "repositories:\n- url: https://charts.example\n  keyring: nowhere.gpg\n",
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("repositories[0]: keyring: reading "),
        "{stderr}"
    );
}

/// Pushes the fixture chart to `HOST/REPO/demo:0.1.0` as Helm pushes a chart (config, chart
/// layer, and with `prov` the provenance layer); returns the manifest digest.
fn push_chart(client: &capstan_source::oci::Client, repository: &str, prov: Option<Vec<u8>>) -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let blob = |media_type: &str, data: Vec<u8>| {
        let digest = rt
            .block_on(client.push_blob(repository, bytes::Bytes::from(data.clone())))
            .unwrap();
        serde_json::json!({"mediaType": media_type, "digest": digest, "size": data.len()})
    };
    let config = blob(
        "application/vnd.cncf.helm.config.v1+json",
        br#"{"apiVersion":"v2","name":"demo","version":"0.1.0"}"#.to_vec(),
    );
    let mut layers = vec![blob(
        "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
        std::fs::read(fixtures().join("demo-0.1.0.tgz")).unwrap(),
    )];
    if let Some(prov) = prov {
        layers.push(blob("application/vnd.cncf.helm.chart.provenance.v1.prov", prov));
    }
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config,
        "layers": layers,
    });
    rt.block_on(client.put_manifest(
        repository,
        "0.1.0",
        "application/vnd.oci.image.manifest.v1+json",
        bytes::Bytes::from(serde_json::to_vec(&manifest).unwrap()),
    ))
    .unwrap()
}

#[test]
fn chart_provenance_oci_charts_carry_a_provenance_layer_and_cosign_signatures() {
    let test = "chart_provenance_oci_charts_carry_a_provenance_layer_and_cosign_signatures";
    let Some(bin) = capstan_testenv::registry::binary_or_skip(test) else {
        return;
    };
    use capstan_source::charts::RepositoryPolicy;
    use capstan_source::oci::{Client, Config, OciRepo, signature};
    use capstan_source::verify::{Policy, SigningKey};
    use capstan_testenv::registry::{Auth, Registry};
    let reg = Registry::start(&bin, Auth::Anonymous);
    let client = Client::new(&reg.host(), Config::default()).unwrap();
    let good = std::fs::read(fixtures().join("demo-0.1.0.tgz.prov")).unwrap();
    let digest = push_chart(&client, "signed/demo", Some(good));
    push_chart(&client, "unsigned/demo", None);
    let key = SigningKey::generate().unwrap();
    let stranger = SigningKey::generate().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let repo = OciRepo::parse(&format!("oci://{}/signed/demo", reg.host())).unwrap();
    rt.block_on(signature::sign(&client, &repo, &digest, &key))
        .unwrap();

    let resolve = |path: &str,
                   keyring: Option<Keyring>,
                   cosign: Option<&SigningKey>,
                   repository_policies: Vec<RepositoryPolicy>| {
        let scratch = tempfile::tempdir().unwrap();
        let chart_dir = scratch.path().join("parent");
        std::fs::create_dir_all(chart_dir.join("templates")).unwrap();
        std::fs::write(
            chart_dir.join("Chart.yaml"),
            format!(
                "apiVersion: v2\nname: parent\nversion: 0.1.0\ndependencies:\n  - name: demo\n    version: 0.1.0\n    repository: oci://{}/{path}\n",
                reg.host()
            ),
        )
        .unwrap();
        let settings = Settings {
            keyring,
            cosign: Policy::keyed(cosign.map(|k| vec![k.public_key().clone()]).unwrap_or_default()),
            repository_policies,
            ..Settings::default()
        };
        let cache = Cache::open(scratch.path().join("cache")).unwrap();
        let resolver = ChartResolver::new(cache, settings).unwrap();
        resolver
            .resolve_chart(capstan_chart::load::load(&chart_dir).unwrap(), Some(&chart_dir))
            .map(|c| c.dependencies.len())
            .map_err(|e| e.to_string())
    };
    let signer = || Some(keyring("signer.pubring.gpg"));
    assert_eq!(resolve("signed", signer(), None, Vec::new()), Ok(1));
    assert_eq!(resolve("signed", None, Some(&key), Vec::new()), Ok(1));
    assert_eq!(resolve("signed", signer(), Some(&key), Vec::new()), Ok(1));
    let table: Vec<(&str, Option<Keyring>, Option<&SigningKey>, &str)> = vec![
        (
            "signed",
            Some(keyring("stranger.pubring.gpg")),
            None,
            "(WrongKey): signed by a key not in the keyring",
        ),
        ("unsigned", signer(), None, "(NoProvenance): no provenance file: "),
        (
            "signed",
            None,
            Some(&stranger),
            "no signature verifies under the given key(s)",
        ),
        (
            "unsigned",
            None,
            Some(&key),
            "no signature: the registry has no cosign signature",
        ),
    ];
    for (path, keyring, cosign, want) in table {
        let err = resolve(path, keyring, cosign, Vec::new()).unwrap_err();
        let head = format!("chart parent: dependency demo from oci://{}/{path}: ", reg.host());
        assert!(err.starts_with(&head) && err.contains(want), "{path}: {err}");
    }
    // Per repository: the rule of the chart's repository replaces the default policy.
    let rule = |path: &str, cosign: Option<&SigningKey>| RepositoryPolicy {
        repository: format!("oci://{}/{path}", reg.host()),
        keyring: None,
        cosign: Policy::keyed(cosign.map(|k| vec![k.public_key().clone()]).unwrap_or_default()),
    };
    assert_eq!(
        resolve("signed", None, Some(&stranger), vec![rule("signed", Some(&key))]),
        Ok(1)
    );
    assert_eq!(
        resolve("unsigned", None, Some(&key), vec![rule("unsigned", None)]),
        Ok(1)
    );
    let err = resolve("signed", None, Some(&key), vec![rule("signed", Some(&stranger))]).unwrap_err();
    assert!(
        err.contains("no signature verifies under the given key(s)"),
        "{err}"
    );
    let err = resolve("unsigned", None, None, vec![rule("", Some(&key))]).unwrap_err();
    assert!(
        err.contains("no signature: the registry has no cosign signature"),
        "{err}"
    );
}
