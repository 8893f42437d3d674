//! Which of its releases a ClusterStack deletes: a pure function over what the pass observed,
//! so the decision that can delete a release in use is a table of cases (issue 34). The I/O
//! (listing releases and Clusters, deleting) is the shell in `cluster_stack.rs`.

use std::collections::BTreeSet;

use capstan_stack::version::Version;

use crate::api::rollout::{ClusterStackRollout, RolloutPhase};
use crate::clusters::release_name_of_class;

/// A release the ClusterStack owns, as retention sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owned {
    /// The ClusterStackRelease's name (its release tag).
    pub name: String,
    /// The version of the tag; `None` for a name that is no release tag (never the newest).
    pub version: Option<Version>,
    pub ready: bool,
}

/// What keeps a release, apart from its users.
#[derive(Debug, Clone, Copy)]
pub struct Policy<'a> {
    /// The versions listed in `spec.versions` that the source has, and the latest release
    /// when subscribed.
    pub wanted: &'a BTreeSet<String>,
    /// The newest release of the source on the stack's channel.
    pub latest_remote: Option<&'a str>,
    /// How many of the newest ready releases stay (what new Clusters can use while a newer
    /// release gets ready).
    pub newest_ready: usize,
    /// The releases a rollout is moving Clusters to or from.
    pub in_use_by_rollouts: &'a BTreeSet<String>,
}

/// The releases the policy alone does not keep, by name. Their users decide the rest
/// ([`to_delete`]); when this is empty, the Clusters need not be listed.
pub fn unwanted(owned: &[Owned], policy: &Policy<'_>) -> Vec<String> {
    let mut ready: Vec<(&Version, &str)> = owned
        .iter()
        .filter(|r| r.ready)
        .filter_map(|r| Some((r.version.as_ref()?, r.name.as_str())))
        .collect();
    ready.sort();
    let newest_ready: BTreeSet<&str> = ready
        .iter()
        .rev()
        .take(policy.newest_ready)
        .map(|(_, name)| *name)
        .collect();
    owned
        .iter()
        .map(|r| r.name.as_str())
        .filter(|name| {
            !policy.wanted.contains(*name)
                && policy.latest_remote != Some(*name)
                && !newest_ready.contains(name)
                && !policy.in_use_by_rollouts.contains(*name)
        })
        .map(str::to_string)
        .collect()
}

/// The releases the rollouts of ClusterStack `stack` need: each one's target, and while it is
/// not Complete, the release each of its Clusters came from (what a rollback, also one after
/// a resume of a halted rollout, switches the Cluster back to). Rollouts of other stacks
/// have no say.
pub fn in_use_by_rollouts(rollouts: &[ClusterStackRollout], stack: &str) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for rollout in rollouts.iter().filter(|r| r.spec.cluster_stack == stack) {
        let Some(status) = &rollout.status else {
            continue;
        };
        used.extend(status.target_release.iter().cloned());
        if status.phase == RolloutPhase::Complete {
            continue;
        }
        let classes = status.clusters.iter().filter_map(|c| c.from.as_deref());
        used.extend(classes.map(release_name_of_class));
    }
    used
}

/// Of the unwanted releases, those to delete: none a Cluster uses, and none at all when the
/// Clusters could not be listed (`None`): deleting without knowing the users could pull a
/// ClusterClass from under a Cluster.
pub fn to_delete(unwanted: &[String], used_by_clusters: Option<&BTreeSet<String>>) -> Vec<String> {
    match used_by_clusters {
        Some(used) => unwanted
            .iter()
            .filter(|name| !used.contains(*name))
            .cloned()
            .collect(),
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(list: &[(&str, bool)]) -> Vec<Owned> {
        list.iter()
            .map(|(name, ready)| Owned {
                name: name.to_string(),
                version: name
                    .rsplit_once("-v")
                    .and_then(|(_, v)| Version::parse(&format!("v{v}")).ok()),
                ready: *ready,
            })
            .collect()
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    const S: &str = "docker-ferrol-1-30";

    #[test]
    fn unwanted_keeps_what_the_policy_names() {
        let tag = |v: &str| format!("{S}-{v}");
        let (v1, v2, v3, v10) = (tag("v1"), tag("v2"), tag("v3"), tag("v10"));
        // (what, owned with readiness, wanted, latest remote, newest ready kept, rollouts, expected)
        type Case<'a> = (
            &'a str,
            Vec<(&'a str, bool)>,
            Vec<&'a str>,
            Option<&'a str>,
            usize,
            Vec<&'a str>,
            Vec<&'a str>,
        );
        let cases: Vec<Case> = vec![
            ("nothing owned", vec![], vec![], None, 1, vec![], vec![]),
            (
                "the wanted stay, the rest goes",
                vec![(&v1, true), (&v2, false), (&v3, false)],
                vec![&v2, &v3],
                Some(&v3),
                0,
                vec![],
                vec![&v1],
            ),
            (
                "the newest ready stays while a newer one is not ready",
                vec![(&v1, true), (&v2, true), (&v3, false)],
                vec![&v3],
                Some(&v3),
                1,
                vec![],
                vec![&v1],
            ),
            (
                "newest by version, not by name (v10 after v2)",
                vec![(&v2, true), (&v10, true)],
                vec![],
                None,
                1,
                vec![],
                vec![&v2],
            ),
            (
                "the newest N ready stay",
                vec![(&v1, true), (&v2, true), (&v3, true)],
                vec![],
                None,
                2,
                vec![],
                vec![&v1],
            ),
            (
                "the latest remote stays though not subscribed",
                vec![(&v1, false), (&v3, false)],
                vec![],
                Some(&v3),
                1,
                vec![],
                vec![&v1],
            ),
            (
                "a release a rollout uses stays",
                vec![(&v1, true), (&v2, true), (&v3, true)],
                vec![&v3],
                Some(&v3),
                1,
                vec![&v1],
                vec![&v2],
            ),
            (
                "a name that is no tag is never the newest ready",
                vec![("odd", true), (&v1, true)],
                vec![],
                None,
                1,
                vec![],
                vec!["odd"],
            ),
        ];
        for (what, list, wanted, latest, newest_ready, rollouts, expected) in cases {
            let (wanted, rollouts) = (set(&wanted), set(&rollouts));
            let policy = Policy {
                wanted: &wanted,
                latest_remote: latest,
                newest_ready,
                in_use_by_rollouts: &rollouts,
            };
            let mut got = unwanted(&owned(&list), &policy);
            got.sort();
            let mut expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
            expected.sort();
            assert_eq!(got, expected, "{what}");
        }
    }

    #[test]
    fn rollouts_keep_their_target_and_while_unfinished_the_releases_their_clusters_left() {
        use crate::api::rollout::{ClusterPhase, ClusterRolloutStatus, ClusterStackRolloutStatus};
        let rollout = |stack: &str, phase: RolloutPhase, target: Option<&str>, from: &[&str]| {
            let mut r = ClusterStackRollout::new(
                "r",
                serde_json::from_value(
                    serde_json::json!({"clusterStack": stack, "waves": [{"name": "all"}]}),
                )
                .expect("spec"),
            );
            r.status = Some(ClusterStackRolloutStatus {
                phase,
                target_release: target.map(str::to_string),
                clusters: from
                    .iter()
                    .map(|class| ClusterRolloutStatus {
                        name: "tenant/c".into(),
                        from: Some(class.to_string()),
                        phase: ClusterPhase::RolledBack,
                        ..ClusterRolloutStatus::default()
                    })
                    .collect(),
                ..ClusterStackRolloutStatus::default()
            });
            r
        };
        let (v1, v2, v3) = (format!("{S}-v1"), format!("{S}-v2"), format!("{S}-v3"));
        let hashed_class = format!("{S}-v0-sha.4e0d8f3");
        type Case<'a> = (&'a str, Vec<ClusterStackRollout>, Vec<&'a str>);
        let cases: Vec<Case> = vec![
            ("no rollout", vec![], vec![]),
            (
                "a halted rollout keeps its target and the classes to roll back to",
                vec![rollout(S, RolloutPhase::Halted, Some(&v2), &[&v1])],
                vec![&v1, &v2],
            ),
            (
                "a progressing rollout likewise",
                vec![rollout(S, RolloutPhase::Progressing, Some(&v3), &[&v1, &v2])],
                vec![&v1, &v2, &v3],
            ),
            (
                "a complete rollout keeps only its target",
                vec![rollout(S, RolloutPhase::Complete, Some(&v2), &[&v1])],
                vec![&v2],
            ),
            (
                "a class name stands for its release (dots as dashes)",
                vec![rollout(S, RolloutPhase::Halted, Some(&v2), &[&hashed_class])],
                vec![&v2, "docker-ferrol-1-30-v0-sha-4e0d8f3"],
            ),
            (
                "a rollout of another stack has no say",
                vec![rollout("other", RolloutPhase::Halted, Some(&v2), &[&v1])],
                vec![],
            ),
            (
                "a rollout without a status yet keeps nothing",
                vec![{
                    let mut r = rollout(S, RolloutPhase::Idle, None, &[]);
                    r.status = None;
                    r
                }],
                vec![],
            ),
        ];
        for (what, rollouts, expected) in cases {
            assert_eq!(in_use_by_rollouts(&rollouts, S), set(&expected), "{what}");
        }
    }

    #[test]
    fn to_delete_spares_what_clusters_use_and_everything_when_they_are_unknown() {
        let unwanted = vec!["a".to_string(), "b".to_string()];
        type Case<'a> = (&'a str, Option<&'a [&'a str]>, &'a [&'a str]);
        let cases: &[Case] = &[
            ("no Cluster uses them", Some(&[]), &["a", "b"]),
            ("a Cluster uses one", Some(&["b", "other"]), &["a"]),
            ("Clusters unknown", None, &[]),
        ];
        for (what, used, expected) in cases {
            let used = used.map(set);
            assert_eq!(
                to_delete(&unwanted, used.as_ref()),
                set(expected).into_iter().collect::<Vec<_>>(),
                "{what}"
            );
        }
    }
}
