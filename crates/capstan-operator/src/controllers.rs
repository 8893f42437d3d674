//! Which controllers one operator process runs (`capstan operator --controllers LIST`), in
//! kube-controller-manager's form: `*` for all, a name to add one, `-name` to leave one out
//! (`*,-clusteraddon`). A run without a controller leaves its kind to another process — a
//! test playing the ClusterAddon controller, or a second operator dedicated to rollouts.

use std::collections::BTreeSet;
use std::fmt;

/// One controller of the operator, by its `--controllers` name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ControllerKind {
    ClusterStack,
    ClusterStackRelease,
    Cluster,
    ClusterAddon,
    Rollout,
}

impl ControllerKind {
    pub const ALL: [ControllerKind; 5] = [
        ControllerKind::ClusterStack,
        ControllerKind::ClusterStackRelease,
        ControllerKind::Cluster,
        ControllerKind::ClusterAddon,
        ControllerKind::Rollout,
    ];

    /// The name in `--controllers`.
    pub fn name(self) -> &'static str {
        match self {
            ControllerKind::ClusterStack => "clusterstack",
            ControllerKind::ClusterStackRelease => "clusterstackrelease",
            ControllerKind::Cluster => "cluster",
            ControllerKind::ClusterAddon => "clusteraddon",
            ControllerKind::Rollout => "rollout",
        }
    }

    fn named(name: &str) -> Option<ControllerKind> {
        ControllerKind::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

impl fmt::Display for ControllerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--controllers` list that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControllerListError {
    #[error("empty item in the controller list {list:?} (a comma too many?)")]
    EmptyItem { list: String },
    #[error(
        "unknown controller {name:?} in {list:?}; known: *, clusterstack, clusterstackrelease, cluster, clusteraddon, rollout"
    )]
    Unknown { name: String, list: String },
    #[error("{name:?} is both named and left out in {list:?}")]
    Contradiction { name: String, list: String },
    #[error("the controller list {list:?} runs no controller")]
    Nothing { list: String },
}

/// The controllers one process runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControllerSet(BTreeSet<ControllerKind>);

impl Default for ControllerSet {
    fn default() -> ControllerSet {
        ControllerSet::all()
    }
}

impl ControllerSet {
    pub fn all() -> ControllerSet {
        ControllerSet(ControllerKind::ALL.into_iter().collect())
    }

    pub fn runs(&self, kind: ControllerKind) -> bool {
        self.0.contains(&kind)
    }

    /// Parses a `--controllers` list: comma-separated `*`, `name` or `-name`; a name left out
    /// wins over `*`. Naming one controller both ways, an unknown name, an empty item or a
    /// list that leaves nothing to run is an error (an operator running no controller is a
    /// mistake, not a configuration).
    pub fn parse(list: &str) -> Result<ControllerSet, ControllerListError> {
        let mut star = false;
        let mut named = BTreeSet::new();
        let mut left_out = BTreeSet::new();
        for item in list.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(ControllerListError::EmptyItem { list: list.into() });
            }
            if item == "*" {
                star = true;
                continue;
            }
            let (name, out) = match item.strip_prefix('-') {
                Some(name) => (name, true),
                None => (item, false),
            };
            let kind = ControllerKind::named(name).ok_or_else(|| ControllerListError::Unknown {
                name: name.into(),
                list: list.into(),
            })?;
            if out {
                left_out.insert(kind);
            } else {
                named.insert(kind);
            }
        }
        if let Some(both) = named.intersection(&left_out).next() {
            return Err(ControllerListError::Contradiction {
                name: both.name().into(),
                list: list.into(),
            });
        }
        let chosen: BTreeSet<ControllerKind> = ControllerKind::ALL
            .into_iter()
            .filter(|kind| (star || named.contains(kind)) && !left_out.contains(kind))
            .collect();
        if chosen.is_empty() {
            return Err(ControllerListError::Nothing { list: list.into() });
        }
        Ok(ControllerSet(chosen))
    }
}

impl fmt::Display for ControllerSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|kind| kind.name()).collect();
        f.write_str(&names.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ControllerKind::*;

    #[test]
    fn controller_lists_in_kube_controller_managers_form() {
        #[rustfmt::skip]
        let table: &[(&str, Result<&[ControllerKind], &str>)] = &[
            ("*", Ok(&[ClusterStack, ClusterStackRelease, Cluster, ClusterAddon, Rollout])),
            ("*,-clusteraddon", Ok(&[ClusterStack, ClusterStackRelease, Cluster, Rollout])),
            ("-clusteraddon,*", Ok(&[ClusterStack, ClusterStackRelease, Cluster, Rollout])),
            (" * , -rollout ", Ok(&[ClusterStack, ClusterStackRelease, Cluster, ClusterAddon])),
            ("rollout", Ok(&[Rollout])),
            ("cluster,clusteraddon", Ok(&[Cluster, ClusterAddon])),
            ("rollout,rollout", Ok(&[Rollout])),
            ("*,rollout", Ok(&[ClusterStack, ClusterStackRelease, Cluster, ClusterAddon, Rollout])),
            ("", Err("empty item")),
            ("*,", Err("empty item")),
            ("rollouts", Err("unknown controller \"rollouts\"")),
            ("-*", Err("unknown controller \"*\"")),
            ("Rollout", Err("unknown controller")),
            ("rollout,-rollout", Err("both named and left out")),
            ("-rollout", Err("runs no controller")),
            ("*,-clusterstack,-clusterstackrelease,-cluster,-clusteraddon,-rollout", Err("runs no controller")),
        ];
        for (list, want) in table {
            match (ControllerSet::parse(list), want) {
                (Ok(set), Ok(kinds)) => {
                    for kind in ControllerKind::ALL {
                        assert_eq!(set.runs(kind), kinds.contains(&kind), "{list:?}: {kind}");
                    }
                }
                (Err(error), Err(text)) => {
                    let message = error.to_string();
                    assert!(message.contains(text), "{list:?}: {message}");
                    assert!(message.contains(&format!("{list:?}")), "{list:?}: {message}");
                }
                (got, want) => panic!("{list:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn the_default_runs_every_controller_and_prints_as_a_list_that_parses_back() {
        let all = ControllerSet::default();
        assert!(ControllerKind::ALL.into_iter().all(|kind| all.runs(kind)));
        assert_eq!(ControllerSet::parse(&all.to_string()), Ok(all));
    }
}
