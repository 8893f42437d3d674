//! The book (`docs/book`, issue 49): its generated reference pages are what `capstan docs`
//! writes today (`UPDATE_BOOK=1` rewrites them), and it builds with the pinned mdBook without a
//! warning, every internal link and anchor of the built HTML resolving.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use capstan_testenv::skip_or_fail;

/// The mdBook version `scripts/install-test-deps.sh` installs.
const MDBOOK_VERSION: &str = "0.4.52";

fn book_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/book")
}

fn markdown_files(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

#[test]
fn generated_references_are_up_to_date() {
    let fresh = tempfile::tempdir().unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_capstan"))
        .args(["docs", "--dir"])
        .arg(fresh.path())
        .status()
        .unwrap();
    assert!(status.success(), "capstan docs failed");
    let generated = markdown_files(fresh.path());
    let committed_dir = book_dir().join("src/reference");
    if std::env::var_os("UPDATE_BOOK").is_some() {
        for (name, text) in &generated {
            std::fs::write(committed_dir.join(name), text).unwrap();
        }
        eprintln!(
            "UPDATE_BOOK: rewrote {} pages in {}",
            generated.len(),
            committed_dir.display()
        );
        return;
    }
    let committed = markdown_files(&committed_dir);
    assert_eq!(
        committed.keys().collect::<Vec<_>>(),
        generated.keys().collect::<Vec<_>>(),
        "the reference pages in {} are not the generated ones; run `UPDATE_BOOK=1 cargo nextest run --test it book::`",
        committed_dir.display()
    );
    for (name, text) in &generated {
        assert!(
            committed[name] == *text,
            "docs/book/src/reference/{name} is out of date (the CLI, CRDs or metrics changed): \
             run `UPDATE_BOOK=1 cargo nextest run --test it book::generated_references_are_up_to_date` and commit it"
        );
    }
}

/// mdBook: `CAPSTAN_MDBOOK` (scripts/test.sh sets it), else where the install script caches it,
/// else `mdbook` on `PATH`.
fn mdbook() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CAPSTAN_MDBOOK") {
        return Some(PathBuf::from(path));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))?;
    let cached = cache.join(format!("capstan/mdbook/{MDBOOK_VERSION}/bin/mdbook"));
    if cached.exists() {
        return Some(cached);
    }
    Command::new("mdbook")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| PathBuf::from("mdbook"))
}

#[test]
fn the_book_builds_cleanly_and_its_links_resolve() {
    let test = "book::the_book_builds_cleanly_and_its_links_resolve";
    let Some(mdbook) = mdbook() else {
        skip_or_fail(test, "no mdbook (scripts/install-test-deps.sh installs it)");
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(&mdbook)
        .arg("build")
        .arg(book_dir())
        .arg("--dest-dir")
        .arg(out.path())
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", mdbook.display()));
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "mdbook build failed:\n{log}");
    let complaints: Vec<&str> = log
        .lines()
        .filter(|l| {
            l.contains("[WARN]") || l.contains("[ERROR]") || l.contains(" WARN ") || l.contains(" ERROR ")
        })
        .collect();
    assert!(
        complaints.is_empty(),
        "mdbook build warned:\n{}",
        complaints.join("\n")
    );
    let broken = broken_links(out.path());
    assert!(
        broken.is_empty(),
        "broken links in the book:\n{}",
        broken.join("\n")
    );
}

/// Every internal link (`href`, `src`) of the HTML pages under `site` whose file or anchor
/// (`id`) does not exist, as `page: link`. External links (with a scheme) are not followed;
/// mdBook's `print.html` and `404.html` repeat or invent links and are skipped.
fn broken_links(site: &Path) -> Vec<String> {
    let pages = html_pages(site);
    let ids: BTreeMap<&PathBuf, BTreeSet<String>> = pages
        .iter()
        .map(|(path, html)| (path, attribute_values(html, "id").into_iter().collect()))
        .collect();
    let mut broken = Vec::new();
    for (page, html) in &pages {
        let name = page.file_name().unwrap().to_string_lossy();
        if name == "print.html" || name == "404.html" {
            continue;
        }
        // Relative links resolve against `<base href>` where a page has one.
        let dir = page.parent().unwrap();
        let base = html
            .split_once("<base href=\"")
            .and_then(|(_, rest)| rest.split_once('"'))
            .map_or_else(|| dir.to_path_buf(), |(b, _)| dir.join(b));
        for link in attribute_values(html, "href")
            .into_iter()
            .chain(attribute_values(html, "src"))
        {
            if link.contains(':') || link.starts_with("//") {
                continue;
            }
            let (path, fragment) = link.split_once('#').unwrap_or((&link, ""));
            let path = path.split('?').next().unwrap_or_default();
            let target = if path.is_empty() {
                page.clone()
            } else {
                normalize(&base.join(path))
            };
            let target = if target.is_dir() {
                target.join("index.html")
            } else {
                target
            };
            let ok = if !target.exists() {
                false
            } else if fragment.is_empty() || target.extension().is_none_or(|e| e != "html") {
                true
            } else {
                ids.get(&target).is_some_and(|ids| ids.contains(fragment))
            };
            if !ok {
                broken.push(format!(
                    "{}: {link}",
                    page.strip_prefix(site).unwrap_or(page).display()
                ));
            }
        }
    }
    broken
}

fn html_pages(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut pages = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                let html = std::fs::read_to_string(&path).unwrap();
                pages.insert(normalize(&path), html);
            }
        }
    }
    pages
}

/// `path` without `.` and `..` components (the file need not exist).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The values of every `name="…"` attribute in `html`, in order (mdBook quotes with `"`).
fn attribute_values(html: &str, name: &str) -> Vec<String> {
    let needle = format!(" {name}=\"");
    html.match_indices(&needle)
        .filter_map(|(at, _)| {
            let rest = &html[at + needle.len()..];
            rest.find('"').map(|end| rest[..end].replace("&amp;", "&"))
        })
        .collect()
}

#[test]
fn the_link_check_finds_missing_pages_and_anchors() {
    let site = tempfile::tempdir().unwrap();
    let write = |name: &str, html: &str| {
        let path = site.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, html).unwrap();
    };
    write(
        "index.html",
        r##"<h1 id="top">x</h1> <a href="sub/page.html#here">ok</a> <a href="#top">ok</a>
        <a href="https://example.com/x#y">external</a> <a href="missing.html">broken</a>
        <a href="sub/page.html#nowhere">broken</a> <img src="sub/pic.png">"##,
    );
    write(
        "sub/page.html",
        r##"<h2 id="here">y</h2> <a href="../index.html#top">ok</a> <a href="#gone">broken</a>"##,
    );
    assert_eq!(
        broken_links(site.path()),
        [
            "index.html: missing.html",
            "index.html: sub/page.html#nowhere",
            "index.html: sub/pic.png",
            "sub/page.html: #gone"
        ]
    );
}

/// Words in the operator's code that look like reasons but are not: kinds, printer columns,
/// Event actions, label-selector operators, hook names, `Debug` names. A new reason or
/// condition in the code must be on the Troubleshooting page, or (if it is none) listed here.
const NOT_REASONS: &[&str] = &[
    // Cluster API's own condition types the health rule reads
    "Available",
    "RollingOut",
    // kinds and types
    "ClusterStack",
    "ClusterStackRelease",
    "ClusterAddon",
    "ClusterStackRollout",
    "ClusterClass",
    "Cluster",
    "ConfigMap",
    "Secret",
    "DaemonSet",
    "StatefulSet",
    "MachineDeployment",
    "MachinePool",
    "ReplicaSet",
    "CronJob",
    "KubeadmControlPlane",
    "DockerCluster",
    "FlowSchema",
    "PodSecurityPolicy",
    "PartialObjectMetadata",
    "ControlPlane",
    "InfraCluster",
    "Template",
    "DiscoveryResponse",
    "ClusterAddonStatus",
    "ClusterStackStatus",
    "ClusterStackReleaseStatus",
    "ClusterStackRolloutStatus",
    "String",
    "PartialEq",
    "PascalCase",
    // printer columns
    "Age",
    "Hook",
    "Reason",
    "Message",
    "Provider",
    "Channel",
    "Autosubscribe",
    "Usable",
    "Latest",
    "Stack",
    "Target",
    "Phase",
    "Wave",
    // Event actions
    "Reconcile",
    "Subscribe",
    "Unsubscribe",
    "Provide",
    "Render",
    "Delete",
    "Verify",
    "Apply",
    "Wait",
    "Observe",
    "Rollout",
    // label selector operators, Event types, condition statuses
    "In",
    "NotIn",
    "Exists",
    "DoesNotExist",
    "Normal",
    "Warning",
    "True",
    "False",
    "Unknown",
    // Cluster API's hook names (the Runtime SDK's, not reasons)
    "BeforeClusterUpgrade",
    "AfterControlPlaneInitialized",
    // `Debug` and work-queue names
    "Fleet",
    "GeneratedCert",
    "CertResolver",
    "Clusters",
    "ClusterAddons",
];

/// The PascalCase string literals (`"NoRelease"`) of the non-test code of the `.rs` files
/// under `dir`: code up to a file's first `#[cfg(test)]`, files of tests (`*tests.rs`,
/// `*_props.rs`) skipped, comments ignored. `arms_only` keeps literals of match arms (`=> "X"`).
fn pascal_case_literals(dir: &Path, arms_only: bool) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                todo.push(path);
                continue;
            }
            if !name.ends_with(".rs") || name.ends_with("tests.rs") || name.ends_with("_props.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for line in code.lines() {
                let line = line.trim_start();
                if line.starts_with("//") {
                    continue;
                }
                let line = if arms_only {
                    match line.split_once("=> ") {
                        Some((_, arm)) => arm,
                        None => continue,
                    }
                } else {
                    line
                };
                for (i, piece) in line.split('"').enumerate() {
                    let pascal = piece.len() > 1
                        && piece.starts_with(|c: char| c.is_ascii_uppercase())
                        && piece[1..].starts_with(|c: char| c.is_ascii_lowercase())
                        && piece.chars().all(|c| c.is_ascii_alphanumeric());
                    // Odd pieces are inside quotes.
                    if i % 2 == 1 && pascal {
                        found.insert(piece.to_string());
                        if arms_only {
                            break;
                        }
                    }
                }
            }
        }
    }
    found
}

/// The variants of `pub enum NAME` in `file` (serialized as written: PascalCase).
fn enum_variants(file: &Path, name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let start = text
        .find(&format!("pub enum {name} {{"))
        .unwrap_or_else(|| panic!("no enum {name} in {}", file.display()));
    let body = &text[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
    body.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.starts_with('#') && !l.is_empty())
        .map(|l| l.trim_end_matches(',').to_string())
        .collect()
}

/// Troubleshooting names every condition type and reason the operator writes and every Event
/// reason it sends: the PascalCase literals of its code (less [`NOT_REASONS`]), the rollout's
/// phases (its conditions' reasons), and the verification refusals' reasons of
/// `capstan-source`.
#[test]
fn troubleshooting_names_every_reason_and_condition() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let operator = root.join("crates/capstan-operator/src");
    let mut reasons = pascal_case_literals(&operator, false);
    reasons.extend(enum_variants(&operator.join("api/rollout.rs"), "RolloutPhase"));
    reasons.extend(pascal_case_literals(
        &root.join("crates/capstan-source/src/verify"),
        true,
    ));
    for word in NOT_REASONS {
        reasons.remove(*word);
    }
    assert!(
        reasons.len() > 100,
        "the scan found only {} reasons: {reasons:?}",
        reasons.len()
    );
    let page = std::fs::read_to_string(book_dir().join("src/troubleshooting.md")).unwrap();
    let missing: Vec<&String> = reasons
        .iter()
        .filter(|r| !page.contains(&format!("`{r}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/book/src/troubleshooting.md does not name these reasons or conditions of the code \
         (say what each means and what to do, or add a word that is none to NOT_REASONS): {missing:?}"
    );
}

#[test]
fn the_reason_scan_reads_code_not_tests_or_comments() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a.rs"),
        "const R: &str = \"NoRelease\";\n// \"InComment\"\nmatch x { A => \"WrongKey\", B => \"x\" }\n\
         #[cfg(test)]\nmod tests { const T: &str = \"OnlyInTests\"; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("plan_tests.rs"),
        "const T: &str = \"TestFile\";\n",
    )
    .unwrap();
    let all: Vec<String> = pascal_case_literals(dir.path(), false).into_iter().collect();
    assert_eq!(all, ["NoRelease", "WrongKey"]);
    let arms: Vec<String> = pascal_case_literals(dir.path(), true).into_iter().collect();
    assert_eq!(arms, ["WrongKey"]);
}

/// The fenced code blocks of `page` whose info string is `lang`, in order.
fn code_blocks(page: &str, lang: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in page.lines() {
        let fence = line.trim_start().starts_with("```");
        match (&mut current, fence) {
            (None, true) if line.trim_start().trim_start_matches('`') == lang => {
                current = Some(String::new());
            }
            (Some(block), true) => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), false) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// The Helm compatibility page's example is `testdata/book/helm-compat`: the page's template
/// lines are the chart's, and what it shows is what capstan prints — and real Helm, when the
/// oracle is there.
#[test]
fn the_helm_compatibility_example_renders_as_the_page_says() {
    let test = "book::the_helm_compatibility_example_renders_as_the_page_says";
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let chart = root.join("testdata/book/helm-compat");
    let page = std::fs::read_to_string(book_dir().join("src/helm-compatibility.md")).unwrap();
    let blocks = code_blocks(&page, "yaml");
    let (template, output) = (&blocks[0], &blocks[1]);
    let chart_template = std::fs::read_to_string(chart.join("templates/cm.yaml")).unwrap();
    for line in template.lines() {
        let line = line.split("  # ").next().unwrap_or_default().trim_end();
        assert!(
            chart_template.lines().any(|l| l == line),
            "the page's template line {line:?} is not in {}",
            chart.display()
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_capstan"))
        .arg("render")
        .arg(&chart)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ours = String::from_utf8(out.stdout).unwrap();
    for line in output.lines() {
        assert!(
            ours.lines().any(|l| l == line),
            "the page shows {line:?}; capstan printed:\n{ours}"
        );
    }
    let (Some(python), Some(oracle)) = (
        capstan_testenv::shared::oracle_python(),
        capstan_testenv::shared_path("tools/helm_oracle.py"),
    ) else {
        skip_or_fail(test, "no Helm oracle (scripts/oracle-env.sh, ../shared/tools)");
        return;
    };
    let helm = Command::new(python)
        .arg(oracle)
        .arg(&chart)
        .arg("--stream")
        .output()
        .unwrap();
    let answer: serde_json::Value = serde_json::from_slice(&helm.stdout).unwrap();
    let manifest = answer["manifest"]
        .as_str()
        .unwrap_or_else(|| panic!("Helm refused the chart: {answer}"));
    assert_eq!(manifest.trim_end(), ours.trim_end(), "Helm and capstan differ");
}

/// How a command shown in the README or Getting started is checked.
#[derive(Clone, Copy, Debug)]
enum Check {
    /// Run with this build as `capstan` (also for `cargo run --release --`), in the
    /// repository; the output the page shows after it must be in what it prints.
    Run,
    /// Run as [`Check::Run`], against the tests' fake GitHub serving the shared releases as
    /// `scs/cluster-stacks` (`--github-url`).
    RunOnFakeGitHub,
    /// Not run, for this reason, which the page says.
    NotRun(&'static str),
}

/// Every command the README and Getting started show, by its first words.
const COMMANDS: &[(&str, Check)] = &[
    ("cargo run --release -- render stacks/example", Check::Run),
    ("capstan render stacks/example", Check::Run),
    ("capstan rollout plan", Check::Run),
    ("capstan releases list scs/cluster-stacks", Check::RunOnFakeGitHub),
    (
        "./scripts/test.sh",
        Check::NotRun("which is the test suite itself"),
    ),
    (
        "capstan releases pull oci://registry.scs.community",
        Check::NotRun("which needs the internet"),
    ),
    ("capstan install", Check::NotRun("need a management cluster")),
    ("capstan get", Check::NotRun("need a management cluster")),
    (
        "capstan rollout status",
        Check::NotRun("need a management cluster"),
    ),
    (
        "capstan rollout approve",
        Check::NotRun("need a management cluster"),
    ),
    ("kubectl", Check::NotRun("need a management cluster")),
    ("kind", Check::NotRun("has no container runtime")),
    ("clusterctl", Check::NotRun("has no container runtime")),
    ("export", Check::NotRun("has no container runtime")),
];

/// The commands of the `sh` blocks of `page`, each with the output block shown after its
/// block (if the next block is not a command block): continued lines joined, comments and
/// here-documents left out.
fn page_commands(page: &str) -> Vec<(String, Option<String>)> {
    let mut commands = Vec::new();
    let mut lines = page.lines().peekable();
    let mut pending: Vec<String> = Vec::new();
    while let Some(line) = lines.next() {
        let Some(lang) = line.trim_start().strip_prefix("```") else {
            continue;
        };
        let mut body = Vec::new();
        for inner in lines.by_ref() {
            if inner.trim_start().starts_with("```") {
                break;
            }
            body.push(inner);
        }
        if lang != "sh" {
            let shown = body.join("\n");
            for command in pending.drain(..) {
                commands.push((command, Some(shown.clone())));
            }
            continue;
        }
        for command in pending.drain(..) {
            commands.push((command, None));
        }
        let mut heredoc: Option<&str> = None;
        let mut joined = String::new();
        for line in body {
            if let Some(end) = heredoc {
                if line.trim() == end {
                    heredoc = None;
                }
                continue;
            }
            let code = line.split("  #").next().unwrap_or_default().trim();
            if code.is_empty() || code.starts_with('#') {
                continue;
            }
            if let Some((_, tag)) = code.split_once("<<'") {
                heredoc = tag.split_once('\'').map(|(t, _)| t);
            }
            joined.push_str(code.trim_end_matches('\\').trim_end());
            if code.ends_with('\\') || code.ends_with('|') {
                joined.push(' ');
                continue;
            }
            pending.push(std::mem::take(&mut joined));
        }
    }
    commands.extend(pending.into_iter().map(|c| (c, None)));
    commands
}

/// The lines of a shown output to find in what the command printed: a YAML stream's
/// `# Source:` headers (its documents are abbreviated), every line of other output.
fn lines_to_find(shown: &str) -> Vec<&str> {
    let sources: Vec<&str> = shown.lines().filter(|l| l.starts_with("# Source:")).collect();
    if !sources.is_empty() {
        return sources;
    }
    shown.lines().filter(|l| !l.trim().is_empty()).collect()
}

fn run_shown(command: &str, extra: &[String]) -> String {
    let words: Vec<&str> = command.split_whitespace().collect();
    assert!(
        !command.contains(['\'', '"', '|', '<', '>', '$']),
        "{command:?}: a command the test runs takes plain words"
    );
    let args = match words.as_slice() {
        ["cargo", "run", "--release", "--", rest @ ..] => rest,
        ["capstan", rest @ ..] => rest,
        _ => panic!("{command:?} is not a capstan command"),
    };
    let out = Command::new(env!("CARGO_BIN_EXE_capstan"))
        .args(args)
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Every command the README and Getting started show either runs here and prints what the
/// page shows after it, or is one the page says it cannot run (and why).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_and_getting_started_commands_run() {
    let test = "book::the_readme_and_getting_started_commands_run";
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let github = capstan_testenv::fake_github::FakeGitHub::start().await;
    let releases = capstan_testenv::shared_path("cluster-stack-releases");
    if let Some(releases) = &releases {
        github.add_repo("scs/cluster-stacks");
        for entry in std::fs::read_dir(releases).unwrap() {
            github
                .add_release_dir("scs/cluster-stacks", &entry.unwrap().path())
                .unwrap();
        }
    }
    let cache = tempfile::tempdir().unwrap();
    let github_flags = vec![
        "--github-url".to_string(),
        github.base_url(),
        "--cache".to_string(),
        cache.path().display().to_string(),
    ];
    let mut ran = 0;
    for page in [root.join("README.md"), book_dir().join("src/getting-started.md")] {
        let text = std::fs::read_to_string(&page).unwrap();
        let commands = page_commands(&text);
        assert!(!commands.is_empty(), "no commands in {}", page.display());
        for (command, shown) in commands {
            let check = COMMANDS
                .iter()
                .find(|(prefix, _)| command.starts_with(prefix))
                .map(|(_, check)| *check)
                .unwrap_or_else(|| {
                    panic!(
                        "{}: the test does not know the command {command:?}: add it to COMMANDS (run, or not run with the reason the page gives)",
                        page.display()
                    )
                });
            let extra = match check {
                Check::NotRun(reason) => {
                    assert!(
                        text.contains(reason),
                        "{} shows {command:?} but does not say why the tests do not run it ({reason:?})",
                        page.display()
                    );
                    continue;
                }
                Check::RunOnFakeGitHub if releases.is_none() => {
                    skip_or_fail(test, "../shared/cluster-stack-releases missing (CAPSTAN_SHARED)");
                    continue;
                }
                Check::RunOnFakeGitHub => github_flags.clone(),
                Check::Run => Vec::new(),
            };
            let printed = {
                let command = command.clone();
                tokio::task::spawn_blocking(move || run_shown(&command, &extra))
                    .await
                    .unwrap()
            };
            ran += 1;
            for line in shown.as_deref().map(lines_to_find).unwrap_or_default() {
                assert!(
                    printed.lines().any(|l| l.trim_end() == line.trim_end()),
                    "{}: {command:?} did not print the line the page shows, {line:?}; it printed:\n{printed}",
                    page.display()
                );
            }
        }
    }
    assert!(ran >= 5, "only {ran} commands ran");
}

#[test]
fn page_commands_join_lines_and_skip_comments_and_here_documents() {
    let page = "text\n```sh\ncapstan a \\\n  b   # comment\n# only a comment\nkubectl apply -f - <<'YAML'\nkind: X\nYAML\ncapstan c\n```\n\n```text\nout\n```\n";
    assert_eq!(
        page_commands(page),
        [
            ("capstan a b".to_string(), Some("out".to_string())),
            ("kubectl apply -f - <<'YAML'".to_string(), Some("out".to_string())),
            ("capstan c".to_string(), Some("out".to_string())),
        ]
    );
}

/// The README is not part of the built book, so its links are checked here: every relative
/// link (`[text](path#anchor)`) names a file of the repository.
#[test]
fn the_readme_links_resolve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let targets: Vec<&str> = readme
        .match_indices("](")
        .filter_map(|(at, _)| readme[at + 2..].split_once(')').map(|(t, _)| t))
        .filter(|t| !t.contains(':'))
        .collect();
    assert!(targets.len() > 10, "links found: {targets:?}");
    let missing: Vec<&&str> = targets
        .iter()
        .filter(|t| !root.join(t.split('#').next().unwrap_or_default()).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "README.md links to missing files: {missing:?}"
    );
}

/// The objects Getting started applies in steps 2 and 3 (its here-documents: the
/// ClusterStack, the Cluster, the ClusterStackRollout) are checked offline: `capstan rollout
/// plan` reads the rollout and the stack strictly (a misspelt field is refused) and must put
/// the page's Cluster into the canary wave, as the page's step 3 means.
#[test]
fn the_getting_started_objects_plan_as_the_page_says() {
    let page = std::fs::read_to_string(book_dir().join("src/getting-started.md")).unwrap();
    let docs: Vec<&str> = page
        .split("<<'YAML'\n")
        .skip(1)
        .filter_map(|rest| rest.split_once("\nYAML\n").map(|(doc, _)| doc))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file_of = |kind: &str| {
        let doc = docs
            .iter()
            .find(|d| d.lines().any(|l| l == format!("kind: {kind}")))
            .unwrap_or_else(|| panic!("Getting started applies no {kind}"));
        let path = dir.path().join(format!("{kind}.yaml"));
        std::fs::write(&path, doc).unwrap();
        path
    };
    let out = Command::new(env!("CARGO_BIN_EXE_capstan"))
        .args(["rollout", "plan", "-f"])
        .arg(file_of("ClusterStackRollout"))
        .arg("--clusters")
        .arg(file_of("Cluster"))
        .arg("--stack-file")
        .arg(file_of("ClusterStack"))
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        printed
            .lines()
            .any(|l| l.split_whitespace().eq(["canary", "cluster/first"])),
        "the page's Cluster is not in the canary wave:\n{printed}"
    );
}
