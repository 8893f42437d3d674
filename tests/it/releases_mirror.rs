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
    let built = capstan_stack::build::build(
        &source,
        &capstan_stack::build::hash_version(&source).unwrap(),
        &scratch.path().join("release"),
    )
    .unwrap();
    let tag = built.tag().tag();

    // Published and signed upstream.
    let reg = Registry::start(&bin, Auth::Anonymous);
    let key = SigningKey::generate().unwrap();
    let key_file = scratch.path().join("cosign.key");
    std::fs::write(&key_file, key.to_pkcs8_pem().unwrap()).unwrap();
    let src = format!("oci://{}/kaas/upstream", reg.host());
    let dst = OciRepo::parse(&format!("oci://{}/airgap/stacks", reg.host())).unwrap();
    let s = |p: &Path| p.to_string_lossy().into_owned();
    ok(
        capstan(&[
            "releases".into(),
            "push".into(),
            s(&scratch.path().join("release")),
            src.clone(),
            "--sign-key".into(),
            s(&key_file),
        ]),
        "releases push --sign-key",
    );

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
