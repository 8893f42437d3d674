//! Hostile release archives: entries with `../` or absolute paths, symlinks and hard links,
//! and decompression bombs are refused with an error naming the archive and the entry —
//! when a release directory is loaded, and end to end when such a release is pulled from the
//! fake GitHub and rendered: the cache then holds exactly the (faithfully downloaded) release
//! and no extracted file is left anywhere.

use std::path::{Path, PathBuf};

use capstan_stack::Version;
use capstan_stack::build::build;
use capstan_stack::release::Release;
use capstan_testenv::fake_github::FakeGitHub;

const ADDON: &str = "docker-example-1-30-cluster-addon-v1.tgz";
const CLASS: &str = "docker-example-1-30-cluster-class-v1.tgz";
const MIB: usize = 1024 * 1024;

enum Entry {
    File(&'static str, usize),
    RawName(&'static [u8]),
    Link(tar::EntryType, &'static str, &'static str),
}

/// A gzipped tar of `entries` (file contents are zeros: they compress to almost nothing).
fn hostile_tgz(path: &Path, entries: &[Entry]) {
    let file = std::fs::File::create(path).unwrap();
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(file, flate2::Compression::fast()));
    for entry in entries {
        let mut header = tar::Header::new_gnu();
        header.set_mode(0o644);
        match entry {
            Entry::File(name, size) => {
                header.set_size(*size as u64);
                header.set_entry_type(tar::EntryType::Regular);
                builder
                    .append_data(
                        &mut header,
                        name,
                        std::io::Read::take(std::io::repeat(0), *size as u64),
                    )
                    .unwrap();
            }
            Entry::RawName(name) => {
                // The tar crate refuses to write such names itself: set the bytes directly.
                header.as_old_mut().name[..name.len()].copy_from_slice(name);
                header.set_size(1);
                header.set_entry_type(tar::EntryType::Regular);
                header.set_cksum();
                builder.append(&header, &b"x"[..]).unwrap();
            }
            Entry::Link(kind, name, target) => {
                header.set_size(0);
                header.set_entry_type(*kind);
                builder.append_link(&mut header, name, target).unwrap();
            }
        }
    }
    builder.into_inner().unwrap().finish().unwrap();
}

/// The hostile variants: (asset replaced, its entries, the end of the expected error).
fn cases() -> Vec<(&'static str, &'static str, Vec<Entry>, String)> {
    vec![
        (
            "parent path",
            ADDON,
            vec![Entry::File("cni/Chart.yaml", 10), Entry::RawName(b"../escaped")],
            "entry \"../escaped\" refers to a parent directory".into(),
        ),
        (
            "absolute path",
            ADDON,
            vec![Entry::RawName(b"/etc/cron.d/x")],
            "entry \"/etc/cron.d/x\" has an absolute path".into(),
        ),
        (
            "symlink",
            ADDON,
            vec![Entry::Link(
                tar::EntryType::Symlink,
                "cni/values.yaml",
                "/etc/passwd",
            )],
            "entry \"cni/values.yaml\" is a link, which a release archive may not hold".into(),
        ),
        (
            "hard link",
            ADDON,
            vec![Entry::Link(
                tar::EntryType::Link,
                "cni/values.yaml",
                "cni/Chart.yaml",
            )],
            "entry \"cni/values.yaml\" is a link, which a release archive may not hold".into(),
        ),
        (
            "one huge file",
            ADDON,
            vec![Entry::File("cni/big.yaml", 6 * MIB)],
            format!("entry \"cni/big.yaml\" is larger than {} bytes", 5 * MIB),
        ),
        (
            "many large files",
            ADDON,
            (0..26)
                .map(|i| Entry::File(Box::leak(format!("cni/f{i}").into_boxed_str()), 4 * MIB))
                .collect(),
            format!("decompressed archive is larger than {} bytes", 100 * MIB),
        ),
    ]
}

fn example_release(dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("stacks/example");
    let out = dir.join("docker-example-1-30-v1");
    build(&source, &Version::parse("v1").unwrap(), &out).unwrap();
    out
}

#[test]
fn hostile_addon_archives_are_refused_on_load() {
    let tmp = tempfile::tempdir().unwrap();
    let release = example_release(tmp.path());
    for (what, asset, entries, expected) in cases() {
        let archive = release.join(asset);
        hostile_tgz(&archive, &entries);
        let err = Release::load(&release).unwrap_err().to_string();
        assert_eq!(err, format!("{}: {expected}", archive.display()), "{what}");
    }
}

/// A hostile ClusterClass chart is refused by the chart loader when it is rendered.
#[test]
fn hostile_cluster_class_chart_is_refused_on_render() {
    let tmp = tempfile::tempdir().unwrap();
    let release = example_release(tmp.path());
    let archive = release.join(CLASS);
    for (entries, expected) in [
        (
            vec![Entry::File("c/Chart.yaml", 10), Entry::RawName(b"c/../../x")],
            "chart illegally references parent directory",
        ),
        // Helm drops an entry's first path element (the chart directory): `c//etc/x` is the
        // chart file `/etc/x`.
        (
            vec![Entry::File("c/Chart.yaml", 10), Entry::RawName(b"c//etc/x")],
            "chart illegally contains absolute paths",
        ),
        (
            vec![Entry::File("c/big.yaml", 6 * MIB)],
            "decompressed chart file \"c/big.yaml\" is larger than the maximum file size",
        ),
    ] {
        hostile_tgz(&archive, &entries);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_capstan"))
            .args([
                "render",
                release.to_str().unwrap(),
                "--cluster",
                "testdata/cluster.yaml",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            err.contains(&format!("cluster-class chart {}", archive.display())) && err.contains(expected),
            "{expected}: {err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_release_pulled_and_rendered_leaves_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let gh = FakeGitHub::start().await;
    let mut expected_errors = Vec::new();
    for (i, (_, asset, entries, expected)) in cases().into_iter().enumerate() {
        let dir = tmp.path().join(format!("r{i}"));
        let release = example_release(&dir);
        hostile_tgz(&release.join(asset), &entries);
        // Each variant as its own repository (one tag, many repositories).
        gh.add_release_dir(&format!("evil/r{i}"), &release).unwrap();
        expected_errors.push((format!("evil/r{i}"), expected));
    }
    let cache = tmp.path().join("cache");
    let scratch = tmp.path().join("tmpdir");
    std::fs::create_dir_all(&scratch).unwrap();
    let base = gh.base_url();
    let (cache2, scratch2) = (cache.clone(), scratch.clone());
    tokio::task::spawn_blocking(move || {
        for (repo, expected) in &expected_errors {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_capstan"))
                .args([
                    "render",
                    &format!("{repo}@docker-example-1-30-v1"),
                    "--cluster",
                    "testdata/cluster.yaml",
                ])
                .args(["--github-url", &base, "--cache", cache2.to_str().unwrap()])
                .env("TMPDIR", &scratch2)
                .env_remove("GITHUB_TOKEN")
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{repo}");
            assert!(err.contains(&format!("{ADDON}: {expected}")), "{repo}: {err}");
            // Nothing extracted or half-written: the scratch copy is gone.
            assert_eq!(
                std::fs::read_dir(&scratch2).unwrap().count(),
                0,
                "{repo}: leftovers in TMPDIR"
            );
        }
    })
    .await
    .unwrap();
    // The cache holds the releases as published (verified), no temp files, no extracted trees.
    let c = capstan_source::cache::Cache::open(&cache).unwrap();
    assert_eq!(c.releases().unwrap().len(), cases().len());
    for key in c.releases().unwrap() {
        let m = c.release(&key).unwrap().unwrap();
        c.verify_release(&m).unwrap();
    }
    assert_eq!(std::fs::read_dir(cache.join("tmp")).unwrap().count(), 0);
    let mut top: Vec<String> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    top.sort();
    assert_eq!(top, ["blobs", "locks", "releases", "state", "tmp"]);
}
