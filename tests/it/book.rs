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
