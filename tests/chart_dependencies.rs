//! Chart dependencies resolved from real Helm repositories (`../shared/chart-repos`, real
//! upstream charts indexed by real Helm) served on loopback: the versions chosen, the cache
//! (a second resolution makes no request, `--offline`), faults (each a clear error, nothing
//! half-written in the cache), credentials, and differential checks against real Helm's
//! `dependency_update` (the same Chart.lock but `generated`, the same archives in `charts/`).

mod shared;
mod support;

use std::path::{Path, PathBuf};

use capstan::chart::deps::Lock;
use capstan::chart::load;
use capstan::source::cache::Cache;
use capstan::source::charts::{Auth, ChartResolver, Credential, Settings};
use support::StaticServer;

fn chart_repos(test: &str) -> Option<PathBuf> {
    let shared = shared::dir(test)?;
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
    Settings {
        mirrors: vec![
            (
                "https://helm.cilium.io".into(),
                format!("{}/cilium", server.url()),
            ),
            (
                "https://kubernetes.github.io/cloud-provider-openstack".into(),
                format!("{}/cloud-provider-openstack", server.url()),
            ),
            (
                "https://kubernetes-sigs.github.io/metrics-server".into(),
                format!("{}/metrics-server", server.url()),
            ),
            (
                "https://charts.bitnami.com/bitnami".into(),
                format!("{}/bitnami", server.url()),
            ),
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
        vec![capstan::chart::deps::LockedDependency {
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
    let Some(python) = shared::stack::helm_python("dependency update vs helm") else {
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
