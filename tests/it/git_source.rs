//! The git source against a real `git daemon` on loopback: a repository holding the docker/scs
//! stack of `../shared/cluster-stacks-src` yields a `v0-sha.<hash>` release that renders, the
//! same one a local build of the tree gives; a new commit yields a new release; the CLI pulls
//! and renders `git+URL#REF:PATH`.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use capstan_source::cache::Cache;
use capstan_source::git::{GitSpec, pull_git};
use capstan_source::local;
use capstan_stack::render::render_release;
use capstan_testenv::shared::stack::{deterministic, example_objects};

/// The daemon's process group: `git daemon` runs `git-daemon` as a child of its own, which
/// forks per connection, so killing the first process alone left the daemon running (and
/// holding whatever the test process had open) after the test.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Copies the tree `from` to `to` (other test modules use it too).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

/// `git daemon` serving every repository below `base` on a free loopback port.
fn start_daemon(base: &Path) -> (Daemon, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("git")
        .args([
            "daemon",
            "--reuseaddr",
            "--export-all",
            "--listen=127.0.0.1",
            &format!("--port={port}"),
            &format!("--base-path={}", base.display()),
            &base.display().to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("git daemon starts");
    let daemon = Daemon(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "git daemon did not listen on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
    (daemon, port)
}

fn git_available(test: &str) -> bool {
    let ok = Command::new("git")
        .args(["daemon", "--help"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{test}: git with `git daemon` is missing (scripts/install-test-deps.sh installs it)"
        );
        println!("SKIPPED {test}: git with `git daemon` is missing");
    }
    ok
}

/// A repository `stacks` below `base` with the docker/scs stack at providers/docker/scs,
/// one commit on `main`, tagged `first`.
fn make_repo(base: &Path, scs: &Path) -> PathBuf {
    let repo = base.join("stacks");
    copy_dir(scs, &repo.join("providers/docker/scs"));
    std::fs::write(repo.join("README.md"), "stacks\n").unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "docker/scs"]);
    git(&repo, &["tag", "first"]);
    repo
}

#[test]
fn git_ref_becomes_a_hash_release_that_renders_and_follows_new_commits() {
    let Some(shared) = capstan_testenv::shared::dir("git source") else {
        return;
    };
    if !git_available("git source") {
        return;
    }
    let scs = shared.join("cluster-stacks-src/providers/docker/scs");
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    let repo = make_repo(&served, &scs);
    let (_daemon, port) = start_daemon(&served);
    let cache = Cache::open(tmp.path().join("cache")).unwrap();
    let url = format!("git://127.0.0.1:{port}/stacks");
    let spec = GitSpec::parse(&format!("{url}#main:providers/docker/scs")).unwrap();

    let first = pull_git(&cache, &spec).unwrap();
    assert!(first.built);
    assert!(first.tag.starts_with("docker-scs-1-"), "{}", first.tag);
    assert!(first.tag.contains("-v0-sha-"), "{}", first.tag);
    assert_eq!(
        first.manifest.key,
        format!("git/127.0.0.1_{port}/stacks/{}", first.tag)
    );
    // The same release a local build of the tree gives, file for file.
    let built_here = local::open(&scs).unwrap();
    assert_eq!(built_here.release.tag().tag(), first.tag);
    let opened = local::open_cached(&cache, &first.manifest).unwrap();
    let mut names: Vec<String> = first.manifest.files.keys().cloned().collect();
    names.sort();
    for name in &names {
        let ours = std::fs::read(opened.release.dir().join(name)).unwrap();
        let theirs = std::fs::read(built_here.release.dir().join(name)).unwrap();
        assert!(ours == theirs, "{name} differs from a local build");
    }
    // It renders with the example Cluster.
    let parts = render_release(&opened.release, &example_objects(), &deterministic()).unwrap();
    assert!(parts.len() >= 2);
    assert!(parts[0].stream.contains("kind: ClusterClass"));

    // Polling again: nothing new, nothing built.
    let again = pull_git(&cache, &spec).unwrap();
    assert_eq!((again.tag.as_str(), again.built), (first.tag.as_str(), false));
    assert_eq!(again.commit, first.commit);

    // A commit outside the stack directory: a new commit, the same release.
    std::fs::write(repo.join("README.md"), "stacks, again\n").unwrap();
    git(&repo, &["commit", "-q", "-am", "readme"]);
    let same = pull_git(&cache, &spec).unwrap();
    assert_ne!(same.commit, first.commit);
    assert_eq!((same.tag.as_str(), same.built), (first.tag.as_str(), false));

    // A commit that changes the stack: a new release.
    let values = repo.join("providers/docker/scs/cluster-addon-values.yaml");
    let mut text = std::fs::read_to_string(&values).unwrap();
    text.push_str("# changed\n");
    std::fs::write(&values, text).unwrap();
    git(&repo, &["commit", "-q", "-am", "values"]);
    let second = pull_git(&cache, &spec).unwrap();
    assert!(second.built);
    assert_ne!(second.tag, first.tag);
    assert!(second.tag.contains("-v0-sha-"));
    let opened = local::open_cached(&cache, &second.manifest).unwrap();
    render_release(&opened.release, &example_objects(), &deterministic()).unwrap();
    assert_eq!(cache.releases().unwrap().len(), 2);

    // A tag still names the first commit.
    let tagged = pull_git(
        &cache,
        &GitSpec::parse(&format!("{url}#first:providers/docker/scs")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        (tagged.tag.as_str(), tagged.commit.as_str()),
        (first.tag.as_str(), first.commit.as_str())
    );

    // Unknown refs and paths are named, with what exists.
    let e = pull_git(&cache, &GitSpec::parse(&format!("{url}#nope")).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no branch or tag \"nope\"") && e.contains("branch main") && e.contains("tag first"),
        "{e}"
    );
    let e = pull_git(
        &cache,
        &GitSpec::parse(&format!("{url}#main:providers/nope")).unwrap(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("has no directory providers/nope"), "{e}");
    let e = pull_git(&cache, &GitSpec::parse(&format!("{url}#main")).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("csctl.yaml"), "{e}");

    // The command line: pull, then render the same ref.
    let bin = env!("CARGO_BIN_EXE_capstan");
    let cli_cache = tmp.path().join("cli-cache");
    let source = format!("git+{url}#main:providers/docker/scs");
    let out = Command::new(bin)
        .args([
            "releases",
            "pull",
            &source,
            "--cache",
            cli_cache.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        stdout.starts_with(&format!(
            "{source}: commit {} → {}: ",
            &second.commit[..12],
            second.tag
        )),
        "{stdout}"
    );
    let out = Command::new(bin)
        .args([
            "render",
            &source,
            "--cluster",
            "testdata/cluster.yaml",
            "--cache",
            cli_cache.to_str().unwrap(),
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stream = String::from_utf8_lossy(&out.stdout);
    assert!(
        stream.contains(&format!("name: {}", second.tag.replace("-v0-sha-", "-v0-sha."))),
        "{stream}"
    );
}

/// A repository of 1,000 commits (one file changing) on `main`, made in one `git fast-import`.
fn many_commits(dir: &Path) -> PathBuf {
    let repo = dir.join("many");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let mut stream = String::new();
    for i in 0..1000 {
        let data = format!("{i}\n");
        stream.push_str(&format!(
            "commit refs/heads/main\nmark :{}\ncommitter t <t@example.com> {} +0000\ndata 2\nc\n{}M 100644 inline a.txt\ndata {}\n{data}\n",
            i + 1,
            1_700_000_000 + i,
            if i > 0 { format!("from :{i}\n") } else { String::new() },
            data.len()
        ));
    }
    let mut child = Command::new("git")
        .args(["fast-import", "--quiet"])
        .current_dir(&repo)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), stream.as_bytes()).unwrap();
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    repo
}

fn git_out(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").args(args).current_dir(dir).output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Short commit ids are refs when unambiguous (issue 21); a tree without csctl.yaml is
/// named in the repository's terms, once, without the scratch directory; a first fetch of a
/// bad URL does not claim to discard a mirror.
#[test]
fn short_commit_ids_and_errors_in_the_repositorys_terms() {
    if !git_available("git short ids") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = many_commits(tmp.path());
    let url = format!("file://{}", repo.display());
    let cache = Cache::open(tmp.path().join("cache")).unwrap();
    let pull = |reference: &str| {
        pull_git(&cache, &GitSpec::parse(&format!("{url}#{reference}")).unwrap())
            .unwrap_err()
            .to_string()
    };
    let no_csctl = "no csctl.yaml at the repository root: not a stack source tree";
    let e = pull("main");
    assert!(e.contains(no_csctl) && !e.contains("capstan-"), "{e}");
    // Resolved (the same tree error), not "no branch or tag".
    let head = git_out(&repo, &["rev-parse", "main"]).trim().to_string();
    let e = pull(&head[..7]);
    assert!(
        e.contains(&format!("(commit {head})")) && e.contains(no_csctl),
        "{e}"
    );
    // A 4-digit prefix two of the 1,000 commits share is refused, naming both.
    let ids = git_out(&repo, &["rev-list", "main"]);
    let mut by_prefix: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for id in ids.lines() {
        by_prefix.entry(&id[..4]).or_default().push(id);
    }
    match by_prefix.iter().find(|(_, ids)| ids.len() > 1) {
        Some((prefix, ids)) => {
            let e = pull(prefix);
            assert!(
                e.contains(&format!("the commit prefix {prefix} is ambiguous"))
                    && ids.iter().all(|id| e.contains(id)),
                "{e}"
            );
        }
        None => println!("no two of 1,000 commits share 4 hex digits: ambiguity not checked"),
    }
    let e = pull("ffffffffff");
    assert!(e.contains("no branch or tag \"ffffffffff\""), "{e}");

    // The command line prints each message once.
    let bin = env!("CARGO_BIN_EXE_capstan");
    let run = |source: &str| {
        let out = Command::new(bin)
            .args(["releases", "pull", source, "--cache"])
            .arg(tmp.path().join("cli-cache"))
            .env("CAPSTAN_LOG", "warn")
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let stderr = run(&format!("git+{url}#main"));
    assert_eq!(stderr.matches("no csctl.yaml").count(), 1, "{stderr}");
    assert!(!stderr.contains("capstan-"), "{stderr}");
    let stderr = run(&format!("git+file://{}/nothing-here#main", tmp.path().display()));
    assert!(stderr.contains("nothing-here"), "{stderr}");
    assert!(!stderr.contains("discarding the git mirror"), "{stderr}");
}
