//! Chart dependencies resolved from real Helm repositories (`../shared/chart-repos`, real
//! upstream charts indexed by real Helm) served on loopback: the versions chosen, the cache
//! (a second resolution makes no request, `--offline`), faults (each a clear error, nothing
//! half-written in the cache), credentials, and differential checks against real Helm's
//! `dependency_update` (the same Chart.lock but `generated`, the same archives in `charts/`).

use std::path::{Path, PathBuf};

use capstan_chart::deps::Lock;
use capstan_chart::load;
use capstan_source::cache::Cache;
use capstan_source::charts::{Auth, ChartResolver, Credential, Settings};
use capstan_testenv::StaticServer;

fn chart_repos(test: &str) -> Option<PathBuf> {
    let shared = capstan_testenv::shared::dir(test)?;
    let repos = shared.join("chart-repos");
    if repos.join("cilium/index.yaml").is_file() {
        Some(repos)
    } else {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(!ci, "{test}: ../shared/chart-repos is missing");
        println!("SKIPPED {test}: ../shared/chart-repos not found");
        None
    }
}

fn settings(server: &StaticServer) -> Settings {
    settings_for(&server.url())
}

/// The upstream repositories mirrored to `url` (a loopback server's).
fn settings_for(url: &str) -> Settings {
    Settings {
        mirrors: vec![
            ("https://helm.cilium.io".into(), format!("{url}/cilium")),
            (
                "https://kubernetes.github.io/cloud-provider-openstack".into(),
                format!("{url}/cloud-provider-openstack"),
            ),
            (
                "https://kubernetes-sigs.github.io/metrics-server".into(),
                format!("{url}/metrics-server"),
            ),
            ("https://charts.bitnami.com/bitnami".into(), format!("{url}/bitnami")),
        ],
        ..Settings::default()
    }
}

fn write_chart(dir: &Path, deps: &str) {
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        format!("apiVersion: v2\nname: parent\nversion: 0.1.0\ndependencies:\n{deps}"),
    )
    .unwrap();
}

const DEPS: &str = "  - name: metrics-server
    version: \">=3.12.0 <3.13.1\"
    repository: https://kubernetes-sigs.github.io/metrics-server/
  - name: common
    version: \"~2.14\"
    repository: https://charts.bitnami.com/bitnami
    alias: lib
";

/// Names of the charts complete in the cache.
fn cached_charts(cache: &Cache) -> Vec<String> {
    cache
        .releases()
        .unwrap()
        .into_iter()
        .filter(|k| k.starts_with("charts/"))
        .collect()
}

fn tmp_is_empty(cache: &Cache) -> bool {
    std::fs::read_dir(cache.root().join("tmp"))
        .unwrap()
        .next()
        .is_none()
}

#[test]
fn resolves_ranges_like_helm_and_a_second_render_makes_no_request() {
    let Some(repos) = chart_repos("dependency resolution") else {
        return;
    };
    let server = StaticServer::start(&repos);
    let scratch = tempfile::tempdir().unwrap();
    let chart_dir = scratch.path().join("parent");
    write_chart(&chart_dir, DEPS);
    let cache = Cache::open(scratch.path().join("cache")).unwrap();

    let resolver = ChartResolver::new(cache.clone(), settings(&server)).unwrap();
    let chart = resolver
        .resolve_chart(load::load(&chart_dir).unwrap(), Some(&chart_dir))
        .unwrap();
    let got: Vec<(String, String)> = chart
        .dependencies
        .iter()
        .map(|c| (c.name().to_string(), c.metadata.version.clone()))
        .collect();
    assert_eq!(
        got,
        [
            ("common".into(), "2.14.1".into()),
            ("metrics-server".into(), "3.13.0".into())
        ]
    );
    // Two indexes, two archives.
    assert_eq!(server.requests(), 4, "{:?}", server.log());
    assert_eq!(cached_charts(&cache).len(), 2);

    // Same inputs, a new resolver (a new process): the cache answers everything.
    let again = ChartResolver::new(cache.clone(), settings(&server)).unwrap();
    again
        .resolve_chart(load::load(&chart_dir).unwrap(), Some(&chart_dir))
        .unwrap();
    assert_eq!(
        server.requests(),
        4,
        "a warm resolution made requests: {:?}",
        server.log()
    );

    // Offline from the same cache works too; from an empty one it names what is missing.
    let offline = Settings {
        offline: true,
        ..settings(&server)
    };
    ChartResolver::new(cache.clone(), offline.clone())
        .unwrap()
        .resolve_chart(load::load(&chart_dir).unwrap(), Some(&chart_dir))
        .unwrap();
    let empty = Cache::open(scratch.path().join("empty")).unwrap();
    let err = ChartResolver::new(empty, offline)
        .unwrap()
        .resolve_chart(load::load(&chart_dir).unwrap(), Some(&chart_dir))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("dependency metrics-server")
            && err.contains("offline")
            && err.contains("https://kubernetes-sigs.github.io/metrics-server/"),
        "{err}"
    );
    assert_eq!(server.requests(), 4);
}

#[test]
fn vendored_charts_are_used_as_they_are_and_an_in_sync_lock_pins_versions() {
    let Some(repos) = chart_repos("dependency lock") else {
        return;
    };
    let server = StaticServer::start(&repos);
    let scratch = tempfile::tempdir().unwrap();
    let chart_dir = scratch.path().join("parent");
    write_chart(
        &chart_dir,
        "  - name: metrics-server
    version: \">=3.12.0\"
    repository: https://kubernetes-sigs.github.io/metrics-server/
",
    );
    let chart = load::load(&chart_dir).unwrap();
    // A lock made for exactly this Chart.yaml, at an older version than the range's highest.
    let lock = Lock::new(
        &chart.metadata.dependencies,
        vec![capstan_chart::deps::LockedDependency {
            name: "metrics-server".into(),
            repository: "https://kubernetes-sigs.github.io/metrics-server/".into(),
            version: "3.12.2".into(),
        }],
        "2026-01-01T00:00:00Z".into(),
    );
    std::fs::write(chart_dir.join("Chart.lock"), lock.to_yaml()).unwrap();
    let cache = Cache::open(scratch.path().join("cache")).unwrap();
    let resolver = ChartResolver::new(cache.clone(), settings(&server)).unwrap();
    let resolved = resolver
        .resolve_chart(load::load(&chart_dir).unwrap(), Some(&chart_dir))
        .unwrap();
    assert_eq!(resolved.dependencies[0].metadata.version, "3.12.2");

    // `build` refuses a lock that no longer matches, with Helm's words.
    std::fs::write(
        chart_dir.join("Chart.yaml"),
        "apiVersion: v2\nname: parent\nversion: 0.1.0\ndependencies:\n  - name: metrics-server\n    version: \">=3.13.0\"\n    repository: https://kubernetes-sigs.github.io/metrics-server/\n",
    )
    .unwrap();
    let err = resolver.update_dir(&chart_dir, true).unwrap_err().to_string();
    assert!(
        err.ends_with("the lock file (Chart.lock) is out of sync with the dependencies file (Chart.yaml). Please update the dependencies with 'helm dependency update'"),
        "{err}"
    );
    // A render does what `helm template --dependency-update` does: Chart.yaml's constraint.
    let resolved = resolver
        .resolve_chart(load::load(&chart_dir).unwrap(), Some(&chart_dir))
        .unwrap();
    assert_eq!(resolved.dependencies[0].metadata.version, "3.13.1");

    // A vendored chart is not replaced, and no request is made for it.
    let before = server.requests();
    let archive = repos.join("metrics-server/metrics-server-3.12.2.tgz");
    std::fs::create_dir_all(chart_dir.join("charts")).unwrap();
    std::fs::copy(&archive, chart_dir.join("charts/metrics-server-3.12.2.tgz")).unwrap();
    let resolved = resolver
        .resolve_chart(load::load(&chart_dir).unwrap(), Some(&chart_dir))
        .unwrap();
    assert_eq!(resolved.dependencies.len(), 1);
    assert_eq!(resolved.dependencies[0].metadata.version, "3.12.2");
    assert_eq!(server.requests(), before);
}

#[test]
fn faults_name_chart_dependency_and_repository_and_leave_nothing_half_written() {
    let Some(repos) = chart_repos("dependency faults") else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let chart_dir = scratch.path().join("parent");
    write_chart(
        &chart_dir,
        "  - name: common
    version: 2.14.1
    repository: https://charts.bitnami.com/bitnami
",
    );
    let resolve = |server: &StaticServer, cache: &Cache| {
        ChartResolver::new(cache.clone(), settings(server))
            .unwrap()
            .resolve_chart(load::load(&chart_dir).unwrap(), Some(&chart_dir))
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    let named = |err: &str| {
        assert!(
            err.starts_with("chart parent: dependency common from https://charts.bitnami.com/bitnami (mirror http://127.0.0.1:"),
            "{err}"
        );
    };

    // Digest mismatch: the archive served is not the one the index names.
    let server = StaticServer::start(&repos);
    server.override_path(
        "/bitnami/common-2.14.1.tgz",
        &std::fs::read(repos.join("bitnami/common-2.31.10.tgz")).unwrap(),
    );
    let cache = Cache::open(scratch.path().join("c1")).unwrap();
    let err = resolve(&server, &cache);
    named(&err);
    assert!(err.contains("does not match the index's digest"), "{err}");
    assert!(cached_charts(&cache).is_empty() && tmp_is_empty(&cache), "{err}");
    let blobs = std::fs::read_dir(cache.root().join("blobs/sha256"))
        .unwrap()
        .count();
    assert_eq!(blobs, 0, "a mismatching download was kept");

    // Malformed index.yaml: refused, and not cached in place of a good one.
    let server = StaticServer::start(&repos);
    server.override_path("/bitnami/index.yaml", b"<html>this is not an index</html>\n");
    let cache = Cache::open(scratch.path().join("c2")).unwrap();
    let err = resolve(&server, &cache);
    named(&err);
    assert!(err.contains("index.yaml") && err.contains("malformed"), "{err}");
    assert!(
        !cache.root().join("state/chart-index").exists(),
        "a malformed index was kept"
    );

    // No version matches: Helm's words, and what exists.
    write_chart(
        &chart_dir,
        "  - name: common
    version: \"~2.20\"
    repository: https://charts.bitnami.com/bitnami
",
    );
    let server = StaticServer::start(&repos);
    let cache = Cache::open(scratch.path().join("c3")).unwrap();
    let err = resolve(&server, &cache);
    named(&err);
    assert!(
        err.contains("can't get a valid version for 1 subchart(s): \"common\" (repository \"https://charts.bitnami.com/bitnami\", version \"~2.20\")")
            && err.contains("versions available: common: 2.31.10, 2.14.1"),
        "{err}"
    );

    // Unreachable: nothing listens on the port.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut s = settings(&server);
    s.mirrors = vec![(
        "https://charts.bitnami.com/bitnami".into(),
        format!("http://127.0.0.1:{port}/bitnami"),
    )];
    let cache = Cache::open(scratch.path().join("c4")).unwrap();
    let err = ChartResolver::new(cache.clone(), s)
        .unwrap()
        .resolve_chart(load::load(&chart_dir).unwrap(), Some(&chart_dir))
        .map(|_| ())
        .unwrap_err()
        .to_string();
    named(&err);
    assert!(err.contains("repository unreachable"), "{err}");
    assert!(cached_charts(&cache).is_empty() && tmp_is_empty(&cache));
}

/// Archives downloaded (`GET ….tgz`) by a server so far.
fn archive_downloads(server: &StaticServer) -> Vec<String> {
    server
        .log()
        .into_iter()
        .map(|(line, _)| line)
        .filter(|line| line.contains(".tgz"))
        .collect()
}

#[test]
fn another_mirror_of_the_same_repositories_downloads_no_chart_again() {
    let Some(repos) = chart_repos("chart cache across mirrors") else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let chart_dir = scratch.path().join("parent");
    write_chart(&chart_dir, DEPS);
    let cache = Cache::open(scratch.path().join("cache")).unwrap();
    let resolve = |server: &StaticServer| {
        ChartResolver::new(cache.clone(), settings(server))
            .unwrap()
            .resolve_chart(load::load(&chart_dir).unwrap(), Some(&chart_dir))
            .unwrap()
    };

    let mirror_a = StaticServer::start(&repos);
    resolve(&mirror_a);
    assert_eq!(archive_downloads(&mirror_a).len(), 2, "{:?}", mirror_a.log());

    // The mirror moves: its indexes are read (index state is per URL fetched), the charts the
    // indexes name by digest come from the cache.
    let mirror_b = StaticServer::start(&repos);
    let chart = resolve(&mirror_b);
    assert_eq!(chart.dependencies.len(), 2);
    assert_eq!(
        archive_downloads(&mirror_b),
        Vec::<String>::new(),
        "the second mirror downloaded charts again"
    );
    assert_eq!(mirror_b.requests(), 2, "{:?}", mirror_b.log());
    // Kept under the charts' own repositories, once.
    assert_eq!(
        cached_charts(&cache),
        [
            "charts/charts.bitnami.com/bitnami/common/2.14.1",
            "charts/kubernetes-sigs.github.io/metrics-server/metrics-server/3.13.0",
        ]
    );
}

#[test]
fn a_damaged_cached_chart_with_the_repository_down_says_both() {
    let Some(repos) = chart_repos("damaged cached chart") else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let chart_dir = scratch.path().join("parent");
    write_chart(
        &chart_dir,
        "  - name: common
    version: 2.14.1
    repository: https://charts.bitnami.com/bitnami
",
    );
    let cache = Cache::open(scratch.path().join("cache")).unwrap();
    // By URL: a server dropped before the resolution leaves its port closed.
    let resolve = |url: &str| {
        ChartResolver::new(cache.clone(), settings_for(url))
            .unwrap()
            .resolve_chart(load::load(&chart_dir).unwrap(), Some(&chart_dir))
            .map(|_| ())
    };
    let server = StaticServer::start(&repos);
    resolve(&server.url()).unwrap();
    let manifest = cache
        .release("charts/charts.bitnami.com/bitnami/common/2.14.1")
        .unwrap()
        .expect("the chart is cached under its own repository");
    let sha = manifest.files.values().next().unwrap().sha256.clone();
    let blob = cache.blob_path(&sha).unwrap();

    // Another valid chart in its place, and the repository stopped.
    std::fs::write(&blob, std::fs::read(repos.join("bitnami/common-2.31.10.tgz")).unwrap()).unwrap();
    let url = server.url();
    drop(server);
    let err = resolve(&url).unwrap_err().to_string();
    assert!(
        err.starts_with("chart parent: dependency common from https://charts.bitnami.com/bitnami (mirror http://127.0.0.1:"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "the cached copy of common 2.14.1 failed its digest check (expected sha256:{sha}"
        )) && err.contains("and was removed; fetching it again failed: GET http://127.0.0.1:")
            && err.contains("repository unreachable"),
        "{err}"
    );
    assert!(!blob.exists(), "the damaged copy was kept");

    // With a repository up again, the chart is fetched once more.
    let server = StaticServer::start(&repos);
    resolve(&server.url()).unwrap();
    assert_eq!(archive_downloads(&server).len(), 1, "{:?}", server.log());
    assert!(blob.is_file());
}

#[test]
fn a_repository_that_never_answers_times_out_with_the_sources_timeouts() {
    // Accepts connections (the kernel's backlog) and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let scratch = tempfile::tempdir().unwrap();
    let chart_dir = scratch.path().join("parent");
    write_chart(
        &chart_dir,
        &format!("  - name: common\n    version: 2.14.1\n    repository: http://{host}/bitnami\n"),
    );
    let cache = Cache::open(scratch.path().join("cache")).unwrap();
    let settings = Settings {
        timeouts: capstan_source::net::NetworkTimeouts {
            connect: std::time::Duration::from_secs(1),
            response: std::time::Duration::from_millis(300),
            retries: 1,
        },
        ..Settings::default()
    };
    let started = std::time::Instant::now();
    let err = ChartResolver::new(cache.clone(), settings)
        .unwrap()
        .resolve_chart(load::load(&chart_dir).unwrap(), Some(&chart_dir))
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!(
            "{host} sent nothing for 0.3 s (response timeout), 2 tries"
        )),
        "{err}"
    );
    assert!(
        err.starts_with("chart parent: dependency common from http://"),
        "{err}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert!(cached_charts(&cache).is_empty() && tmp_is_empty(&cache));
    drop(listener);
}

#[test]
fn credentials_go_only_to_their_repository() {
    let Some(repos) = chart_repos("dependency credentials") else {
        return;
    };
    let private = StaticServer::start(&repos);
    private.require_auth("Basic dXNlcjpzM2NyZXQ="); // user:s3cret
    let public = StaticServer::start(&repos);
    let scratch = tempfile::tempdir().unwrap();
    let chart_dir = scratch.path().join("parent");
    write_chart(
        &chart_dir,
        &format!(
            "  - name: common
    version: 2.14.1
    repository: {}/bitnami
  - name: metrics-server
    version: 3.13.0
    repository: {}/metrics-server
",
            private.url(),
            public.url()
        ),
    );
    let cache = Cache::open(scratch.path().join("cache")).unwrap();
    let err = ChartResolver::new(cache.clone(), Settings::default())
        .unwrap()
        .resolve_chart(load::load(&chart_dir).unwrap(), Some(&chart_dir))
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("dependency common") && err.contains("HTTP 401"),
        "{err}"
    );
    let settings = Settings {
        credentials: vec![Credential {
            url: private.url(),
            auth: Auth::Basic {
                username: "user".into(),
                password: "s3cret".into(),
            },
        }],
        ..Settings::default()
    };
    let resolver = ChartResolver::new(cache, settings).unwrap();
    assert!(!format!("{resolver:?}").contains("s3cret"));
    resolver
        .resolve_chart(load::load(&chart_dir).unwrap(), Some(&chart_dir))
        .unwrap();
    assert!(
        public.log().iter().all(|(_, auth)| auth.is_none()),
        "{:?}",
        public.log()
    );
    assert!(private.log().iter().skip(1).all(|(_, auth)| auth.is_some()));
}

/// Real Helm's `dependency_update` and capstan's `dependency update` of the same chart: the
/// same Chart.lock (but `generated`) and the same archives in `charts/`.
#[test]
fn dependency_update_matches_helm() {
    let Some(repos) = chart_repos("dependency update vs helm") else {
        return;
    };
    let Some(python) = capstan_testenv::shared::stack::helm_python("dependency update vs helm") else {
        return;
    };
    let server = StaticServer::start(&repos);
    let scratch = tempfile::tempdir().unwrap();
    let deps = format!(
        "  - name: metrics-server
    version: \">=3.12.0 <3.13.1\"
    repository: {u}/metrics-server/
    alias: ms
  - name: common
    version: \"^2.0.0\"
    repository: {u}/bitnami
    condition: common.enabled
    tags: [base]
  - name: openstack-cinder-csi
    version: \"~2.34\"
    repository: {u}/cloud-provider-openstack
  - name: cilium
    version: \"1.17.4\"
    repository: {u}/cilium
",
        u = server.url()
    );
    let ours = scratch.path().join("ours");
    let helms = scratch.path().join("helms");
    write_chart(&ours, &deps);
    write_chart(&helms, &deps);
    let cache = Cache::open(scratch.path().join("cache")).unwrap();
    ChartResolver::new(
        cache,
        Settings {
            refresh: true,
            ..Settings::default()
        },
    )
    .unwrap()
    .update_dir(&ours, false)
    .unwrap();
    let out = std::process::Command::new(&python)
        .arg("-c")
        .arg("import sys, helm_python.registry as r; r.dependency_update(sys.argv[1])")
        .arg(&helms)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lock_without_generated = |dir: &Path| {
        let text = std::fs::read_to_string(dir.join("Chart.lock")).unwrap();
        text.lines()
            .filter(|l| !l.starts_with("generated:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(lock_without_generated(&ours), lock_without_generated(&helms));
    let files = |dir: &Path| {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir.join("charts"))
            .unwrap()
            .flatten()
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let (a, b) = (files(&ours), files(&helms));
    assert_eq!(
        a.iter().map(|f| &f.0).collect::<Vec<_>>(),
        b.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    assert!(a == b, "the archives in charts/ differ");
    // Helm leaves an unchanged lock alone; so does capstan (same digest: not rewritten).
    let before = std::fs::read_to_string(ours.join("Chart.lock")).unwrap();
    let cache = Cache::open(scratch.path().join("cache")).unwrap();
    ChartResolver::new(cache, Settings::default())
        .unwrap()
        .update_dir(&ours, true)
        .unwrap();
    assert_eq!(std::fs::read_to_string(ours.join("Chart.lock")).unwrap(), before);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A copy of `openstack/scs2` at `dest` whose cilium pin (1.18.9) is moved to 1.17.4, a
/// version the shared chart repositories hold.
pub(crate) fn scs2_with_shared_cilium(shared: &Path, dest: &Path) {
    copy_dir(&shared.join("cluster-stacks-src/providers/openstack/scs2"), dest);
    let cni = dest.join("cluster-addon/cni/Chart.yaml");
    let text = std::fs::read_to_string(&cni).unwrap();
    assert!(
        text.contains("version: 1.18.9"),
        "scs2's cilium pin changed: {text}"
    );
    std::fs::write(&cni, text.replace("version: 1.18.9", "version: 1.17.4")).unwrap();
}

/// The "done when": a copy of `openstack/scs2` whose cilium pin is one the shared
/// repositories hold renders with its dependencies fetched through mirrors on loopback, and
/// every addon stage equals real Helm rendering that stage after `dependency_update` (engine
/// output with the stage's values and Kubernetes version, and the install stream).
#[test]
fn scs2_stages_render_like_helm_after_dependency_update() {
    let Some(repos) = chart_repos("scs2 with dependencies vs helm") else {
        return;
    };
    let shared_dir = repos.parent().unwrap().to_path_buf();
    let server = StaticServer::start(&repos);
    let scratch = tempfile::tempdir().unwrap();
    let source = scratch.path().join("scs2");
    scs2_with_shared_cilium(&shared_dir, &source);

    use capstan_chart::deps::DependencyResolver;
    use capstan_stack::release::Addon;
    use capstan_stack::render::CompiledRelease;
    let release = capstan_stack::build::build(
        &source,
        &capstan_stack::Version::hash("abc1234").unwrap(),
        &scratch.path().join("release"),
    )
    .unwrap();
    let cache = Cache::open(scratch.path().join("cache")).unwrap();
    let resolver = ChartResolver::new(cache.clone(), settings(&server)).unwrap();
    let objects = capstan_testenv::shared::stack::example_objects();
    let parts = CompiledRelease::with_resolver(&release, Some(&resolver))
        .unwrap()
        .render(&objects, &capstan_testenv::shared::stack::deterministic())
        .unwrap();
    assert_eq!(
        parts.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        [
            "cluster-class",
            "cluster-addon/cni",
            "cluster-addon/metrics-server",
            "cluster-addon/csi",
            "cluster-addon/ccm"
        ]
    );
    let cold = server.requests();
    // cilium, metrics-server, cloud-provider-openstack: 3 indexes; 4 archives.
    assert_eq!(cold, 7, "{:?}", server.log());
    // Warm: the same release again, from a new resolver over the same cache.
    let again = ChartResolver::new(cache, settings(&server)).unwrap();
    CompiledRelease::with_resolver(&release, Some(&again))
        .unwrap()
        .render(&objects, &capstan_testenv::shared::stack::deterministic())
        .unwrap();
    assert_eq!(server.requests(), cold, "a warm render made requests");

    let Some(python) = capstan_testenv::shared::stack::helm_python("scs2 with dependencies vs helm") else {
        return;
    };
    let Addon::Staged { archive, .. } = release.addon() else {
        panic!("scs2 is multi-stage")
    };
    let unpacked = scratch.path().join("addon");
    capstan_testenv::shared::stack::unpack(archive, &unpacked);
    let addon_charts = release.addon_charts().unwrap();
    let mut questions = Vec::new();
    for (part, addon) in parts[1..].iter().zip(addon_charts) {
        let stage = addon.stage.clone().unwrap();
        let dir = unpacked.join(&stage);
        // Helm knows no mirrors: its copy of the stage names the loopback repositories.
        let chart_yaml = dir.join("Chart.yaml");
        let mut text = std::fs::read_to_string(&chart_yaml).unwrap();
        for (from, to) in &settings(&server).mirrors {
            text = text.replace(from.as_str(), to);
        }
        std::fs::write(&chart_yaml, text).unwrap();
        let out = std::process::Command::new(&python)
            .arg("-c")
            .arg("import sys, helm_python.registry as r; r.dependency_update(sys.argv[1])")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{stage}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let chart = resolver.resolve(addon.chart, None).unwrap();
        questions.extend(capstan_testenv::shared::stack::questions_for(
            &format!("scs2 {}", part.name),
            &dir,
            &chart,
            part,
            scratch.path(),
        ));
    }
    let failures =
        capstan_testenv::shared::stack::differences(&shared_dir, &python, &questions, scratch.path());
    // Every stage, the ccm one included: its values.yaml sets `nodeSelector:` (null) over the
    // subchart's default, which Helm's null rule (issue 22, merged) deletes.
    assert!(failures.is_empty(), "stages that differ from Helm: {failures:?}");
}

/// `capstan dependency update|build|list` and `capstan render CHART` as a user runs them.
#[test]
fn cli_dependency_commands_and_render() {
    let Some(repos) = chart_repos("capstan dependency") else {
        return;
    };
    let server = StaticServer::start(&repos);
    let scratch = tempfile::tempdir().unwrap();
    let chart_dir = scratch.path().join("parent");
    write_chart(&chart_dir, DEPS);
    std::fs::write(
        chart_dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  subcharts: {{ keys .Subcharts | sortAlpha | join \",\" | quote }}\n",
    )
    .unwrap();
    let cache = scratch.path().join("cache");
    let capstan = |args: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_capstan"));
        cmd.args(args)
            .arg("--cache")
            .arg(&cache)
            .arg("--repository-mirror")
            .arg(format!(
                "https://kubernetes-sigs.github.io/metrics-server={}/metrics-server",
                server.url()
            ))
            .arg("--repository-mirror")
            .arg(format!(
                "https://charts.bitnami.com/bitnami={}/bitnami",
                server.url()
            ));
        cmd.output().unwrap()
    };
    let dir = chart_dir.to_str().unwrap();
    // Without --dependency-update, `helm template`'s refusal.
    let out = capstan(&["render", dir]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("missing in charts/ directory: metrics-server, common"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.requests(), 0);
    let out = capstan(&[
        "render",
        dir,
        "--dependency-update",
        "--show-only",
        "templates/cm.yaml",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("subcharts: \"lib,metrics-server\""));
    let cold = server.requests();
    let out = capstan(&["render", dir, "--dependency-update", "--offline"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(server.requests(), cold, "a warm render made requests");

    let out = capstan(&["dependency", "update", dir]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(chart_dir.join("charts/metrics-server-3.13.0.tgz").is_file());
    assert!(chart_dir.join("charts/common-2.14.1.tgz").is_file());
    assert!(Lock::parse(&std::fs::read_to_string(chart_dir.join("Chart.lock")).unwrap()).is_ok());
    let list = std::process::Command::new(env!("CARGO_BIN_EXE_capstan"))
        .args(["dependency", "list", dir])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(
        text.contains("metrics-server") && text.contains("ok") && text.contains("in sync"),
        "{text}"
    );
    std::fs::remove_dir_all(chart_dir.join("charts")).unwrap();
    let out = capstan(&["dependency", "build", dir, "--offline"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(chart_dir.join("charts/common-2.14.1.tgz").is_file());
}

/// `oci://` dependencies against the real registry, the charts pushed by real Helm
/// (`helm_python.registry.push`): Helm's choice among the tags, the archive Helm pushed and
/// Helm's `dependency_update` wrote (byte-identical in `charts/`), the same Chart.lock (but
/// `generated`), the tag list and chart cached (offline works), a tag that is no chart refused.
#[test]
fn oci_dependencies_from_a_real_registry() {
    let test = "oci dependencies";
    let Some(repos) = chart_repos(test) else {
        return;
    };
    let (Some(bin), Some(python)) = (
        capstan_testenv::registry::binary_or_skip(test),
        capstan_testenv::shared::stack::helm_python(test),
    ) else {
        return;
    };
    let reg = capstan_testenv::registry::Registry::start(&bin, capstan_testenv::registry::Auth::Anonymous);
    let remote = format!("oci://{}/charts", reg.host());
    for version in ["2.14.1", "2.31.10"] {
        let out = std::process::Command::new(&python)
            .arg("-c")
            .arg("import sys, helm_python.registry as r; r.push(sys.argv[1], sys.argv[2], plain_http=True)")
            .arg(repos.join(format!("bitnami/common-{version}.tgz")))
            .arg(&remote)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "push: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let scratch = tempfile::tempdir().unwrap();
    let deps =
        format!("  - name: common\n    version: \"~2.14\"\n    repository: {remote}\n    alias: lib\n");
    let ours = scratch.path().join("ours");
    write_chart(&ours, &deps);
    let cache = Cache::open(scratch.path().join("cache")).unwrap();
    let resolver = |offline: bool| {
        ChartResolver::new(
            cache.clone(),
            Settings {
                offline,
                ..Settings::default()
            },
        )
        .unwrap()
    };
    // Real Helm's dependency update of the same chart (plain http: the registry is on loopback).
    let helms = scratch.path().join("helms");
    write_chart(&helms, &deps);
    let out = std::process::Command::new(&python)
        .arg("-c")
        .arg("import sys, helm_python.registry as r; r.dependency_update(sys.argv[1], plain_http=True)")
        .arg(&helms)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let chart = resolver(false)
        .resolve_chart(load::load(&ours).unwrap(), Some(&ours))
        .unwrap();
    let sub = chart.dependencies.iter().find(|c| c.name() == "common").unwrap();
    assert_eq!(sub.metadata.version, "2.14.1");
    assert_eq!(cached_charts(&cache).len(), 1, "{:?}", cached_charts(&cache));
    // From the cache alone now: the registry is gone.
    drop(reg);
    let again = resolver(true)
        .resolve_chart(load::load(&ours).unwrap(), Some(&ours))
        .unwrap();
    assert!(again.dependencies.iter().any(|c| c.metadata.version == "2.14.1"));
    // `dependency build` from the cache writes what Helm pushed, byte for byte.
    resolver(true).update_dir(&ours, false).unwrap();
    assert_eq!(
        std::fs::read(ours.join("charts/common-2.14.1.tgz")).unwrap(),
        std::fs::read(repos.join("bitnami/common-2.14.1.tgz")).unwrap()
    );
    let lock = Lock::parse(&std::fs::read_to_string(ours.join("Chart.lock")).unwrap()).unwrap();
    assert_eq!(lock.dependencies[0].repository, remote);
    assert_eq!(lock.dependencies[0].version, "2.14.1");
    let without_generated = |dir: &Path| {
        std::fs::read_to_string(dir.join("Chart.lock"))
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with("generated:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(without_generated(&ours), without_generated(&helms));
    assert_eq!(
        std::fs::read(ours.join("charts/common-2.14.1.tgz")).unwrap(),
        std::fs::read(helms.join("charts/common-2.14.1.tgz")).unwrap(),
        "the archive Helm's dependency update wrote"
    );

    // A tag that is not a chart (a cluster-stack style artifact) is refused, naming it.
    let reg = capstan_testenv::registry::Registry::start(&bin, capstan_testenv::registry::Auth::Anonymous);
    let client =
        capstan_source::oci::Client::new(&reg.host(), capstan_source::oci::Config::default()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let empty = rt
        .block_on(client.push_blob("charts/common", bytes::Bytes::from_static(b"{}")))
        .unwrap();
    let body = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": empty, "size": 2},
        "layers": [],
    });
    rt.block_on(client.put_manifest(
        "charts/common",
        "2.14.1",
        "application/vnd.oci.image.manifest.v1+json",
        serde_json::to_vec(&body).unwrap().into(),
    ))
    .unwrap();
    let other = scratch.path().join("other");
    write_chart(
        &other,
        &format!(
            "  - name: common\n    version: 2.14.1\n    repository: oci://{}/charts\n",
            reg.host()
        ),
    );
    let err = resolver(false)
        .resolve_chart(load::load(&other).unwrap(), Some(&other))
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "chart parent: dependency common from oci://{}/charts: ",
            reg.host()
        )) && err.contains("is not a Helm chart"),
        "{err}"
    );
}
