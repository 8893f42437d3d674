//! `capstan releases list`, `capstan releases pull` and `capstan render OWNER/REPO@TAG` as a
//! user runs them, against the fake GitHub.

use std::path::{Path, PathBuf};
use std::process::Output;

use capstan_testenv::fake_github::FakeGitHub;

/// Runs the capstan binary off the runtime's threads (the fake serves on them meanwhile).
async fn capstan(args: Vec<String>, env: Vec<(&'static str, String)>) -> Output {
    tokio::task::spawn_blocking(move || {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_capstan"));
        cmd.args(&args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_remove("GITHUB_TOKEN");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("capstan runs")
    })
    .await
    .unwrap()
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_shows_all_pages_newest_first_and_filters() {
    let gh = FakeGitHub::start().await;
    gh.add_synthetic("org/stacks", 250);
    // Other stacks, a prerelease channel, a draft, a hash version and a tag of another kind.
    gh.add_release("org/stacks", "docker-ferrol-1-28-v1", false, false, vec![]);
    gh.add_release("org/stacks", "docker-ferrol-1-27-v3-beta-2", false, true, vec![]);
    gh.add_release("org/stacks", "docker-ferrol-1-27-v3-beta-10", false, true, vec![]);
    gh.add_release("org/stacks", "docker-ferrol-1-27-v999", true, false, vec![]);
    gh.add_release(
        "org/stacks",
        "openstack-scs-1-30-v0-sha-abc1234",
        false,
        false,
        vec![],
    );
    gh.add_release("org/stacks", "tools-v1.2.0", false, false, vec![]);
    let cache = tempfile::tempdir().unwrap();
    let base = [
        "--github-url".to_string(),
        gh.base_url(),
        "--cache".to_string(),
        cache.path().display().to_string(),
    ];
    let run = |extra: &[&str]| {
        let mut a = args(&["releases", "list", "org/stacks"]);
        a.extend(extra.iter().map(|s| s.to_string()));
        a.extend(base.iter().cloned());
        capstan(a, vec![])
    };

    let out = run(&[]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let tags: Vec<&str> = stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert!(stdout.starts_with("TAG "), "{stdout}");
    // 250 + 1.28 + two betas + the hash version; the draft and the non-stack tag are not listed.
    assert_eq!(tags.len(), 254, "{stdout}");
    // Versions newest first; a major's pre-releases (beta.10 after beta.2, numerically) sit
    // below its stable release; other stacks by provider and name.
    let mut expected: Vec<String> = vec!["docker-ferrol-1-28-v1".into()];
    expected.extend((3..=250).rev().map(|i| format!("docker-ferrol-1-27-v{i}")));
    expected.extend(
        [
            "docker-ferrol-1-27-v3-beta-10",
            "docker-ferrol-1-27-v3-beta-2",
            "docker-ferrol-1-27-v2",
            "docker-ferrol-1-27-v1",
            "openstack-scs-1-30-v0-sha-abc1234",
        ]
        .map(String::from),
    );
    assert!(tags == expected, "order:\n{stdout}");
    assert!(stdout.contains("beta (pre)"), "{stdout}");
    assert!(
        text(&out.stderr)
            .contains("1 release(s) of org/stacks have tags that are not cluster-stack release tags"),
        "{}",
        text(&out.stderr)
    );
    // Three pages of 100 (257 releases with the draft and the odd tag).
    assert_eq!(gh.counts().list, 3);

    // The next command re-polls with the listing the first stored in the cache: one 304.
    gh.reset_counts();
    let out = run(&["--kubernetes", "1.27", "--channel", "beta", "-o", "json"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let c = gh.counts();
    assert_eq!((c.list, c.not_modified, c.body_bytes), (1, 1, 0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let list = json.as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["tag"], "docker-ferrol-1-27-v3-beta-10");
    assert_eq!(list[0]["version"], "v3-beta.10");
    assert_eq!(list[0]["clusterClass"], "docker-ferrol-1-27-v3-beta.10");
    assert_eq!(list[0]["prerelease"], true);

    let out = run(&["--provider", "openstack", "--channel", "custom", "-o", "json"]).await;
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json[0]["version"], "v0-sha.abc1234");
    assert_eq!(json.as_array().unwrap().len(), 1);

    // A new release changes the first page: every page is read again, and it is listed.
    gh.add_release("org/stacks", "docker-ferrol-1-27-v251", false, false, vec![]);
    gh.reset_counts();
    let out = run(&["--kubernetes", "1.27", "--channel", "stable", "-o", "json"]).await;
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json[0]["tag"], "docker-ferrol-1-27-v251");
    assert_eq!(json.as_array().unwrap().len(), 251);
    assert_eq!((gh.counts().list, gh.counts().not_modified), (3, 0));

    let out = run(&["--name", "nothing"]).await;
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("none of the 256 releases of org/stacks matches the filters"),
        "{}",
        text(&out.stderr)
    );

    let out = run(&["--kubernetes", "one"]).await;
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("one"), "{}", text(&out.stderr));

    let mut a = args(&["releases", "list", "org/missing"]);
    a.extend(base.iter().cloned());
    let out = capstan(a, vec![]).await;
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("repository org/missing not found")
            && err.contains("no repository has releases in the cache yet"),
        "{err}"
    );
}

/// `releases list` and `releases pull` against a server that accepts and never answers: both
/// fail within bounded time with a message naming the host and the timeout (issue 21).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_github_fails_in_bounded_time_naming_host_and_timeout() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap();
    let cache = tempfile::tempdir().unwrap();
    for command in [
        &["releases", "list", "org/stacks"][..],
        &["releases", "pull", "org/stacks", "docker-ferrol-1-27-v1"][..],
        &[
            "render",
            "org/stacks@docker-ferrol-1-27-v1",
            "--cluster",
            "testdata/cluster.yaml",
        ][..],
    ] {
        let mut a = args(command);
        a.extend(args(&["--timeout", "1", "--connect-timeout", "2", "--cache"]));
        a.push(cache.path().display().to_string());
        a.push("--github-url".into());
        a.push(format!("http://{addr}"));
        let started = std::time::Instant::now();
        let out = tokio::time::timeout(std::time::Duration::from_secs(60), capstan(a, vec![]))
            .await
            .expect("capstan gives up by itself");
        let stderr = text(&out.stderr);
        assert!(!out.status.success());
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{command:?}: {:?}",
            started.elapsed()
        );
        assert!(
            stderr.contains(&format!("{addr} sent nothing for 1 s (response timeout)")),
            "{command:?}: {stderr}"
        );
    }
    drop(silent);
}

fn shared_releases() -> Option<PathBuf> {
    Some(capstan_testenv::shared::dir("releases pull cli")?.join("cluster-stack-releases"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_then_render_by_tag_with_a_token() {
    let Some(root) = shared_releases() else {
        return;
    };
    let gh = FakeGitHub::start().await;
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    for d in &dirs {
        gh.add_release_dir("scs/cluster-stacks", d).unwrap();
    }
    gh.require_token(Some("ghp_s3cret"));
    let cache = tempfile::tempdir().unwrap();
    let token_file = cache.path().join("token");
    std::fs::write(&token_file, "ghp_s3cret\n").unwrap();
    let base = [
        "--github-url".to_string(),
        gh.base_url(),
        "--cache".to_string(),
        cache.path().join("c").display().to_string(),
    ];
    let with = |mut a: Vec<String>| {
        a.extend(base.iter().cloned());
        a
    };
    let debug = || vec![("CAPSTAN_LOG", "trace".to_string())];

    // The token from a file.
    let out = capstan(
        with(args(&[
            "releases",
            "pull",
            "scs/cluster-stacks",
            "docker-ferrol-1-27-v2",
            "--token-file",
            token_file.to_str().unwrap(),
        ])),
        debug(),
    )
    .await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(!stdout.contains("s3cret") && !stderr.contains("s3cret"));
    let v2 = root.join("docker-ferrol-1-27-v2");
    let total: u64 = std::fs::read_dir(&v2)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(
        stdout.starts_with("scs/cluster-stacks docker-ferrol-1-27-v2: 5 file(s), ")
            && stdout.contains(" verified; 5 file(s), ")
            && stdout.contains("(key github/scs/cluster-stacks/docker-ferrol-1-27-v2)"),
        "{stdout}"
    );
    assert!(gh.counts().body_bytes > total);
    let downloads = gh.counts().asset_download;
    assert_eq!(downloads, 5);

    // A second pull transfers nothing: not even a listing.
    gh.reset_counts();
    let out = capstan(
        with(args(&[
            "releases",
            "pull",
            "scs/cluster-stacks",
            "docker-ferrol-1-27-v2",
        ])),
        vec![("GITHUB_TOKEN", "ghp_s3cret".into())],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("already complete in the cache, nothing downloaded"),
        "{}",
        text(&out.stdout)
    );
    let c = gh.counts();
    assert_eq!((c.list, c.asset_api, c.asset_download), (0, 0, 0));

    // An unknown tag lists the tags there are.
    let out = capstan(
        with(args(&[
            "releases",
            "pull",
            "scs/cluster-stacks",
            "docker-ferrol-1-27-v9",
        ])),
        vec![("GITHUB_TOKEN", "ghp_s3cret".into())],
    )
    .await;
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("repository scs/cluster-stacks has no release \"docker-ferrol-1-27-v9\"; it has: docker-ferrol-1-27-v3, docker-ferrol-1-27-v2, docker-ferrol-1-27-v1, docker-ferrol-1-27-v0-sha-hipstsw"),
        "{err}"
    );
    // An unknown repository lists the ones in the cache; a missing token is GitHub's 401.
    let out = capstan(
        with(args(&["releases", "pull", "scs/other", "docker-ferrol-1-27-v1"])),
        vec![("GITHUB_TOKEN", "ghp_s3cret".into())],
    )
    .await;
    let err = text(&out.stderr);
    assert!(
        err.contains("repository scs/other not found")
            && err.contains("repositories with releases in the cache: scs/cluster-stacks"),
        "{err}"
    );
    let out = capstan(
        with(args(&[
            "releases",
            "pull",
            "scs/cluster-stacks",
            "docker-ferrol-1-27-v1",
        ])),
        vec![],
    )
    .await;
    assert!(
        text(&out.stderr).contains("HTTP 401: Bad credentials"),
        "{}",
        text(&out.stderr)
    );

    // Render by tag: OWNER/REPO@TAG pulls v1 on the way; a bare tag renders from the cache.
    // Both match rendering the release directory itself.
    let render = |release: String, env: Vec<(&'static str, String)>| {
        capstan(
            with(vec![
                "render".into(),
                release,
                "--cluster".into(),
                "testdata/cluster.yaml".into(),
                "-o".into(),
                "json".into(),
            ]),
            env,
        )
    };
    let token = vec![("GITHUB_TOKEN", "ghp_s3cret".to_string())];
    for (arg, dir) in [
        (
            "scs/cluster-stacks@docker-ferrol-1-27-v1",
            "docker-ferrol-1-27-v1",
        ),
        ("docker-ferrol-1-27-v2", "docker-ferrol-1-27-v2"),
    ] {
        let by_tag = render(arg.into(), token.clone()).await;
        assert!(by_tag.status.success(), "{arg}: {}", text(&by_tag.stderr));
        let by_dir = render(root.join(dir).display().to_string(), vec![]).await;
        assert!(by_dir.status.success(), "{}", text(&by_dir.stderr));
        assert_eq!(text(&by_tag.stdout), text(&by_dir.stdout), "{arg}");
    }
    let out = render("docker-ferrol-1-27-v3".into(), vec![]).await;
    assert!(
        text(&out.stderr).contains("no release of that tag is in the cache"),
        "{}",
        text(&out.stderr)
    );
    // Pulls went to the cache of the command line, nowhere else.
    assert!(
        Path::new(&base[3])
            .join("releases/github/scs/cluster-stacks")
            .is_dir()
    );
}

/// One byte of a cached file flipped (its size unchanged): `render TAG` (cache only) says
/// which command repairs it; `releases pull` re-verifies and downloads just that file again;
/// `render OWNER/REPO@TAG` repairs on the way (issue 21).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_byte_in_the_cache_is_found_and_repaired() {
    let Some(root) = shared_releases() else {
        return;
    };
    let gh = FakeGitHub::start().await;
    gh.add_release_dir("scs/cluster-stacks", &root.join("docker-ferrol-1-27-v2"))
        .unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let base = [
        "--github-url".to_string(),
        gh.base_url(),
        "--cache".to_string(),
        cache_dir.path().display().to_string(),
    ];
    let run = |list: &[&str]| {
        let mut a = args(list);
        a.extend(base.iter().cloned());
        capstan(a, vec![])
    };
    let tag = "docker-ferrol-1-27-v2";
    let out = run(&["releases", "pull", "scs/cluster-stacks", tag]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let cache = capstan_source::cache::Cache::open(cache_dir.path()).unwrap();
    let key = format!("github/scs/cluster-stacks/{tag}");
    let manifest = cache.release(&key).unwrap().unwrap();
    let flip = || {
        // The largest file: the addon chart archive.
        let f = manifest.files.values().max_by_key(|f| f.size).unwrap();
        let path = cache.blob_path(&f.sha256).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
    };

    flip();
    gh.reset_counts();
    let out = run(&["releases", "pull", "scs/cluster-stacks", tag]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("; 1 file(s), "),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(gh.counts().asset_download, 1);
    cache
        .verify_release(&cache.release(&key).unwrap().unwrap())
        .unwrap();

    flip();
    let out = run(&["render", tag, "--cluster", "testdata/cluster.yaml"]).await;
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!(
            "repair it with `capstan releases pull scs/cluster-stacks {tag}`"
        )),
        "{stderr}"
    );

    // The render removed the damaged file (it is wrong for every release naming it); a
    // render naming the repository fetches it, and repairs a flipped byte the same way.
    for damage in [false, true] {
        if damage {
            flip();
        }
        gh.reset_counts();
        let out = run(&[
            "render",
            &format!("scs/cluster-stacks@{tag}"),
            "--cluster",
            "testdata/cluster.yaml",
        ])
        .await;
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(gh.counts().asset_download, 1);
        cache
            .verify_release(&cache.release(&key).unwrap().unwrap())
            .unwrap();
    }
}

/// Temp files of killed pulls go on the next pull (a live writer's stay); `releases gc`
/// keeps the newest N per stack and reports what it removed with sizes (issue 21).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_temp_files_and_old_releases_are_collected() {
    let gh = FakeGitHub::start().await;
    let repo = "org/stacks";
    let shared = vec![("metadata.yaml".to_string(), b"shared by all".to_vec())];
    for v in 1..=3 {
        let mut files = shared.clone();
        files.push((format!("docker-ferrol-1-27-v{v}.tgz"), vec![v as u8; 1000 * v]));
        gh.add_release(repo, &format!("docker-ferrol-1-27-v{v}"), false, false, files);
    }
    let cache_dir = tempfile::tempdir().unwrap();
    let base = [
        "--github-url".to_string(),
        gh.base_url(),
        "--cache".to_string(),
        cache_dir.path().display().to_string(),
    ];
    let run = |list: Vec<String>| {
        let mut a = list;
        a.extend(base.iter().cloned());
        capstan(a, vec![])
    };
    let tmp = cache_dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    // A killed pull's (no process has a pid above Linux's pid_max) and a live writer's (this
    // test process).
    let dead = tmp.join("4999999-0.part");
    let live = tmp.join(format!("{}-0.part", std::process::id()));
    std::fs::write(&dead, vec![0u8; 4096]).unwrap();
    std::fs::write(&live, b"still writing").unwrap();
    for v in [1, 3, 2] {
        let out = run(args(&[
            "releases",
            "pull",
            repo,
            &format!("docker-ferrol-1-27-v{v}"),
        ]))
        .await;
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(
            !dead.exists(),
            "the killed pull's temp file is removed by the next pull"
        );
        assert!(live.exists(), "a live writer's temp file stays");
    }
    std::fs::write(&dead, vec![0u8; 4096]).unwrap();

    let out = run(args(&["releases", "gc", "--keep", "1"])).await;
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for want in [
        "removed release github/org/stacks/docker-ferrol-1-27-v1 (",
        "removed release github/org/stacks/docker-ferrol-1-27-v2 (",
        "removed temp file tmp/4999999-0.part (4.00 KiB)",
        "2 release(s), 2 file(s) and 1 temp file(s) removed, ",
        "; 1 release(s) kept in ",
    ] {
        assert!(stdout.contains(want), "{want:?} in {stdout}");
    }
    assert!(
        stdout.contains("(1000 B)") && stdout.contains("(1.95 KiB)"),
        "{stdout}"
    );
    assert!(live.exists());
    // The newest is whole; pulling it again downloads nothing.
    gh.reset_counts();
    let out = run(args(&["releases", "pull", repo, "docker-ferrol-1-27-v3"])).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(gh.counts().asset_download, 0);
    let cache = capstan_source::cache::Cache::open(cache_dir.path()).unwrap();
    assert_eq!(
        cache.releases().unwrap(),
        ["github/org/stacks/docker-ferrol-1-27-v3"]
    );
    assert_eq!(
        std::fs::read_dir(cache_dir.path().join("blobs/sha256"))
            .unwrap()
            .count(),
        2
    );
}

/// Smaller ones of issue 21: a release named without `--cluster`, an error printed once, a
/// first pull of a release with no files, an empty token file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_arguments_errors_and_first_pulls_say_what_is_so() {
    let gh = FakeGitHub::start().await;
    gh.add_release("org/stacks", "docker-ferrol-1-27-v1", false, false, vec![]);
    let cache = tempfile::tempdir().unwrap();
    let base = [
        "--github-url".to_string(),
        gh.base_url(),
        "--cache".to_string(),
        cache.path().display().to_string(),
    ];
    let run = |list: &[&str]| {
        let mut a = args(list);
        a.extend(base.iter().cloned());
        capstan(a, vec![])
    };
    for release in [
        "org/stacks@docker-ferrol-1-27-v1",
        "docker-ferrol-1-27-v1",
        "git+file:///nonexistent#main",
    ] {
        let out = run(&["render", release]).await;
        let stderr = text(&out.stderr);
        assert!(!out.status.success());
        assert!(
            stderr.contains("rendering a release needs --cluster FILE"),
            "{release}: {stderr}"
        );
    }
    let out = run(&["releases", "pull", "org/stacks", "../../etc/passwd"]).await;
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(stderr.matches("is not a valid cache key").count(), 1, "{stderr}");

    let out = run(&["releases", "pull", "org/stacks", "docker-ferrol-1-27-v1"]).await;
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains("the release has no files, nothing downloaded")
            && !stdout.contains("already complete"),
        "{stdout}"
    );
    let out = run(&["releases", "pull", "org/stacks", "docker-ferrol-1-27-v1"]).await;
    assert!(
        text(&out.stdout).contains("already complete in the cache"),
        "{}",
        text(&out.stdout)
    );

    let token_file = cache.path().join("empty-token");
    std::fs::write(&token_file, "\n").unwrap();
    let out = run(&[
        "releases",
        "list",
        "org/stacks",
        "--token-file",
        token_file.to_str().unwrap(),
    ])
    .await;
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!(
            "token file {}: its first line is empty",
            token_file.display()
        )),
        "{stderr}"
    );
}

/// GitHub behind a certificate nobody trusts: one try, one line saying why (no retries, no
/// log lines of the certificate verifier); nothing listening: the cause, `Connection refused`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_github_errors_say_why_once() {
    let cache = tempfile::tempdir().unwrap();
    let list = |url: String| {
        args(&[
            "releases",
            "list",
            "org/stacks",
            "--github-url",
            &url,
            "--cache",
            &cache.path().display().to_string(),
        ])
    };
    let server = capstan_testenv::untrusted_tls::UntrustedTls::start();
    let out = capstan(list(server.url.clone()), vec![]).await;
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(server.offered(), 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("Error: ") && err.contains("invalid peer certificate"),
        "{err}"
    );

    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let out = capstan(list(format!("http://127.0.0.1:{port}")), vec![]).await;
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("tcp connect error: Connection refused"), "{err}");
}
