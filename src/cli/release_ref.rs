//! How a release is named on the command line, one parser for every command that takes one
//! (`render`, `releases diff`, `releases mirror`, `releases pull`): a release directory or a
//! stack source tree (an existing path always wins), `git+URL#REF[:PATH]`, a GitHub release
//! `OWNER/REPO@TAG`, a release in an OCI registry `oci://HOST/REPO@TAG`, or a release tag in
//! the cache. `releases pull` also takes the repository and the tag apart (`SOURCE TAG`).

use std::path::{Path, PathBuf};

use anyhow::bail;

use capstan_source::oci::OciRepo;
use capstan_stack::ReleaseTag;

/// A release as named on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReleaseRef {
    /// A release directory or a stack source tree.
    Path(PathBuf),
    /// `git+URL#REF[:PATH]`: the text after `git+`.
    Git(String),
    /// `OWNER/REPO@TAG`.
    GitHub { repo: String, tag: String },
    /// `oci://HOST/REPO@TAG`.
    Oci { repo: OciRepo, tag: String },
    /// A release tag, of a release already in the cache.
    CachedTag(String),
}

/// The forms a release may be named in, for errors.
pub const FORMS: &str = "a release directory, a stack source tree, OWNER/REPO@TAG, oci://HOST/REPO@TAG, git+URL#REF or a release tag";

impl ReleaseRef {
    /// `arg` as a release name; `exists` tells whether a path exists (an existing path is
    /// always a path). `None` when it is none of the forms.
    pub fn parse_with(arg: &str, exists: impl Fn(&Path) -> bool) -> anyhow::Result<Option<ReleaseRef>> {
        if exists(Path::new(arg)) {
            return Ok(Some(ReleaseRef::Path(PathBuf::from(arg))));
        }
        if let Some(git) = arg.strip_prefix("git+") {
            return Ok(Some(ReleaseRef::Git(git.to_string())));
        }
        if arg.starts_with("oci://") {
            let (repo, tag) = OciRepo::parse_with_tag(arg)?;
            return Ok(Some(ReleaseRef::Oci { repo, tag }));
        }
        if let Some((repo, tag)) = arg.split_once('@')
            && repo.contains('/')
        {
            if tag.is_empty() {
                bail!("{arg}: no tag after `@` (OWNER/REPO@TAG)");
            }
            return Ok(Some(ReleaseRef::GitHub {
                repo: repo.to_string(),
                tag: tag.to_string(),
            }));
        }
        if ReleaseTag::parse(arg).is_ok() {
            return Ok(Some(ReleaseRef::CachedTag(arg.to_string())));
        }
        Ok(None)
    }

    /// `arg` as a release name, looking at the file system for paths.
    pub fn parse(arg: &str) -> anyhow::Result<Option<ReleaseRef>> {
        ReleaseRef::parse_with(arg, Path::exists)
    }

    /// The `SOURCE [TAG]` of `releases pull`: the repository and the tag apart (`OWNER/REPO
    /// TAG`, `oci://HOST/REPO TAG`), or any one-argument form (`oci://HOST/REPO@TAG`, …).
    pub fn from_source(source: &str, tag: Option<&str>) -> anyhow::Result<ReleaseRef> {
        let Some(tag) = tag else {
            let repository = !source.contains('@') && !source.starts_with("git+") && source.contains('/');
            return match ReleaseRef::parse(source) {
                Ok(Some(r)) => Ok(r),
                _ if repository => bail!(
                    "which release of {source}? give its tag: `{source}@TAG` or `{source} TAG` (`capstan releases list {source}` shows them)"
                ),
                Ok(None) => bail!("{source}: not a release name; give {FORMS}"),
                Err(e) => Err(e),
            };
        };
        if source.starts_with("git+") {
            bail!("a git source names its ref in the URL (git+URL#REF); it takes no TAG argument");
        }
        if source.contains('@') {
            bail!("{source} already names its tag; give either {source} alone or the repository and TAG");
        }
        match ReleaseRef::parse(&format!("{source}@{tag}"))? {
            Some(r @ (ReleaseRef::Oci { .. } | ReleaseRef::GitHub { .. })) => Ok(r),
            _ => {
                bail!("{source}: not a repository (OWNER/REPO or oci://HOST/REPO) to take the tag {tag} from")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oci(text: &str) -> ReleaseRef {
        let (repo, tag) = OciRepo::parse_with_tag(text).unwrap();
        ReleaseRef::Oci { repo, tag }
    }

    #[test]
    fn every_form_parses_one_way() {
        let exists = |p: &Path| p == Path::new("stacks/docker");
        let table = [
            ("stacks/docker", Some(ReleaseRef::Path("stacks/docker".into()))),
            (
                "git+https://h/r#main:p",
                Some(ReleaseRef::Git("https://h/r#main:p".into())),
            ),
            (
                "o/r@docker-scs-1-30-v1",
                Some(ReleaseRef::GitHub {
                    repo: "o/r".into(),
                    tag: "docker-scs-1-30-v1".into(),
                }),
            ),
            (
                "oci://localhost:5000/k/s@docker-scs-1-30-v1",
                Some(oci("oci://localhost:5000/k/s@docker-scs-1-30-v1")),
            ),
            (
                "docker-scs-1-30-v1",
                Some(ReleaseRef::CachedTag("docker-scs-1-30-v1".into())),
            ),
            ("no/such/chart", None),
            ("chart@1.0", None),
        ];
        for (arg, want) in table {
            assert_eq!(ReleaseRef::parse_with(arg, exists).unwrap(), want, "{arg}");
        }
        for bad in ["oci://localhost:5000/k/s", "oci://bad_host/x@t", "o/r@"] {
            assert!(ReleaseRef::parse_with(bad, exists).is_err(), "{bad}");
        }
    }

    #[test]
    fn pull_takes_the_tag_apart_or_within() {
        let tag = "docker-scs-1-30-v1";
        let want = oci(&format!("oci://localhost:5000/k/s@{tag}"));
        assert_eq!(
            ReleaseRef::from_source("oci://localhost:5000/k/s", Some(tag)).unwrap(),
            want
        );
        assert_eq!(
            ReleaseRef::from_source(&format!("oci://localhost:5000/k/s@{tag}"), None).unwrap(),
            want
        );
        let github = ReleaseRef::GitHub {
            repo: "o/r".into(),
            tag: tag.into(),
        };
        assert_eq!(ReleaseRef::from_source("o/r", Some(tag)).unwrap(), github);
        assert_eq!(
            ReleaseRef::from_source(&format!("o/r@{tag}"), None).unwrap(),
            github
        );
        for (source, tag, want) in [
            (
                "oci://localhost:5000/k/s",
                None,
                "which release of oci://localhost:5000/k/s?",
            ),
            ("o/r", None, "which release of o/r?"),
            ("git+https://h/r#main", Some("t"), "takes no TAG argument"),
            ("o/r@t1", Some("t2"), "already names its tag"),
            ("nonsense", None, "not a release name"),
        ] {
            let err = ReleaseRef::from_source(source, tag).unwrap_err().to_string();
            assert!(err.contains(want), "{source} {tag:?}: {err}");
        }
    }
}
