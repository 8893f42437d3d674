//! Which cached releases a GC keeps: the newest N of each stack from each source.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use capstan_stack::ReleaseTag;

/// A complete release in the cache: its key (`<source>/<tag>`) and when it was stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    pub key: String,
    pub written: SystemTime,
}

/// The keys to keep: per source (the key without its last segment) and stack, the `newest`
/// releases by version. Hash versions (`v0-sha.<hash>`, git builds) do not order by their
/// hash: among them the one stored last is the newest. Keys whose last segment is not a
/// release tag are always kept (GC removes only what it understands).
pub fn keep_newest(stored: &[Stored], newest: usize) -> BTreeSet<String> {
    let mut keep = BTreeSet::new();
    let mut groups: BTreeMap<(String, String), Vec<(ReleaseTag, &Stored)>> = BTreeMap::new();
    for s in stored {
        let (source, tag) = s.key.rsplit_once('/').unwrap_or(("", s.key.as_str()));
        match ReleaseTag::parse(tag) {
            Ok(t) => groups
                .entry((source.to_string(), t.stack().to_string()))
                .or_default()
                .push((t, s)),
            Err(_) => {
                keep.insert(s.key.clone());
            }
        }
    }
    for mut releases in groups.into_values() {
        releases.sort_by(|(a, sa), (b, sb)| newer_first(a, sa, b, sb));
        keep.extend(releases.into_iter().take(newest).map(|(_, s)| s.key.clone()));
    }
    keep
}

fn newer_first(a: &ReleaseTag, sa: &Stored, b: &ReleaseTag, sb: &Stored) -> Ordering {
    let by_time = sb.written.cmp(&sa.written);
    if a.version().is_hash() && b.version().is_hash() {
        by_time
    } else {
        b.version().cmp(a.version()).then(by_time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(key: &str, secs: u64) -> Stored {
        Stored {
            key: key.into(),
            written: SystemTime::UNIX_EPOCH + Duration::from_secs(secs),
        }
    }

    #[test]
    fn keeps_the_newest_per_source_and_stack() {
        let stored = [
            at("github/o/r/docker-scs-1-30-v1", 5),
            at("github/o/r/docker-scs-1-30-v3", 1),
            at("github/o/r/docker-scs-1-30-v2", 9),
            at("github/o/r/docker-scs-1-31-v1", 1),
            at("github/x/y/docker-scs-1-30-v1", 1),
            at("git/h/r/docker-scs-1-30-v0-sha-aaaaaaa", 1),
            at("git/h/r/docker-scs-1-30-v0-sha-bbbbbbb", 7),
            at("git/h/r/docker-scs-1-30-v0-sha-ccccccc", 3),
            at("other/not-a-tag", 0),
        ];
        let keep: Vec<String> = keep_newest(&stored, 1).into_iter().collect();
        assert_eq!(
            keep,
            [
                "git/h/r/docker-scs-1-30-v0-sha-bbbbbbb",
                "github/o/r/docker-scs-1-30-v3",
                "github/o/r/docker-scs-1-31-v1",
                "github/x/y/docker-scs-1-30-v1",
                "other/not-a-tag",
            ]
        );
        assert_eq!(keep_newest(&stored, 2).len(), 7);
        assert_eq!(
            keep_newest(&stored, 0),
            BTreeSet::from(["other/not-a-tag".to_string()])
        );
    }
}
