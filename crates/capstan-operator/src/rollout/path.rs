//! A Cluster's path to a rollout's target across stacks: one Kubernetes minor per step, each
//! step the newest ready release of the stack of that minor, the last step the target itself
//! (1.33 → 1.34 → 1.35). Kubernetes supports upgrading the control plane one minor at a time
//! only, so a minor is never skipped: a missing intermediate stack (or one without a ready
//! release) blocks the Cluster with that reason.

use super::health::Target;
use super::waves::StackId;
use crate::api::rollout::FromStacks;

/// A ClusterStack of the namespace the path may go through, with its newest ready release
/// (`None`: none is ready).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hop {
    /// The ClusterStack's name (what `spec.from` lists).
    pub name: String,
    pub stack: StackId,
    pub newest_ready: Option<Target>,
}

/// Why a Cluster has no path to the target.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NoPath(pub String);

/// What `spec.from` resolves to against the namespace's ClusterStacks (`stacks`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sources {
    /// The stacks whose Clusters the rollout moves beside the target's own, sorted.
    pub stacks: Vec<StackId>,
    /// What to tell the user: an `auto` that finds no stack, names that find none.
    pub notes: Vec<String>,
}

/// Resolves `from` for a rollout to `target`: `auto` takes every stack of `stacks` with the
/// target's provider and name and a lower minor (of its major); a list takes the stacks of
/// those ClusterStack names.
pub fn sources(from: &FromStacks, target: &StackId, stacks: &[Hop]) -> Sources {
    let mut notes = Vec::new();
    let mut found: Vec<StackId> = match from {
        FromStacks::Auto => stacks
            .iter()
            .filter(|hop| {
                let (k, goal) = (hop.stack.kubernetes(), target.kubernetes());
                hop.stack.provider() == target.provider()
                    && hop.stack.name() == target.name()
                    && k.major == goal.major
                    && k.minor < goal.minor
            })
            .map(|hop| hop.stack.clone())
            .collect(),
        FromStacks::Stacks(names) => {
            let missing: Vec<&str> = names
                .iter()
                .filter(|n| !stacks.iter().any(|hop| &hop.name == *n))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                notes.push(format!(
                    "spec.from: no ClusterStack {} in the namespace",
                    missing.join(", ")
                ));
            }
            stacks
                .iter()
                .filter(|hop| names.contains(&hop.name))
                .map(|hop| hop.stack.clone())
                .collect()
        }
    };
    found.sort_by_key(ToString::to_string);
    found.dedup();
    if found.is_empty() && *from == FromStacks::Auto {
        notes.push(format!(
            "spec.from: auto finds no ClusterStack of provider {}, name {} below Kubernetes {} in the namespace",
            target.provider(),
            target.name(),
            target.kubernetes()
        ));
    }
    Sources { stacks: found, notes }
}

/// The steps from `from` (the stack of the Cluster's class) to `target` (a release of
/// `target_stack`), through `hops` for the minors in between. A Cluster already on the
/// target's stack has the one step `[target]`.
pub fn path(
    from: &StackId,
    target_stack: &StackId,
    target: &Target,
    hops: &[Hop],
) -> Result<Vec<Target>, NoPath> {
    if from.provider() != target_stack.provider() || from.name() != target_stack.name() {
        return Err(NoPath(format!(
            "its stack {from} is not a minor of {target_stack}'s stack"
        )));
    }
    let (source, goal) = (from.kubernetes(), target_stack.kubernetes());
    if source.major != goal.major {
        return Err(NoPath(format!(
            "its stack {from} is Kubernetes {source}, another major than {goal}"
        )));
    }
    if source.minor > goal.minor {
        return Err(NoPath(format!(
            "its stack {from} is Kubernetes {source}, newer than the target's {goal}: a rollout never downgrades"
        )));
    }
    let mut steps = Vec::new();
    for minor in source.minor + 1..goal.minor {
        let of_minor = |hop: &&Hop| {
            hop.stack.provider() == from.provider()
                && hop.stack.name() == from.name()
                && hop.stack.kubernetes().major == source.major
                && hop.stack.kubernetes().minor == minor
        };
        let candidates: Vec<&Hop> = hops.iter().filter(of_minor).collect();
        let Some(first) = candidates.first() else {
            return Err(NoPath(format!(
                "no ClusterStack for Kubernetes {}.{minor} (provider {}, name {}): a Cluster never skips a minor",
                source.major,
                from.provider(),
                from.name()
            )));
        };
        match candidates.iter().find_map(|hop| hop.newest_ready.clone()) {
            Some(release) => steps.push(release),
            None => {
                return Err(NoPath(format!(
                    "ClusterStack {} (Kubernetes {}.{minor}) has no ready release",
                    first.stack, source.major
                )));
            }
        }
    }
    steps.push(target.clone());
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(text: &str) -> StackId {
        StackId::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn release(stack: &str, version: &str, kubernetes: &str) -> Target {
        Target {
            release: format!("{stack}-{version}"),
            class: format!("{stack}-{version}"),
            kubernetes: Some(kubernetes.to_string()),
        }
    }

    fn hop(name: &str, ready: Option<(&str, &str)>) -> Hop {
        Hop {
            name: name.to_string(),
            stack: stack(name),
            newest_ready: ready.map(|(v, k)| release(name, v, k)),
        }
    }

    /// One row: the Cluster's stack, the hops known, the path's releases or why there is none.
    #[test]
    fn paths_go_minor_by_minor() {
        let target_stack = stack("docker-ferrol-1-29");
        let target = release("docker-ferrol-1-29", "v2", "v1.29.4");
        let hops = vec![
            hop("docker-ferrol-1-26", Some(("v5", "v1.26.9"))),
            hop("docker-ferrol-1-27", Some(("v3", "v1.27.3"))),
            hop("docker-ferrol-1-28", Some(("v1", "v1.28.2"))),
            hop("docker-scs-1-28", Some(("v9", "v1.28.9"))),
        ];
        let without_1_28: Vec<Hop> = hops
            .iter()
            .filter(|h| h.stack.to_string() != "docker-ferrol-1-28")
            .cloned()
            .collect();
        let unready_1_28: Vec<Hop> = hops
            .iter()
            .map(|h| {
                if h.stack.to_string() == "docker-ferrol-1-28" {
                    hop("docker-ferrol-1-28", None)
                } else {
                    h.clone()
                }
            })
            .collect();
        type Row<'a> = (&'a str, &'a [Hop], Result<Vec<&'a str>, &'a str>);
        let rows: Vec<Row> = vec![
            ("docker-ferrol-1-29", &hops, Ok(vec!["docker-ferrol-1-29-v2"])),
            ("docker-ferrol-1-28", &hops, Ok(vec!["docker-ferrol-1-29-v2"])),
            (
                "docker-ferrol-1-27",
                &hops,
                Ok(vec!["docker-ferrol-1-28-v1", "docker-ferrol-1-29-v2"]),
            ),
            (
                "docker-ferrol-1-26",
                &hops,
                Ok(vec![
                    "docker-ferrol-1-27-v3",
                    "docker-ferrol-1-28-v1",
                    "docker-ferrol-1-29-v2",
                ]),
            ),
            // docker-scs-1-28 is there, of another name: it does not count.
            (
                "docker-ferrol-1-27",
                &without_1_28,
                Err(
                    "no ClusterStack for Kubernetes 1.28 (provider docker, name ferrol): a Cluster never skips a minor",
                ),
            ),
            (
                "docker-ferrol-1-27",
                &unready_1_28,
                Err("ClusterStack docker-ferrol-1-28 (Kubernetes 1.28) has no ready release"),
            ),
            (
                "docker-scs-1-28",
                &hops,
                Err("its stack docker-scs-1-28 is not a minor of docker-ferrol-1-29's stack"),
            ),
            (
                "openstack-ferrol-1-28",
                &hops,
                Err("its stack openstack-ferrol-1-28 is not a minor"),
            ),
            (
                "docker-ferrol-1-30",
                &hops,
                Err("its stack docker-ferrol-1-30 is Kubernetes 1.30, newer than the target's 1.29"),
            ),
            (
                "docker-ferrol-2-29",
                &hops,
                Err("its stack docker-ferrol-2-29 is Kubernetes 2.29, another major"),
            ),
        ];
        for (from, hops, expected) in rows {
            let got = path(&stack(from), &target_stack, &target, hops);
            match expected {
                Ok(releases) => {
                    let got: Vec<String> = got
                        .unwrap_or_else(|e| panic!("{from}: {e}"))
                        .into_iter()
                        .map(|t| t.release)
                        .collect();
                    assert_eq!(got, releases, "{from}");
                }
                Err(why) => {
                    let error = got.expect_err(from).to_string();
                    assert!(error.starts_with(why), "{from}: {error}");
                }
            }
        }
    }
}
