//! `capstan releases mirror` on the real registry: a signed copy of `openstack/scs2` (its cilium
//! pin one the shared chart repositories hold) mirrored with every chart dependency into one
//! repository; with the upstream chart repositories stopped, the mirrored release — pulled into
//! a fresh cache, its copied signature verified — renders from the mirror alone, equal to the
//! online render.

use std::path::Path;
use std::process::{Command, Output};

use capstan_source::cache::Cache;
use capstan_source::charts::{ChartResolver, Settings};
use capstan_source::oci::release::{self, OciRepo};
use capstan_source::oci::{Client, Config, signature};
use capstan_source::verify::{Policy, SigningKey};
use capstan_stack::render::CompiledRelease;
use capstan_testenv::StaticServer;
use capstan_testenv::registry::{Auth, Registry};

use super::oci_source::ok;

/// The upstream repositories of scs2's charts, served on loopback from ../shared/chart-repos.
fn upstream(server: &StaticServer) -> Vec<(String, String)> {
    [
        ("https://helm.cilium.io", "cilium"),
        (
            "https://kubernetes.github.io/cloud-provider-openstack",
            "cloud-provider-openstack",
        ),
        (
            "https://kubernetes-sigs.github.io/metrics-server",
            "metrics-server",
        ),
    ]
    .iter()
    .map(|(from, dir)| (from.to_string(), format!("{}/{dir}", server.url())))
    .collect()
}

fn capstan(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_capstan"))
        .args(args)
        .env_remove("OCI_USERNAME")
        .env_remove("OCI_PASSWORD")
        .env_remove("OCI_ACCESS_TOKEN")
        .env_remove("COSIGN_PASSWORD")
        .output()
        .unwrap()
}

fn render(
    release: &capstan_stack::release::Release,
    cache: &Cache,
    mirrors: Vec<(String, String)>,
) -> Vec<(String, String)> {
    let settings = Settings {
        mirrors,
        ..Settings::default()
    };
    let resolver = ChartResolver::new(cache.clone(), settings).unwrap();
    CompiledRelease::with_resolver(release, Some(&resolver))
        .unwrap()
        .render(
            &capstan_testenv::shared::stack::example_objects(),
            &capstan_testenv::shared::stack::deterministic(),
        )
        .unwrap()
        .into_iter()
        .map(|p| (p.name, p.stream))
        .collect()
}

/// The stack `source` built into `scratch/release` and pushed to `src` signed by `key` (written
/// as `scratch/cosign.key`) with `capstan releases push --sign-key`.
fn publish_signed(
    source: &Path,
    scratch: &Path,
    key: &SigningKey,
    src: &str,
) -> capstan_stack::release::Release {
    let dir = scratch.join("release");
    let built =
        capstan_stack::build::build(source, &capstan_stack::build::hash_version(source).unwrap(), &dir)
            .unwrap();
    let key_file = scratch.join("cosign.key");
    std::fs::write(&key_file, key.to_pkcs8_pem().unwrap()).unwrap();
    let s = |p: &Path| p.to_string_lossy().into_owned();
    ok(
        capstan(&[
            "releases".into(),
            "push".into(),
            s(&dir),
            src.into(),
            "--sign-key".into(),
            s(&key_file),
        ]),
        "releases push --sign-key",
    );
    built
}

#[test]
fn releases_mirror_renders_in_the_air_gap_like_online() {
    let test = "releases_mirror_renders_in_the_air_gap_like_online";
    let Some(bin) = capstan_testenv::registry::binary_or_skip(test) else {
        return;
    };
    let Some(shared) = capstan_testenv::shared::dir(test) else {
        return;
    };
    let repos = shared.join("chart-repos");
    if !repos.join("cilium/index.yaml").is_file() {
        capstan_testenv::skip_or_fail(test, "../shared/chart-repos is missing");
        return;
    }
    let server = StaticServer::start(&repos);
    let scratch = tempfile::tempdir().unwrap();
    let source = scratch.path().join("scs2");
    super::chart_dependencies::scs2_with_shared_cilium(&shared, &source);

    // Published and signed upstream.
    let reg = Registry::start(&bin, Auth::Anonymous);
    let key = SigningKey::generate().unwrap();
    let src = format!("oci://{}/kaas/upstream", reg.host());
    let dst = OciRepo::parse(&format!("oci://{}/airgap/stacks", reg.host())).unwrap();
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let built = publish_signed(&source, scratch.path(), &key, &src);
    let tag = built.tag().tag();

    // The online render, and the mirror made while upstream is reachable.
    let online = render(
        &built,
        &Cache::open(scratch.path().join("online")).unwrap(),
        upstream(&server),
    );
    let mirrors_file = scratch.path().join("mirrors.txt");
    let mut args: Vec<String> = vec![
        "releases".into(),
        "mirror".into(),
        format!("{src}@{tag}"),
        dst.to_string(),
        "--write-mirrors".into(),
        s(&mirrors_file),
        "--cache".into(),
        s(&scratch.path().join("mirror-cache")),
    ];
    for (from, to) in upstream(&server) {
        args.extend(["--repository-mirror".into(), format!("{from}={to}")]);
    }
    let out = ok(capstan(&args), "releases mirror");
    assert!(out.contains("with its cosign signature"), "{out}");
    let mapping = std::fs::read_to_string(&mirrors_file).unwrap();
    let charts = format!("oci://{}/airgap/stacks/charts", reg.host());
    let mut want: Vec<String> = upstream(&server)
        .iter()
        .map(|(from, _)| format!("{from}={charts}"))
        .collect();
    want.sort();
    assert_eq!(mapping.lines().collect::<Vec<_>>(), want, "{out}");

    // The air gap: upstream gone, a fresh cache, only the mirror's registry.
    let requests = server.requests();
    drop(server);
    let cache = Cache::open(scratch.path().join("airgap")).unwrap();
    let client = Client::new(&reg.host(), Config::default()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let pulled = rt
        .block_on(release::pull(&client, &cache, &dst, &tag, false, |_| {}))
        .unwrap();
    let digest = release::cached_digest(&cache, &dst, &tag).unwrap();
    let policy = Policy::keyed(vec![key.public_key().clone()]);
    let verified = rt
        .block_on(signature::verify(&client, &cache, &dst, &tag, &digest, &policy))
        .unwrap();
    assert_eq!(verified.signer, key.public_key().fingerprint());
    let opened = capstan_source::local::open_cached(&cache, &pulled.manifest).unwrap();
    let mirrored: Vec<(String, String)> = mapping
        .lines()
        .map(|l| {
            let (from, to) = l.split_once('=').unwrap();
            (from.to_string(), to.to_string())
        })
        .collect();
    let airgapped = render(&opened.release, &cache, mirrored);
    assert_eq!(airgapped.len(), online.len());
    for ((name, a), (_, b)) in airgapped.iter().zip(&online) {
        assert!(
            a == b,
            "{name}: the air-gapped render differs from the online one"
        );
    }
    assert!(
        requests > 0,
        "the online render and the mirror used the upstream repositories"
    );

    // The CLI renders it the same way: the mapping file, the copied signature verified.
    let pub_file = scratch.path().join("cosign.pub");
    std::fs::write(&pub_file, key.public_key().to_pem()).unwrap();
    let rendered = ok(
        capstan(&[
            "render".into(),
            format!("{dst}@{tag}"),
            "--cluster".into(),
            concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/cluster.yaml").into(),
            "--repository-mirrors-file".into(),
            s(&mirrors_file),
            "--verify-key".into(),
            s(&pub_file),
            "--cache".into(),
            s(&scratch.path().join("cli-airgap")),
        ]),
        "render from the mirror",
    );
    assert!(rendered.contains("kind: ClusterClass"), "{rendered}");
}

/// A chart archive `NAME-VERSION.tgz` with one ConfigMap template.
fn chart_archive(name: &str, version: &str) -> Vec<u8> {
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    for (path, text) in [
        (
            "Chart.yaml",
            format!("apiVersion: v2\nname: {name}\nversion: {version}\n"),
        ),
        (
            "templates/cm.yaml",
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"),
        ),
    ] {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, format!("{name}/{path}"), text.as_bytes())
            .unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}

/// Issue 35 §5 with verification: a release whose ClusterClass chart depends on a chart of a
/// Helm repository signed with a `.prov` (real GnuPG, testdata/provenance) and on an `oci://`
/// chart with a cosign signature is mirrored; with both upstreams stopped, `capstan render`
/// from the mirror with `--verify-key` (the release) and a `--dependency-policy` (a keyring for
/// the Helm repository, the cosign key for the OCI one) verifies the release and both charts
/// from the copies alone, and a keyring without the signer still refuses.
#[test]
fn releases_mirror_copies_provenance_and_signatures_for_a_verified_air_gap() {
    let test = "releases_mirror_copies_provenance_and_signatures_for_a_verified_air_gap";
    let Some(bin) = capstan_testenv::registry::binary_or_skip(test) else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/provenance");
    let helm_repo = scratch.path().join("helm-repo");
    std::fs::create_dir_all(&helm_repo).unwrap();
    for name in ["index.yaml", "demo-0.1.0.tgz", "demo-0.1.0.tgz.prov"] {
        std::fs::copy(fixtures.join(name), helm_repo.join(name)).unwrap();
    }
    let server = StaticServer::start(&helm_repo);
    let upstream = Registry::start(&bin, Auth::Anonymous);
    let airgap = Registry::start(&bin, Auth::Anonymous);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    // The signed oci:// chart upstream.
    let key = SigningKey::generate().unwrap();
    let up_client = Client::new(&upstream.host(), Config::default()).unwrap();
    let up = OciRepo::parse(&format!("oci://{}/vendor", upstream.host())).unwrap();
    let chart_digest = rt
        .block_on(capstan_source::oci::mirror::push_chart(
            &up_client,
            &up,
            capstan_source::oci::mirror::ChartToPush {
                name: "ocidemo".into(),
                version: "0.2.0".into(),
                archive: chart_archive("ocidemo", "0.2.0"),
                metadata: serde_json::json!({"apiVersion": "v2", "name": "ocidemo", "version": "0.2.0"}),
                provenance: None,
            },
        ))
        .unwrap();
    let chart_repo = OciRepo::parse(&format!("oci://{}/vendor/charts/ocidemo", upstream.host())).unwrap();
    rt.block_on(signature::sign(&up_client, &chart_repo, &chart_digest, &key))
        .unwrap();

    // The stack: the example with both dependencies, published and signed upstream.
    let source = scratch.path().join("stack");
    super::git_source::copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("stacks/example"),
        &source,
    );
    let chart_yaml = source.join("cluster-class/Chart.yaml");
    let mut text = std::fs::read_to_string(&chart_yaml).unwrap();
    text.push_str(&format!(
        "dependencies:\n  - name: demo\n    version: 0.1.0\n    repository: https://charts.example/signed\n  - name: ocidemo\n    version: 0.2.0\n    repository: oci://{}/vendor/charts\n",
        upstream.host()
    ));
    std::fs::write(&chart_yaml, text).unwrap();
    let src = format!("oci://{}/kaas/upstream", upstream.host());
    let tag = publish_signed(&source, scratch.path(), &key, &src).tag().tag();
    let pub_file = scratch.path().join("cosign.pub");
    std::fs::write(&pub_file, key.public_key().to_pem()).unwrap();

    // What each repository's charts must carry (as Chart.yaml names them; the mirror and the
    // air-gapped render fetch them from elsewhere).
    for ring in ["signer.pubring.gpg", "stranger.pubring.gpg"] {
        std::fs::copy(fixtures.join(ring), scratch.path().join(ring)).unwrap();
    }
    let policy = |ring: &str| {
        let file = scratch.path().join(format!("policy-{ring}.yaml"));
        std::fs::write(
            &file,
            format!(
                "repositories:\n- url: https://charts.example/signed\n  keyring: {ring}\n- url: oci://{}/vendor/charts\n  keys: [cosign.pub]\n",
                upstream.host()
            ),
        )
        .unwrap();
        s(&file)
    };
    let signer_policy = policy("signer.pubring.gpg");
    let stranger_policy = policy("stranger.pubring.gpg");

    // The mirror, verifying what it copies.
    let dst = format!("oci://{}/airgap/stacks", airgap.host());
    let mirrors_file = scratch.path().join("mirrors.txt");
    let out = ok(
        capstan(&[
            "releases".into(),
            "mirror".into(),
            format!("{src}@{tag}"),
            dst.clone(),
            "--write-mirrors".into(),
            s(&mirrors_file),
            "--cache".into(),
            s(&scratch.path().join("mirror-cache")),
            "--repository-mirror".into(),
            format!("https://charts.example/signed={}", server.url()),
            "--dependency-policy".into(),
            signer_policy.clone(),
            "--verify-key".into(),
            s(&pub_file),
        ]),
        "releases mirror",
    );
    assert!(out.contains("with its provenance"), "{out}");
    assert!(
        out.contains("ocidemo:0.2.0") && out.contains("(with its cosign signature)"),
        "{out}"
    );

    // The air gap: both upstreams gone.
    drop(server);
    drop(upstream);
    let render = |policy: &str, cache: &str| {
        capstan(&[
            "render".into(),
            format!("{dst}@{tag}"),
            "--cluster".into(),
            concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/cluster.yaml").into(),
            "--repository-mirrors-file".into(),
            s(&mirrors_file),
            "--dependency-policy".into(),
            policy.to_string(),
            "--verify-key".into(),
            s(&pub_file),
            "--cache".into(),
            s(&scratch.path().join(cache)),
        ])
    };
    let rendered = ok(render(&signer_policy, "airgap"), "render from the mirror");
    assert!(rendered.contains("signed: \"yes\""), "{rendered}");
    assert!(rendered.contains("name: ocidemo"), "{rendered}");
    let refused = render(&stranger_policy, "airgap-stranger");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && stderr.contains("demo 0.1.0: provenance not verified (WrongKey)"),
        "{stderr}"
    );
}
