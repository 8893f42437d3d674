//! OCI registries as a release source, against the real registry (Debian's docker-registry,
//! `crates/capstan-testenv/src/registry.rs`) and the independent csctl-layout tool
//! `shared/tools/oci_release.py`: interop both ways, the three auth modes, request counts of
//! idle polls, and faults (401/403/404/429/503, a corrupt blob, a layer titled `../x`, an
//! oversized layer, the registry killed mid-pull, tags that are not releases).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capstan_source::cache::Cache;
use capstan_source::oci::client::{Observer, RequestSeen};
use capstan_source::oci::release::{self, OciRepo, PushOptions, ReleaseError};
use capstan_source::oci::{Client, Config, Credentials, OciError};
use capstan_testenv::registry::{Auth, Fault, FaultProxy, PASSWORD, Registry, TokenIssuer, USER};

const REPO: &str = "kaas/cluster-stacks";
const CREATED: &str = "2026-01-01T00:00:00Z";

fn shared(test: &str) -> Option<PathBuf> {
    // CAPSTAN_SHARED, else the nearest ancestor's `shared/` (as crates/capstan-testenv/src/lib.rs finds it).
    let dir = std::env::var_os("CAPSTAN_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
            manifest
                .ancestors()
                .skip(1)
                .map(|d| d.join("shared"))
                .find(|d| d.join("cluster-stack-releases").is_dir())
                .unwrap_or_else(|| manifest.join("../shared"))
        });
    if dir.join("cluster-stack-releases").is_dir() && dir.join("tools/oci_release.py").is_file() {
        return Some(dir);
    }
    let reason = format!(
        "{} has no cluster-stack-releases or tools/oci_release.py",
        dir.display()
    );
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{test}: {reason}");
    }
    eprintln!("SKIP {test}: {reason}");
    None
}

fn release_dir(shared: &Path, tag: &str) -> PathBuf {
    shared.join("cluster-stack-releases").join(tag)
}

const FERROL: [&str; 4] = [
    "docker-ferrol-1-27-v1",
    "docker-ferrol-1-27-v2",
    "docker-ferrol-1-27-v3",
    "docker-ferrol-1-27-v0-sha-hipstsw",
];

/// Runs `oci_release.py` (standard library only: the system python).
fn oci_py(shared: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new("python3");
    cmd.arg(shared.join("tools/oci_release.py")).args(args);
    for var in [
        "OCI_USERNAME",
        "OCI_PASSWORD",
        "OCI_ACCESS_TOKEN",
        "CLUSTER_STACK_HASH",
    ] {
        cmd.env_remove(var);
    }
    cmd.envs(env.iter().copied());
    cmd.output().expect("running oci_release.py")
}

/// The stdout of a command that must succeed (else its output in the failure).
pub(crate) fn ok(out: std::process::Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn capstan(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_capstan"))
        .args(args)
        .env_remove("OCI_USERNAME")
        .env_remove("OCI_PASSWORD")
        .env_remove("OCI_ACCESS_TOKEN")
        .output()
        .expect("running capstan")
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Every response the client saw.
fn recorder() -> (Observer, Arc<Mutex<Vec<RequestSeen>>>) {
    let seen: Arc<Mutex<Vec<RequestSeen>>> = Arc::default();
    let s = seen.clone();
    (
        Arc::new(move |r: &RequestSeen| s.lock().unwrap().push(r.clone())),
        seen,
    )
}

fn config(credentials: Credentials) -> Config {
    Config {
        credentials,
        backoff: Duration::from_millis(20),
        max_wait: Duration::from_secs(5),
        max_retries: 3,
        ..Config::default()
    }
}

fn repo(host: &str) -> OciRepo {
    OciRepo::parse(&format!("oci://{host}/{REPO}")).unwrap()
}

/// The regular files of a directory, by name.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

fn cache_is_clean(cache_dir: &Path) {
    let tmp: Vec<_> = std::fs::read_dir(cache_dir.join("tmp")).unwrap().collect();
    assert!(tmp.is_empty(), "temp files left in the cache: {tmp:?}");
}

#[test]
fn releases_oci_release_py_pushes_are_listed_pulled_verified_and_rendered() {
    let test = "releases_oci_release_py_pushes_are_listed_pulled_verified_and_rendered";
    let (Some(bin), Some(shared)) = (capstan_testenv::registry::binary_or_skip(test), shared(test)) else {
        return;
    };
    let reg = Registry::start(&bin, Auth::Anonymous);
    let target = format!("{}/{REPO}", reg.host());
    for tag in FERROL {
        let dir = release_dir(&shared, tag);
        ok(
            oci_py(
                &shared,
                &["push", &target, tag, dir.to_str().unwrap(), "--created", CREATED],
                &[],
            ),
            "oci_release.py push",
        );
    }
    let cache = tempfile::tempdir().unwrap();
    let cache_arg = cache.path().to_str().unwrap();
    let url = format!("oci://{target}");
    let listed = ok(
        capstan(&["releases", "list", &url, "-o", "json", "--cache", cache_arg]),
        "releases list",
    );
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    let mut tags: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["tag"].as_str().unwrap())
        .collect();
    tags.sort();
    let mut want = FERROL.to_vec();
    want.sort();
    assert_eq!(tags, want);
    for tag in FERROL {
        let out = ok(
            capstan(&["releases", "pull", &url, tag, "--cache", cache_arg]),
            "releases pull",
        );
        assert!(out.contains("verified"), "{out}");
        // What the cache holds is the release file for file.
        let c = Cache::open(cache.path()).unwrap();
        let m = release::cached(&c, &repo(&reg.host()), tag)
            .unwrap()
            .expect("cached");
        c.verify_release(&m).unwrap();
        let exported = tempfile::tempdir().unwrap();
        let into = exported.path().join("r");
        c.export(&m, &into).unwrap();
        assert_eq!(files(&into), files(&release_dir(&shared, tag)), "{tag}");
    }
    // Rendered from the registry exactly as from the directory.
    let cluster = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/cluster.yaml");
    for tag in ["docker-ferrol-1-27-v1", "docker-ferrol-1-27-v0-sha-hipstsw"] {
        let from_registry = ok(
            capstan(&[
                "render",
                &format!("{url}@{tag}"),
                "--cluster",
                cluster,
                "--cache",
                cache_arg,
            ]),
            "render oci://",
        );
        let dir = release_dir(&shared, tag);
        let from_dir = ok(
            capstan(&[
                "render",
                dir.to_str().unwrap(),
                "--cluster",
                cluster,
                "--cache",
                cache_arg,
            ]),
            "render dir",
        );
        assert!(from_registry.contains("kind: ClusterClass"), "{from_registry}");
        assert_eq!(from_registry, from_dir, "{tag}");
    }
    // `releases diff` takes them too.
    let (v1, v2) = (
        release_dir(&shared, "docker-ferrol-1-27-v1"),
        release_dir(&shared, "docker-ferrol-1-27-v2"),
    );
    let diff_registry = ok(
        capstan(&[
            "releases",
            "diff",
            &format!("{url}@docker-ferrol-1-27-v1"),
            &format!("{url}@docker-ferrol-1-27-v2"),
            "--cluster",
            cluster,
            "--cache",
            cache_arg,
        ]),
        "releases diff oci://",
    );
    let diff_dirs = ok(
        capstan(&[
            "releases",
            "diff",
            v1.to_str().unwrap(),
            v2.to_str().unwrap(),
            "--cluster",
            cluster,
            "--cache",
            cache_arg,
        ]),
        "releases diff dirs",
    );
    assert!(
        diff_registry.contains("docker-ferrol-1-27-v1 → docker-ferrol-1-27-v2"),
        "{diff_registry}"
    );
    assert_eq!(diff_registry, diff_dirs);
    cache_is_clean(cache.path());
}

#[test]
fn releases_capstan_pushes_are_what_oci_release_py_pushes_and_pulls() {
    let test = "releases_capstan_pushes_are_what_oci_release_py_pushes_and_pulls";
    let (Some(bin), Some(shared)) = (capstan_testenv::registry::binary_or_skip(test), shared(test)) else {
        return;
    };
    let reg = Registry::start(&bin, Auth::Anonymous);
    let url = format!("oci://{}/{REPO}", reg.host());
    let py_target = format!("{}/by-python/cs", reg.host());
    for tag in FERROL {
        let dir = release_dir(&shared, tag);
        let out = ok(
            capstan(&[
                "releases",
                "push",
                dir.to_str().unwrap(),
                &url,
                "--created",
                CREATED,
            ]),
            "releases push",
        );
        assert!(out.contains(tag), "{out}");
        // oci_release.py pulls it file for file identical.
        let pulled = tempfile::tempdir().unwrap();
        ok(
            oci_py(
                &shared,
                &[
                    "pull",
                    &format!("{}/{REPO}", reg.host()),
                    tag,
                    pulled.path().to_str().unwrap(),
                ],
                &[],
            ),
            "oci_release.py pull",
        );
        assert_eq!(files(pulled.path()), files(&dir), "{tag}");
        // The manifest is byte for byte the one oci_release.py writes for the same release.
        let hash = std::fs::read(dir.join("hashes.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v["clusterStack"].as_str().map(str::to_string))
            .unwrap_or_default();
        ok(
            oci_py(
                &shared,
                &[
                    "push",
                    &py_target,
                    tag,
                    dir.to_str().unwrap(),
                    "--created",
                    CREATED,
                ],
                &[("CLUSTER_STACK_HASH", &hash)],
            ),
            "oci_release.py push",
        );
        let mine = ok(
            oci_py(
                &shared,
                &["manifest", &format!("{}/{REPO}", reg.host()), tag],
                &[],
            ),
            "manifest",
        );
        let theirs = ok(oci_py(&shared, &["manifest", &py_target, tag], &[]), "manifest");
        assert_eq!(mine, theirs, "{tag}");
        let c = Client::new(&reg.host(), config(Credentials::Anonymous)).unwrap();
        let (a, b) = rt().block_on(async {
            (
                c.manifest(REPO, tag).await.unwrap(),
                c.manifest("by-python/cs", tag).await.unwrap(),
            )
        });
        assert_eq!(a.bytes, b.bytes, "{tag}: manifests differ in bytes");
    }
    // An existing tag is never overwritten.
    let dir = release_dir(&shared, "docker-ferrol-1-27-v1");
    let again = capstan(&["releases", "push", dir.to_str().unwrap(), &url]);
    assert!(!again.status.success());
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(
        err.contains("exists already") && err.contains("never overwritten"),
        "{err}"
    );
}

#[test]
fn auth_basic_htpasswd() {
    let test = "auth_basic_htpasswd";
    let (Some(bin), Some(shared)) = (capstan_testenv::registry::binary_or_skip(test), shared(test)) else {
        return;
    };
    let reg = Registry::start(&bin, Auth::Htpasswd);
    let r = repo(&reg.host());
    let dir = release_dir(&shared, "docker-ferrol-1-27-v1");
    let user = Credentials::from_parts(Some(USER.into()), Some(PASSWORD.into()), None);
    let wrong = Credentials::from_parts(Some(USER.into()), Some("nope".into()), None);
    let rt = rt();
    let opts = PushOptions {
        created: Some(CREATED.into()),
        ..PushOptions::default()
    };
    // Anonymous: refused, saying so.
    let anon = Client::new(&reg.host(), config(Credentials::Anonymous)).unwrap();
    let err = rt
        .block_on(release::push(&anon, &r, &dir, &opts))
        .unwrap_err()
        .to_string();
    assert!(err.contains("401") && err.contains("anonymously"), "{err}");
    // A wrong password: refused, naming the user and never the password.
    let bad = Client::new(&reg.host(), config(wrong)).unwrap();
    let err = rt.block_on(release::tags(&bad, &r)).unwrap_err().to_string();
    assert!(
        err.contains("401") && err.contains(USER) && !err.contains("nope"),
        "{err}"
    );
    // The user: push, list, pull.
    let good = Client::new(&reg.host(), config(user)).unwrap();
    rt.block_on(release::push(&good, &r, &dir, &opts)).unwrap();
    assert_eq!(
        rt.block_on(release::tags(&good, &r)).unwrap(),
        ["docker-ferrol-1-27-v1"]
    );
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(cache_dir.path()).unwrap();
    let s = rt
        .block_on(release::pull(
            &good,
            &cache,
            &r,
            "docker-ferrol-1-27-v1",
            false,
            |_| {},
        ))
        .unwrap();
    assert_eq!(s.manifest.files.len(), 5);
    // oci_release.py reads it with the same credentials.
    let out = tempfile::tempdir().unwrap();
    ok(
        oci_py(
            &shared,
            &[
                "pull",
                &format!("{}/{REPO}", reg.host()),
                "docker-ferrol-1-27-v1",
                out.path().to_str().unwrap(),
            ],
            &[("OCI_USERNAME", USER), ("OCI_PASSWORD", PASSWORD)],
        ),
        "oci_release.py pull with Basic",
    );
    assert_eq!(files(out.path()), files(&dir));
}

#[test]
fn auth_token_anonymous_pull_user_push_and_idle_poll_costs() {
    let test = "auth_token_anonymous_pull_user_push_and_idle_poll_costs";
    let (Some(bin), Some(shared)) = (capstan_testenv::registry::binary_or_skip(test), shared(test)) else {
        return;
    };
    let issuer = TokenIssuer::start();
    let tokens = issuer.requests.clone();
    let expires_in = issuer.expires_in.clone();
    let reg = Registry::start(&bin, Auth::Token(issuer));
    let r = repo(&reg.host());
    let rt = rt();
    let opts = |tag: &str| PushOptions {
        created: Some(CREATED.into()),
        tag: Some(tag.into()),
        ..PushOptions::default()
    };
    let user = Credentials::from_parts(Some(USER.into()), Some(PASSWORD.into()), None);
    // Anonymous callers get a pull token only: a push is refused by the registry.
    let anon_push = Client::new(&reg.host(), config(Credentials::Anonymous)).unwrap();
    let v1 = release_dir(&shared, "docker-ferrol-1-27-v1");
    let err = rt
        .block_on(release::push(&anon_push, &r, &v1, &opts("docker-ferrol-1-27-v1")))
        .unwrap_err()
        .to_string();
    assert!(err.contains("401") || err.contains("403"), "{err}");
    // A wrong password fails at the token endpoint, naming the user.
    let wrong = Client::new(
        &reg.host(),
        config(Credentials::from_parts(
            Some(USER.into()),
            Some("nope".into()),
            None,
        )),
    )
    .unwrap();
    let err = rt.block_on(release::tags(&wrong, &r)).unwrap_err().to_string();
    assert!(err.contains("token endpoint") && err.contains(USER), "{err}");
    // The user pushes (one token for the push scope); oci_release.py pushes with Bearer too.
    let pusher = Client::new(&reg.host(), config(user)).unwrap();
    for tag in ["docker-ferrol-1-27-v1", "docker-ferrol-1-27-v2"] {
        rt.block_on(release::push(&pusher, &r, &release_dir(&shared, tag), &opts(tag)))
            .unwrap();
    }
    ok(
        oci_py(
            &shared,
            &[
                "push",
                &format!("{}/{REPO}", reg.host()),
                "docker-ferrol-1-27-v3",
                release_dir(&shared, "docker-ferrol-1-27-v3").to_str().unwrap(),
            ],
            &[("OCI_USERNAME", USER), ("OCI_PASSWORD", PASSWORD)],
        ),
        "oci_release.py push with a token",
    );
    // Anonymous pull through the Bearer challenge, one token for every request of the scope.
    let (observer, seen) = recorder();
    let anon = Client::new(
        &reg.host(),
        Config {
            observer: Some(observer),
            page_size: 2,
            ..config(Credentials::Anonymous)
        },
    )
    .unwrap();
    let before = tokens.load(std::sync::atomic::Ordering::SeqCst);
    let mut tags = rt.block_on(release::tags(&anon, &r)).unwrap();
    tags.sort();
    assert_eq!(
        tags,
        [
            "docker-ferrol-1-27-v1",
            "docker-ferrol-1-27-v2",
            "docker-ferrol-1-27-v3"
        ]
    );
    assert_eq!(
        tokens.load(std::sync::atomic::Ordering::SeqCst) - before,
        1,
        "one token"
    );
    let pages = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.path.ends_with("/tags/list") && s.status == 200)
        .count();
    assert_eq!(pages, 2, "3 tags at n=2 are two pages (Link followed)");
    // The idle poll: one request.
    seen.lock().unwrap().clear();
    rt.block_on(release::tags(&anon, &r)).unwrap();
    let idle: Vec<_> = seen.lock().unwrap().clone();
    assert_eq!(
        idle.len(),
        2,
        "an idle poll of 3 tags at n=2 is its 2 pages: {idle:?}"
    );
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(cache_dir.path()).unwrap();
    let s = rt
        .block_on(release::pull(
            &anon,
            &cache,
            &r,
            "docker-ferrol-1-27-v3",
            false,
            |_| {},
        ))
        .unwrap();
    assert_eq!(s.downloaded_files, 5);
    // Cached: no request; revalidated: one HEAD.
    seen.lock().unwrap().clear();
    rt.block_on(release::pull(
        &anon,
        &cache,
        &r,
        "docker-ferrol-1-27-v3",
        false,
        |_| {},
    ))
    .unwrap();
    assert!(seen.lock().unwrap().is_empty());
    let s = rt
        .block_on(release::pull(
            &anon,
            &cache,
            &r,
            "docker-ferrol-1-27-v3",
            true,
            |_| {},
        ))
        .unwrap();
    assert_eq!(s.downloaded_files, 0);
    let seen_now = seen.lock().unwrap().clone();
    assert_eq!(seen_now.len(), 1, "{seen_now:?}");
    assert_eq!(seen_now[0].method, "HEAD");
    // Tokens that run out: the next poll fetches a new one first (where the last challenge
    // pointed) instead of being refused with a 401.
    expires_in.store(1, std::sync::atomic::Ordering::SeqCst);
    let short = Client::new(
        &reg.host(),
        Config {
            observer: seen_observer(&seen),
            page_size: 2,
            ..config(Credentials::Anonymous)
        },
    )
    .unwrap();
    rt.block_on(release::tags(&short, &r)).unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    seen.lock().unwrap().clear();
    rt.block_on(release::tags(&short, &r)).unwrap();
    let polled = seen.lock().unwrap().clone();
    assert!(polled.iter().all(|s| s.status == 200), "no 401: {polled:?}");
    assert_eq!(polled.len(), 3, "a token and the 2 pages: {polled:?}");
}

/// A registry with the ferrol releases pushed by oci_release.py, and a client of it.
fn seeded(bin: &Path, shared: &Path) -> Registry {
    let reg = Registry::start(bin, Auth::Anonymous);
    for tag in FERROL {
        let dir = release_dir(shared, tag);
        ok(
            oci_py(
                shared,
                &[
                    "push",
                    &format!("{}/{REPO}", reg.host()),
                    tag,
                    dir.to_str().unwrap(),
                    "--created",
                    CREATED,
                ],
                &[],
            ),
            "push",
        );
    }
    reg
}

#[test]
fn faults_unknown_and_foreign_tags_and_bad_layers() {
    let test = "faults_unknown_and_foreign_tags_and_bad_layers";
    let (Some(bin), Some(shared)) = (capstan_testenv::registry::binary_or_skip(test), shared(test)) else {
        return;
    };
    let reg = seeded(&bin, &shared);
    let r = repo(&reg.host());
    let rt = rt();
    let (observer, seen) = recorder();
    let client = Client::new(
        &reg.host(),
        Config {
            observer: Some(observer),
            ..config(Credentials::Anonymous)
        },
    )
    .unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(cache_dir.path()).unwrap();
    let pull =
        |tag: &str, client: &Client| rt.block_on(release::pull(client, &cache, &r, tag, false, |_| {}));

    // 404: the error lists what exists.
    let err = pull("docker-ferrol-1-27-v9", &client).unwrap_err().to_string();
    assert!(err.contains("has no release \"docker-ferrol-1-27-v9\""), "{err}");
    assert!(
        err.contains("docker-ferrol-1-27-v1") && err.contains("docker-ferrol-1-27-v3"),
        "{err}"
    );
    // A tag that is not a release tag: refused before any request.
    seen.lock().unwrap().clear();
    let err = pull("latest", &client).unwrap_err();
    assert!(matches!(err, ReleaseError::NotAReleaseTag { .. }), "{err}");
    assert!(
        err.to_string().contains("not a cluster-stack release tag"),
        "{err}"
    );
    assert!(seen.lock().unwrap().is_empty());

    // Hand-made manifests: a release-named tag of another artifact type, and a layer titled
    // `../x`.
    let push_manifest = |tag: &str, artifact: &str, title: &str| {
        rt.block_on(async {
            let data = bytes::Bytes::from_static(b"escaped\n");
            let digest = client.push_blob(REPO, data.clone()).await.unwrap();
            client
                .push_blob(REPO, bytes::Bytes::from_static(b"{}"))
                .await
                .unwrap();
            let manifest = serde_json::json!({
                "schemaVersion": 2,
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "artifactType": artifact,
                "config": {"mediaType": "application/vnd.oci.empty.v1+json",
                    "digest": capstan_source::oci::layout::EMPTY_DIGEST, "size": 2},
                "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": digest,
                    "size": data.len(), "annotations": {"org.opencontainers.image.title": title}}],
            });
            client
                .put_manifest(
                    REPO,
                    tag,
                    "application/vnd.oci.image.manifest.v1+json",
                    serde_json::to_vec(&manifest).unwrap().into(),
                )
                .await
                .unwrap();
        })
    };
    push_manifest(
        "docker-other-1-27-v1",
        "application/vnd.cncf.helm.config.v1+json",
        "x.tgz",
    );
    let err = pull("docker-other-1-27-v1", &client).unwrap_err().to_string();
    assert!(
        err.contains("not a cluster-stack release") && err.contains("helm"),
        "{err}"
    );
    push_manifest(
        "docker-evil-1-27-v1",
        capstan_source::oci::layout::ARTIFACT_TYPE,
        "../x",
    );
    let err = pull("docker-evil-1-27-v1", &client).unwrap_err().to_string();
    assert!(err.contains("\"../x\" is a path, not a plain file name"), "{err}");
    assert!(!cache_dir.path().join("x").exists() && !cache_dir.path().parent().unwrap().join("x").exists());
    for tag in ["docker-other-1-27-v1", "docker-evil-1-27-v1"] {
        assert!(release::cached(&cache, &r, tag).unwrap().is_none());
    }

    // A layer over the size limit is refused before its blob is asked for.
    let small = Client::new(
        &reg.host(),
        Config {
            max_blob_size: 4096,
            observer: seen_observer(&seen),
            ..config(Credentials::Anonymous)
        },
    )
    .unwrap();
    seen.lock().unwrap().clear();
    let err = pull("docker-ferrol-1-27-v1", &small).unwrap_err().to_string();
    assert!(err.contains("over the limit of 4096 bytes; not read"), "{err}");
    assert!(
        seen.lock().unwrap().iter().all(|s| !s.path.contains("/blobs/")),
        "no blob read: {:?}",
        seen.lock().unwrap()
    );
    assert!(
        release::cached(&cache, &r, "docker-ferrol-1-27-v1")
            .unwrap()
            .is_none()
    );
    cache_is_clean(cache_dir.path());
}

fn seen_observer(seen: &Arc<Mutex<Vec<RequestSeen>>>) -> Option<Observer> {
    let s = seen.clone();
    Some(Arc::new(move |r: &RequestSeen| s.lock().unwrap().push(r.clone())))
}

#[test]
fn faults_corrupt_blob_is_refused_and_nothing_is_kept() {
    let test = "faults_corrupt_blob_is_refused_and_nothing_is_kept";
    let (Some(bin), Some(shared)) = (capstan_testenv::registry::binary_or_skip(test), shared(test)) else {
        return;
    };
    let reg = seeded(&bin, &shared);
    let r = repo(&reg.host());
    let rt = rt();
    let client = Client::new(&reg.host(), config(Credentials::Anonymous)).unwrap();
    let tag = "docker-ferrol-1-27-v2";
    // Damage the addon chart in the registry's storage (same length, other bytes).
    let m = rt.block_on(client.manifest(REPO, tag)).unwrap();
    let layout = capstan_source::oci::layout::read_manifest(&m.bytes, u64::MAX).unwrap();
    let addon = layout
        .files
        .iter()
        .find(|f| f.name.contains("cluster-addon"))
        .unwrap();
    let file = reg.blob_file(&addon.descriptor.digest);
    let mut data = std::fs::read(&file).unwrap();
    let mid = data.len() / 2;
    data[mid] ^= 0xff;
    std::fs::write(&file, &data).unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(cache_dir.path()).unwrap();
    let err = rt
        .block_on(release::pull(&client, &cache, &r, tag, false, |_| {}))
        .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, ReleaseError::Oci(OciError::Digest { .. })),
        "{text}"
    );
    assert!(
        text.contains(&addon.name) && text.contains("not the blob the manifest names"),
        "{text}"
    );
    assert!(release::cached(&cache, &r, tag).unwrap().is_none());
    let sha = addon.descriptor.sha256().unwrap();
    assert!(!cache.has_blob(sha, addon.descriptor.size).unwrap());
    cache_is_clean(cache_dir.path());
}

#[test]
fn a_damaged_cached_file_is_fetched_again() {
    let test = "a_damaged_cached_file_is_fetched_again";
    let (Some(bin), Some(shared)) = (capstan_testenv::registry::binary_or_skip(test), shared(test)) else {
        return;
    };
    let reg = seeded(&bin, &shared);
    let r = repo(&reg.host());
    let rt = rt();
    let client = Client::new(&reg.host(), config(Credentials::Anonymous)).unwrap();
    let tag = "docker-ferrol-1-27-v2";
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(cache_dir.path()).unwrap();
    let first = rt
        .block_on(release::pull(&client, &cache, &r, tag, false, |_| {}))
        .unwrap();
    // A byte of the largest cached file flips on disk (same size: only a re-hash sees it).
    let f = first.manifest.files.values().max_by_key(|f| f.size).unwrap();
    let path = cache.blob_path(&f.sha256).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();

    assert!(
        release::cached(&cache, &r, tag).unwrap().is_none(),
        "a damaged release is not served from the cache"
    );
    for revalidate in [false, true] {
        if revalidate {
            std::fs::write(&path, &bytes).unwrap();
        }
        let again = rt
            .block_on(release::pull(&client, &cache, &r, tag, revalidate, |_| {}))
            .unwrap();
        assert!(!again.was_complete, "revalidate {revalidate}");
        assert_eq!(
            again.downloaded_files, 1,
            "only the damaged file, revalidate {revalidate}"
        );
        assert_eq!(again.downloaded_bytes, f.size);
        cache.verify_release(&again.manifest).unwrap();
    }
    cache_is_clean(cache_dir.path());
}

#[test]
fn faults_429_403_503_through_a_proxy() {
    let test = "faults_429_403_503_through_a_proxy";
    let (Some(bin), Some(shared)) = (capstan_testenv::registry::binary_or_skip(test), shared(test)) else {
        return;
    };
    let reg = seeded(&bin, &shared);
    let proxy = FaultProxy::start(reg.host());
    let r = repo(&proxy.host());
    let rt = rt();
    let (observer, seen) = recorder();
    let client = Client::new(
        &proxy.host(),
        Config {
            observer: Some(observer),
            ..config(Credentials::Anonymous)
        },
    )
    .unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(cache_dir.path()).unwrap();
    // 429 twice with Retry-After: 1, then served: the client waits as asked.
    proxy.inject(Fault {
        method: "GET",
        path: "/manifests/docker-ferrol-1-27-v1",
        status: 429,
        retry_after: Some(1),
        times: 2,
        ..Fault::default()
    });
    let started = Instant::now();
    rt.block_on(release::pull(
        &client,
        &cache,
        &r,
        "docker-ferrol-1-27-v1",
        false,
        |_| {},
    ))
    .unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "Retry-After honoured"
    );
    assert_eq!(seen.lock().unwrap().iter().filter(|s| s.status == 429).count(), 2);
    // A Retry-After beyond what the client waits fails at once, saying why.
    proxy.inject(Fault {
        method: "GET",
        path: "/tags/list",
        status: 429,
        retry_after: Some(3600),
        times: 1,
        ..Fault::default()
    });
    let started = Instant::now();
    let err = rt.block_on(release::tags(&client, &r)).unwrap_err().to_string();
    assert!(err.contains("429") && err.contains("3600"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(2));
    // 403: access denied, with the registry's words.
    proxy.inject(Fault {
        method: "GET",
        path: "/manifests/docker-ferrol-1-27-v2",
        status: 403,
        retry_after: None,
        times: 1,
        ..Fault::default()
    });
    let err = rt
        .block_on(release::pull(
            &client,
            &cache,
            &r,
            "docker-ferrol-1-27-v2",
            false,
            |_| {},
        ))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("access denied (HTTP 403)") && err.contains("injected by the test"),
        "{err}"
    );
    // 503 on a blob, twice: retried, then complete.
    proxy.inject(Fault {
        method: "GET",
        path: "/blobs/",
        status: 503,
        retry_after: None,
        times: 2,
        ..Fault::default()
    });
    let s = rt
        .block_on(release::pull(
            &client,
            &cache,
            &r,
            "docker-ferrol-1-27-v2",
            false,
            |_| {},
        ))
        .unwrap();
    assert!(s.downloaded_files >= 1);
    assert_eq!(proxy.injected.load(std::sync::atomic::Ordering::SeqCst), 6);
    cache_is_clean(cache_dir.path());
}

#[test]
fn faults_registry_killed_mid_pull_then_the_next_pull_completes() {
    let test = "faults_registry_killed_mid_pull_then_the_next_pull_completes";
    let (Some(bin), Some(shared)) = (capstan_testenv::registry::binary_or_skip(test), shared(test)) else {
        return;
    };
    let reg = Arc::new(Mutex::new(seeded(&bin, &shared)));
    let host = reg.lock().unwrap().host();
    let r = repo(&host);
    let rt = rt();
    let client = Client::new(
        &host,
        Config {
            max_retries: 1,
            ..config(Credentials::Anonymous)
        },
    )
    .unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(cache_dir.path()).unwrap();
    let tag = "docker-ferrol-1-27-v0-sha-hipstsw";
    let killer = reg.clone();
    let mut killed = false;
    let err = rt
        .block_on(release::pull(&client, &cache, &r, tag, false, |p| {
            if matches!(p, capstan_source::pull::PullProgress::Bytes(_)) && !killed {
                killed = true;
                killer.lock().unwrap().kill();
            }
        }))
        .unwrap_err()
        .to_string();
    assert!(err.contains(&host), "{err}");
    assert!(
        release::cached(&cache, &r, tag).unwrap().is_none(),
        "nothing committed"
    );
    cache_is_clean(cache_dir.path());
    reg.lock().unwrap().restart();
    let s = rt
        .block_on(release::pull(&client, &cache, &r, tag, false, |_| {}))
        .unwrap();
    cache.verify_release(&s.manifest).unwrap();
    assert_eq!(s.manifest.files.len(), 6);
    assert!(
        s.downloaded_files < 6,
        "blobs verified before the kill are kept: {}",
        s.downloaded_files
    );
}

#[test]
fn releases_build_push_in_stable_and_hash_modes() {
    let test = "releases_build_push_in_stable_and_hash_modes";
    let (Some(bin), Some(shared)) = (capstan_testenv::registry::binary_or_skip(test), shared(test)) else {
        return;
    };
    let src = shared.join("cluster-stacks-src/providers/docker/scs");
    if !src.is_dir() {
        eprintln!("SKIP {test}: {} missing", src.display());
        return;
    }
    let reg = Registry::start(&bin, Auth::Anonymous);
    let url = format!("oci://{}/{REPO}", reg.host());
    let src_arg = src.to_str().unwrap();
    let build = |extra: &[&str]| {
        let mut args = vec!["releases", "build", src_arg, "--push", &url, "--created", CREATED];
        args.extend_from_slice(extra);
        ok(capstan(&args), "releases build")
    };
    // Stable: v1 first, then nothing while the content is unchanged.
    let first = build(&["--mode", "stable"]);
    assert!(first.contains("pushed") && first.contains("-v1 "), "{first}");
    let again = build(&["--mode", "stable"]);
    assert!(
        again.contains("unchanged since") && !again.contains("pushed"),
        "{again}"
    );
    // Hash mode: the v0-sha release; both read back by oci_release.py with csctl's annotations.
    let hashed = build(&[]);
    assert!(hashed.contains("-v0-sha-"), "{hashed}");
    let tags = ok(
        oci_py(&shared, &["tags", &format!("{}/{REPO}", reg.host())], &[]),
        "tags",
    );
    let tags: Vec<&str> = tags.lines().collect();
    assert_eq!(tags.len(), 2, "{tags:?}");
    let hash = capstan_stack::build::content_hash(&src).unwrap();
    for tag in tags {
        let manifest = ok(
            oci_py(
                &shared,
                &["manifest", &format!("{}/{REPO}", reg.host()), tag],
                &[],
            ),
            "manifest",
        );
        let m: serde_json::Value = serde_json::from_str(&manifest).unwrap();
        assert_eq!(m["annotations"]["hash"], hash[..7], "{tag}");
        assert!(
            m["annotations"]["kubernetesVersion"]
                .as_str()
                .unwrap()
                .starts_with("v1."),
            "{manifest}"
        );
        let out = tempfile::tempdir().unwrap();
        ok(
            oci_py(
                &shared,
                &[
                    "pull",
                    &format!("{}/{REPO}", reg.host()),
                    tag,
                    out.path().to_str().unwrap(),
                ],
                &[],
            ),
            "oci_release.py pull",
        );
        assert!(out.path().join("metadata.yaml").is_file());
    }
}

#[test]
fn chunked_uploads_read_back_and_manifests_by_digest() {
    let test = "chunked_uploads_read_back_and_manifests_by_digest";
    let Some(bin) = capstan_testenv::registry::binary_or_skip(test) else {
        return;
    };
    let reg = Registry::start(&bin, Auth::Anonymous);
    let client = Client::new(
        &reg.host(),
        Config {
            chunk_size: 4096,
            ..config(Credentials::Anonymous)
        },
    )
    .unwrap();
    let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let rt = rt();
    let digest = rt
        .block_on(client.push_blob(REPO, bytes::Bytes::from(data.clone())))
        .unwrap();
    let desc = capstan_source::oci::manifest::Descriptor {
        media_type: "application/octet-stream".into(),
        digest: digest.clone(),
        size: data.len() as u64,
        data: None,
        annotations: None,
    };
    let mut back = Vec::new();
    rt.block_on(client.blob(REPO, &desc, "chunked", |c| {
        back.extend_from_slice(c);
        Ok(())
    }))
    .unwrap();
    assert_eq!(back, data, "3 PATCH chunks and the closing PUT make the blob");
    // A manifest by digest is checked against it.
    let body = capstan_source::oci::layout::release_manifest(
        &[(
            "a".into(),
            digest.trim_start_matches("sha256:").into(),
            data.len() as u64,
        )],
        "v1.27.3",
        "",
        CREATED,
    );
    rt.block_on(client.push_blob(REPO, bytes::Bytes::from_static(b"{}")))
        .unwrap();
    let put = rt
        .block_on(client.put_manifest(
            REPO,
            "docker-x-1-27-v1",
            capstan_source::oci::manifest::OCI_MANIFEST,
            body.into(),
        ))
        .unwrap();
    let by_digest = rt.block_on(client.manifest(REPO, &put)).unwrap();
    assert_eq!(by_digest.digest, put);
}

#[test]
fn a_registry_that_never_answers_times_out() {
    // Accepts connections (the kernel's backlog) and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let client = Client::new(
        &host,
        Config {
            timeouts: capstan_source::net::NetworkTimeouts {
                connect: Duration::from_secs(1),
                response: Duration::from_millis(300),
                retries: 1,
            },
            max_retries: 1,
            ..config(Credentials::Anonymous)
        },
    )
    .unwrap();
    let started = Instant::now();
    let err = rt().block_on(client.tags(REPO)).unwrap_err().to_string();
    // Whichever bound fires first (reqwest's read timeout or the head's), the shared wording.
    assert!(
        err.contains("sent nothing for 0.3 s (response timeout), 2 tries"),
        "{err}"
    );
    assert!(err.contains(&host), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    drop(listener);
}

#[test]
fn credentials_never_follow_a_redirect_to_another_host() {
    let test = "credentials_never_follow_a_redirect_to_another_host";
    let (Some(bin), Some(shared)) = (capstan_testenv::registry::binary_or_skip(test), shared(test)) else {
        return;
    };
    let reg = seeded(&bin, &shared);
    // The registry's origin (127.0.0.1:P1) redirects blobs to "storage" on another origin
    // (localhost:P2), as registries do to object stores; both forward to the real registry.
    let storage = FaultProxy::start(reg.host());
    let front = FaultProxy::start(reg.host());
    let storage_origin = format!("http://localhost:{}", storage.host().rsplit(':').next().unwrap());
    front.inject(Fault {
        method: "GET",
        path: "/blobs/",
        status: 307,
        times: 100,
        redirect_to: Some(storage_origin),
        ..Fault::default()
    });
    let client = Client::new(
        &front.host(),
        config(Credentials::Token("registry-secret".into())),
    )
    .unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(cache_dir.path()).unwrap();
    let s = rt()
        .block_on(release::pull(
            &client,
            &cache,
            &repo(&front.host()),
            "docker-ferrol-1-27-v1",
            false,
            |_| {},
        ))
        .unwrap();
    assert_eq!(s.downloaded_files, 5);
    let load = |n: &std::sync::atomic::AtomicUsize| n.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(load(&storage.requests), 5, "every blob came from the other host");
    assert_eq!(
        load(&storage.authorized),
        0,
        "the token never went to the other host"
    );
    assert_eq!(
        load(&front.authorized),
        load(&front.requests),
        "the registry got it every time"
    );
}

/// `releases pull` names a release as `render` and `releases mirror` do (one parser):
/// `oci://HOST/REPO@TAG` as well as `oci://HOST/REPO TAG`, a release in the cache by its tag
/// or a release directory (nothing to pull), and refuses a tag given twice or none.
#[test]
fn releases_pull_takes_every_release_form_render_takes() {
    let test = "releases_pull_takes_every_release_form_render_takes";
    let (Some(bin), Some(shared)) = (capstan_testenv::registry::binary_or_skip(test), shared(test)) else {
        return;
    };
    let reg = Registry::start(&bin, Auth::Anonymous);
    let target = format!("{}/{REPO}", reg.host());
    let tag = "docker-ferrol-1-27-v1";
    let dir = release_dir(&shared, tag);
    ok(
        oci_py(
            &shared,
            &["push", &target, tag, dir.to_str().unwrap(), "--created", CREATED],
            &[],
        ),
        "oci_release.py push",
    );
    let cache = tempfile::tempdir().unwrap();
    let cache_arg = cache.path().to_str().unwrap();
    let url = format!("oci://{target}");
    let pull = |args: &[&str]| {
        let mut all = vec!["releases", "pull"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--cache", cache_arg]);
        capstan(&all)
    };
    let at = format!("{url}@{tag}");
    let out = ok(pull(&[&at]), "releases pull oci://HOST/REPO@TAG");
    assert!(
        out.contains(&format!("{url}:{tag}: ")) && out.contains("downloaded"),
        "{out}"
    );
    let again = ok(pull(&[&url, tag]), "releases pull oci://HOST/REPO TAG");
    assert!(again.contains("already complete in the cache"), "{again}");
    for form in [tag, dir.to_str().unwrap()] {
        let out = ok(pull(&[form]), "releases pull of a local release");
        assert!(out.contains("nothing to pull"), "{form}: {out}");
    }
    for (args, want) in [
        (vec![url.as_str()], "which release of"),
        (vec![at.as_str(), tag], "already names its tag"),
        (vec!["oci://NOT_A_HOST/x@t"], "not a registry host"),
    ] {
        let out = pull(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(want), "{args:?}: {err}");
    }
}
