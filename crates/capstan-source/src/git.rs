//! git source: a subscription to a repository URL and a ref (branch, tag, or commit id),
//! optionally a stack source directory inside it. Each fetch resolves the ref to a commit,
//! writes the commit's tree (no worktree machinery, no checkout of anything else) into a
//! scratch directory, and builds it with [`stack::build`](capstan_stack::build) at csctl's hash
//! version `v0-sha.<content hash>`; the built release is stored in the [`Cache`] like a pulled
//! one (blobs first, manifest last) under `git/<url>/<tag>`. A commit that changes the stack's
//! content yields a new release; one that does not yields the same (the content decides).
//!
//! Fetches go into a bare mirror in the cache (`git/<sha256(url)[..16]>`, under a lock), so a
//! re-poll transfers only new objects. A mirror a crash left unusable is discarded and fetched
//! anew. Spelling of a subscription: [`GitSpec::parse`] reads `URL#REF[:PATH]`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use sha2::{Digest, Sha256};

use capstan_stack::build::{self, BuildError};

use super::cache::{Cache, CacheError, ReleaseManifest};
use super::local::{self, LocalError};

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error(
        "git source {spec:?}: {problem} (expected URL#REF[:PATH], e.g. https://github.com/org/stacks#main:providers/docker/scs)"
    )]
    Spec { spec: String, problem: String },
    #[error("git {url}: {message}")]
    Git { url: String, message: String },
    #[error("git {url}: no branch or tag {reference:?}; it has: {available}")]
    UnknownRef {
        url: String,
        reference: String,
        available: String,
    },
    #[error("git {url} {reference} (commit {commit}): {message}")]
    Tree {
        url: String,
        reference: String,
        commit: String,
        message: String,
    },
    #[error("git {url} {reference} (commit {commit}): {source}")]
    Build {
        url: String,
        reference: String,
        commit: String,
        #[source]
        source: Box<BuildError>,
    },
    #[error("git {url}: {source}")]
    Cache {
        url: String,
        #[source]
        source: CacheError,
    },
    #[error(transparent)]
    Local(Box<LocalError>),
}

impl From<LocalError> for GitError {
    fn from(e: LocalError) -> GitError {
        GitError::Local(Box::new(e))
    }
}

/// What to follow: a repository, a ref in it, and where the stack source is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitSpec {
    /// Any URL gix fetches from: `git://`, `https://`, `file://`, a local path.
    pub url: String,
    /// A branch, a tag, a full ref name (`refs/heads/main`), or a commit id (40 hex digits, or
    /// an unambiguous prefix of at least 4).
    pub reference: String,
    /// The stack source directory inside the repository (`providers/docker/scs`); the root
    /// when empty.
    pub path: String,
}

impl GitSpec {
    /// `URL#REF[:PATH]`. `:` cannot occur in a git ref name, so the first `:` after `#`
    /// starts the path.
    pub fn parse(spec: &str) -> Result<GitSpec, GitError> {
        let fail = |problem: &str| GitError::Spec {
            spec: spec.to_string(),
            problem: problem.to_string(),
        };
        let (url, rest) = spec.rsplit_once('#').ok_or_else(|| fail("no #REF"))?;
        let (reference, path) = rest.split_once(':').unwrap_or((rest, ""));
        if url.is_empty() {
            return Err(fail("the URL is empty"));
        }
        if reference.is_empty() {
            return Err(fail("the ref after # is empty"));
        }
        let path = path.trim_matches('/');
        if path.split('/').any(|c| c == ".." || c == ".") {
            return Err(fail("the path may not contain . or .."));
        }
        Ok(GitSpec {
            url: url.to_string(),
            reference: reference.to_string(),
            path: path.to_string(),
        })
    }
}

impl std::fmt::Display for GitSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}#{}", self.url, self.reference)?;
        if !self.path.is_empty() {
            write!(f, ":{}", self.path)?;
        }
        Ok(())
    }
}

/// The release a fetch resolved to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitRelease {
    /// The commit the ref pointed at (hex).
    pub commit: String,
    /// The release tag, `<stack>-v0-sha-<hash>`.
    pub tag: String,
    pub manifest: ReleaseManifest,
    /// Whether this fetch built the release (false: it was in the cache already).
    pub built: bool,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The cache key prefix of a repository URL: `git/<host and path, sanitised>`.
pub fn url_key(url: &str) -> String {
    let bare = url.split_once("://").map_or(url, |(_, rest)| rest);
    let segments: Vec<String> = bare
        .split('/')
        .map(|s| {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                        c
                    } else {
                        '_'
                    }
                })
                .collect::<String>()
        })
        .filter(|s| !s.is_empty() && s != "." && s != "..")
        .collect();
    if segments.is_empty() {
        format!("git/{}", &hex(&Sha256::digest(url.as_bytes()))[..16])
    } else {
        format!("git/{}", segments.join("/"))
    }
}

/// Fetch `spec`, build the commit's stack source into a `v0-sha.<hash>` release and store it
/// in `cache` (nothing is built when that release is complete there already).
pub fn pull_git(cache: &Cache, spec: &GitSpec) -> Result<GitRelease, GitError> {
    let url = spec.url.clone();
    let cache_err = |source| GitError::Cache {
        url: url.clone(),
        source,
    };
    super::pull::clean_stale_temps(cache);
    let mirror_id = &hex(&Sha256::digest(spec.url.as_bytes()))[..16];
    let mirror = cache.root().join("git").join(mirror_id);
    let checkout = local::scratch_dir()?;
    let result = (|| {
        let commit = {
            let _lock = cache
                .lock_release(&format!("git-mirror/{mirror_id}"))
                .map_err(cache_err)?;
            let repo = fetch_into_mirror(&mirror, spec)?;
            let commit = resolve(&repo, spec)?;
            write_tree(&repo, spec, &commit, &checkout)?;
            commit
        };
        build_and_store(cache, spec, &commit, &checkout)
    })();
    let _ = std::fs::remove_dir_all(&checkout);
    result
}

fn git_err(url: &str) -> impl Fn(String) -> GitError + '_ {
    move |message| GitError::Git {
        url: url.to_string(),
        message,
    }
}

/// Opens (or creates) the bare mirror and fetches every branch and tag into it. A mirror
/// that cannot be opened or fetched into (a crash mid-fetch) is recreated once.
fn fetch_into_mirror(mirror: &Path, spec: &GitSpec) -> Result<gix::Repository, GitError> {
    let existed = mirror.join("HEAD").is_file();
    match try_fetch(mirror, spec) {
        Ok(repo) => Ok(repo),
        // A first fetch that fails (a bad URL, a server down) has no mirror to blame: drop
        // the empty one it made, so the next attempt is a first fetch again.
        Err(e) if !existed => {
            let _ = std::fs::remove_dir_all(mirror);
            Err(e)
        }
        Err(first) => {
            tracing::warn!(url = %spec.url, error = %first, "discarding the git mirror and fetching anew");
            std::fs::remove_dir_all(mirror)
                .map_err(|e| git_err(&spec.url)(format!("removing {}: {e}", mirror.display())))?;
            try_fetch(mirror, spec)
        }
    }
}

fn try_fetch(mirror: &Path, spec: &GitSpec) -> Result<gix::Repository, GitError> {
    let err = git_err(&spec.url);
    let repo = if mirror.join("HEAD").is_file() {
        gix::open(mirror).map_err(|e| err(format!("opening the mirror {}: {e}", mirror.display())))?
    } else {
        std::fs::create_dir_all(mirror).map_err(|e| err(format!("creating {}: {e}", mirror.display())))?;
        gix::init_bare(mirror).map_err(|e| err(format!("creating the mirror {}: {e}", mirror.display())))?
    };
    let remote = repo
        .remote_at(spec.url.as_str())
        .map_err(|e| err(format!("not a git URL: {e}")))?
        .with_fetch_tags(gix::remote::fetch::Tags::None)
        .with_refspecs(
            ["+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"],
            gix::remote::Direction::Fetch,
        )
        .map_err(|e| err(e.to_string()))?;
    let interrupt = AtomicBool::new(false);
    remote
        .connect(gix::remote::Direction::Fetch)
        .map_err(|e| err(format!("connecting: {e}")))?
        .prepare_fetch(gix::progress::Discard, Default::default())
        .map_err(|e| err(format!("listing refs: {e}")))?
        .receive(gix::progress::Discard, &interrupt)
        .map_err(|e| err(format!("fetching: {e}")))?;
    Ok(repo)
}

/// The commit `spec.reference` names in the mirror.
fn resolve(repo: &gix::Repository, spec: &GitSpec) -> Result<String, GitError> {
    let err = git_err(&spec.url);
    let r = &spec.reference;
    if r.len() == 40
        && let Ok(id) = gix::ObjectId::from_hex(r.as_bytes())
    {
        let commit = repo
            .find_commit(id)
            .map_err(|e| err(format!("commit {r}: {e}")))?;
        return Ok(commit.id.to_string());
    }
    let candidates = if r.starts_with("refs/") {
        vec![r.clone()]
    } else {
        vec![format!("refs/remotes/origin/{r}"), format!("refs/tags/{r}")]
    };
    for name in &candidates {
        let found = repo
            .try_find_reference(name.as_str())
            .map_err(|e| err(format!("reading {name}: {e}")))?;
        if let Some(mut reference) = found {
            let commit = reference
                .peel_to_commit()
                .map_err(|e| err(format!("{name} does not name a commit: {e}")))?;
            return Ok(commit.id.to_string());
        }
    }
    if let Some(commit) = resolve_short_id(repo, spec)? {
        return Ok(commit);
    }
    let mut available = Vec::new();
    if let Ok(refs) = repo.references()
        && let Ok(all) = refs.all()
    {
        for reference in all.flatten() {
            let name = reference.name().as_bstr().to_string();
            if let Some(b) = name.strip_prefix("refs/remotes/origin/") {
                available.push(format!("branch {b}"));
            } else if let Some(t) = name.strip_prefix("refs/tags/") {
                available.push(format!("tag {t}"));
            }
        }
    }
    Err(GitError::UnknownRef {
        url: spec.url.clone(),
        reference: r.clone(),
        available: if available.is_empty() {
            "no branches or tags".into()
        } else {
            available.join(", ")
        },
    })
}

/// A commit id abbreviated like git accepts it (4 to 39 hex digits), when it names exactly
/// one commit of the mirror (`None`: not such a prefix, or no object has it). Branches and
/// tags of the same spelling win (they are tried first).
fn resolve_short_id(repo: &gix::Repository, spec: &GitSpec) -> Result<Option<String>, GitError> {
    let r = spec.reference.as_str();
    if !(4..40).contains(&r.len()) || !r.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(None);
    }
    let err = git_err(&spec.url);
    let prefix = gix::hash::Prefix::from_hex(&r.to_ascii_lowercase())
        .map_err(|e| err(format!("commit prefix {r}: {e}")))?;
    let mut candidates = std::collections::HashSet::new();
    let found = repo
        .objects
        .lookup_prefix(prefix, Some(&mut candidates))
        .map_err(|e| err(format!("looking up the commit prefix {r}: {e}")))?;
    if found.is_none() {
        return Ok(None);
    }
    let mut commits: Vec<String> = candidates
        .into_iter()
        .filter(|id| repo.find_commit(*id).is_ok())
        .map(|id| id.to_string())
        .collect();
    commits.sort();
    match commits.as_slice() {
        [one] => Ok(Some(one.clone())),
        [] => Err(err(format!(
            "{r} names no commit (an object of another kind has that prefix)"
        ))),
        many => Err(err(format!(
            "the commit prefix {r} is ambiguous: it matches {}; give more digits",
            many.join(", ")
        ))),
    }
}

/// Writes the tree of `commit` (below `spec.path`) into `dest`: regular and executable files
/// and directories; symlinks and submodules are refused (a stack source may not hold them).
fn write_tree(repo: &gix::Repository, spec: &GitSpec, commit: &str, dest: &Path) -> Result<(), GitError> {
    let fail = |message: String| GitError::Tree {
        url: spec.url.clone(),
        reference: spec.reference.clone(),
        commit: commit.to_string(),
        message,
    };
    let id = gix::ObjectId::from_hex(commit.as_bytes()).map_err(|e| fail(e.to_string()))?;
    let tree = repo
        .find_commit(id)
        .map_err(|e| fail(e.to_string()))?
        .tree()
        .map_err(|e| fail(e.to_string()))?;
    let root = if spec.path.is_empty() {
        tree.id
    } else {
        let entry = tree
            .lookup_entry_by_path(&spec.path)
            .map_err(|e| fail(e.to_string()))?
            .ok_or_else(|| fail(format!("has no directory {}", spec.path)))?;
        if !entry.mode().is_tree() {
            return Err(fail(format!("{} is not a directory", spec.path)));
        }
        entry.object_id()
    };
    write_dir(repo, root, dest, "", &fail)
}

fn write_dir(
    repo: &gix::Repository,
    tree: gix::ObjectId,
    dir: &Path,
    rel: &str,
    fail: &dyn Fn(String) -> GitError,
) -> Result<(), GitError> {
    std::fs::create_dir_all(dir).map_err(|e| fail(format!("creating {}: {e}", dir.display())))?;
    let object = repo.find_object(tree).map_err(|e| fail(e.to_string()))?;
    let tree = object.try_into_tree().map_err(|e| fail(e.to_string()))?;
    let decoded = tree.decode().map_err(|e| fail(e.to_string()))?;
    let entries: Vec<(String, gix::objs::tree::EntryMode, gix::ObjectId)> = decoded
        .entries
        .iter()
        .map(|e| (e.filename.to_string(), e.mode, e.oid.to_owned()))
        .collect();
    for (name, mode, oid) in entries {
        let path_rel = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
            return Err(fail(format!("tree entry {path_rel:?} has an illegal name")));
        }
        let path = dir.join(&name);
        if mode.is_tree() {
            write_dir(repo, oid, &path, &path_rel, fail)?;
        } else if mode.is_blob() {
            let blob = repo.find_object(oid).map_err(|e| fail(e.to_string()))?;
            std::fs::write(&path, &blob.data)
                .map_err(|e| fail(format!("writing {}: {e}", path.display())))?;
        } else if mode.is_link() {
            return Err(fail(format!(
                "{path_rel} is a symlink; a stack source may not contain links"
            )));
        } else {
            return Err(fail(format!(
                "{path_rel} is a submodule, which a stack source may not contain"
            )));
        }
    }
    Ok(())
}

fn build_and_store(
    cache: &Cache,
    spec: &GitSpec,
    commit: &str,
    source: &Path,
) -> Result<GitRelease, GitError> {
    let build_err = |source| GitError::Build {
        url: spec.url.clone(),
        reference: spec.reference.clone(),
        commit: commit.to_string(),
        source: Box::new(source),
    };
    let cache_err = |source| GitError::Cache {
        url: spec.url.clone(),
        source,
    };
    if !source.join(build::CSCTL_FILE).is_file() {
        // Named in the repository's terms: the scratch directory means nothing to the user.
        let place = if spec.path.is_empty() {
            "at the repository root".to_string()
        } else {
            format!("in {}", spec.path)
        };
        return Err(GitError::Tree {
            url: spec.url.clone(),
            reference: spec.reference.clone(),
            commit: commit.to_string(),
            message: format!(
                "no {} {place}: not a stack source tree (name the stack's directory as URL#REF:PATH)",
                build::CSCTL_FILE
            ),
        });
    }
    let version = build::hash_version(source).map_err(build_err)?;
    let tag = build::release_tag(source, &version).map_err(build_err)?.tag();
    let key = format!("{}/{tag}", url_key(&spec.url));
    if let Some(manifest) = cache.release_verified(&key).map_err(cache_err)? {
        return Ok(GitRelease {
            commit: commit.to_string(),
            tag,
            manifest,
            built: false,
        });
    }
    let _lock = cache.lock_release(&key).map_err(cache_err)?;
    if let Some(manifest) = cache.release_verified(&key).map_err(cache_err)? {
        return Ok(GitRelease {
            commit: commit.to_string(),
            tag,
            manifest,
            built: false,
        });
    }
    let scratch = local::scratch_dir()?;
    let out = scratch.join("release");
    let stored: Result<ReleaseManifest, GitError> = (|| {
        build::build(source, &version, &out).map_err(build_err)?;
        let mut files = BTreeMap::new();
        let mut names: Vec<PathBuf> = std::fs::read_dir(&out)
            .map_err(|e| {
                cache_err(CacheError::Io {
                    path: out.clone(),
                    source: e,
                })
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        names.sort();
        for path in names {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let file = std::fs::File::open(&path).map_err(|e| {
                cache_err(CacheError::Io {
                    path: path.clone(),
                    source: e,
                })
            })?;
            let stored = cache
                .put_blob(&name, file, &Default::default())
                .map_err(cache_err)?;
            files.insert(name, stored);
        }
        let manifest = ReleaseManifest {
            key: key.clone(),
            origin: format!("git {spec} (commit {commit})"),
            files,
        };
        cache.commit_release(&manifest).map_err(cache_err)?;
        Ok(manifest)
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(GitRelease {
        commit: commit.to_string(),
        tag,
        manifest: stored?,
        built: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_url_ref_and_path() {
        let s = GitSpec::parse("https://github.com/o/r.git#main:providers/docker/scs/").unwrap();
        assert_eq!(
            (s.url.as_str(), s.reference.as_str(), s.path.as_str()),
            ("https://github.com/o/r.git", "main", "providers/docker/scs")
        );
        assert_eq!(
            s.to_string(),
            "https://github.com/o/r.git#main:providers/docker/scs"
        );
        let s = GitSpec::parse("git://127.0.0.1:9418/r#v1.0").unwrap();
        assert_eq!((s.reference.as_str(), s.path.as_str()), ("v1.0", ""));
        assert!(
            GitSpec::parse("https://x/r")
                .unwrap_err()
                .to_string()
                .contains("no #REF")
        );
        assert!(GitSpec::parse("https://x/r#").is_err());
        assert!(GitSpec::parse("https://x/r#main:../etc").is_err());
        assert_eq!(
            url_key("git://127.0.0.1:9418/scs.git"),
            "git/127.0.0.1_9418/scs.git"
        );
        assert_eq!(url_key("https://github.com/o/r"), "git/github.com/o/r");
    }
}
