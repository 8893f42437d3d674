//! `capstan releases list`, `capstan releases pull` and `capstan render OWNER/REPO@TAG` as a
//! user runs them, against the fake GitHub.

#[path = "support/fake_github.rs"]
mod fake_github;
mod shared;

use std::path::{Path, PathBuf};
use std::process::Output;

use fake_github::FakeGitHub;

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

fn shared_releases() -> Option<PathBuf> {
    Some(shared::dir("releases pull cli")?.join("cluster-stack-releases"))
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
