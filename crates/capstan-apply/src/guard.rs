//! The guard against pruning by accident: a failed render piped into `capstan apply --prune`
//! carries no objects, and taking "no objects" as the desired state would delete everything
//! the inventory holds. These decisions are pure; the CLI and the applier (and so the
//! operator) ask them before anything is sent.

use std::collections::HashSet;

use super::inventory::Entry;
use super::object::DesiredObject;

/// How far an apply with pruning may empty its inventory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PruneScope {
    /// An empty desired set never prunes a non-empty inventory (the operator's renders).
    #[default]
    NotFromEmpty,
    /// Neither an empty desired set nor one that keeps nothing of the inventory may prune
    /// (the CLI without `--allow-empty`: `kubectl apply` refuses empty input too).
    NotAll,
    /// Anything, down to an empty inventory (a deletion; `--allow-empty`).
    Any,
}

/// Why an apply was refused before anything was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "no objects in the input (did the command that produced it fail?); pass --allow-empty to apply an empty set"
    )]
    EmptyInput,
    #[error(
        "no objects in the input, and --prune would delete all {count} object(s) of inventory {inventory}; refused (pass --allow-empty if that is what you want)"
    )]
    EmptyPrune { inventory: String, count: usize },
    #[error(
        "--prune would delete all {count} object(s) of inventory {inventory}: none of them is in the input; refused (pass --allow-empty if that is what you want)"
    )]
    PruneAll { inventory: String, count: usize },
}

/// The CLI's check of its input: an empty stream is refused unless `allow_empty`.
pub fn check_input(objects: usize, allow_empty: bool) -> Result<(), Refusal> {
    if objects == 0 && !allow_empty {
        return Err(Refusal::EmptyInput);
    }
    Ok(())
}

/// Whether pruning `inventory` (its entries `old`) down to `desired` is allowed under `scope`.
/// An inventory entry is kept when a desired object has its group, kind and name and — for a
/// namespaced entry — its namespace (a desired object without one gets `target_namespace`);
/// the version does not matter.
pub fn check_prune(
    scope: PruneScope,
    inventory: &str,
    desired: &[DesiredObject],
    target_namespace: &str,
    old: &[Entry],
) -> Result<(), Refusal> {
    if old.is_empty() || scope == PruneScope::Any {
        return Ok(());
    }
    let count = old.len();
    if desired.is_empty() {
        return Err(Refusal::EmptyPrune {
            inventory: inventory.to_string(),
            count,
        });
    }
    if scope == PruneScope::NotFromEmpty {
        return Ok(());
    }
    let wanted: HashSet<(&str, &str, &str, &str)> = desired
        .iter()
        .map(|o| {
            let ns = o.namespace.as_deref().unwrap_or(target_namespace);
            (o.group.as_str(), o.kind.as_str(), ns, o.name.as_str())
        })
        .collect();
    let names: HashSet<(&str, &str, &str)> = desired
        .iter()
        .map(|o| (o.group.as_str(), o.kind.as_str(), o.name.as_str()))
        .collect();
    let kept = old.iter().any(|e| {
        let k = &e.key;
        match &k.namespace {
            Some(ns) => wanted.contains(&(k.group.as_str(), k.kind.as_str(), ns, k.name.as_str())),
            // Cluster-scoped: a desired object may name a namespace that the apply drops.
            None => names.contains(&(k.group.as_str(), k.kind.as_str(), k.name.as_str())),
        }
    });
    if kept {
        Ok(())
    } else {
        Err(Refusal::PruneAll {
            inventory: inventory.to_string(),
            count,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::parse_stream;
    use crate::status::ObjectKey;

    fn entry(kind: &str, ns: Option<&str>, name: &str) -> Entry {
        Entry {
            key: ObjectKey {
                group: String::new(),
                version: "v1".into(),
                kind: kind.into(),
                namespace: ns.map(str::to_string),
                name: name.into(),
            },
            hash: None,
        }
    }

    fn desired(text: &str) -> Vec<DesiredObject> {
        parse_stream(text, "t").expect("parses")
    }

    #[test]
    fn empty_input_needs_allow_empty() {
        assert_eq!(check_input(0, false), Err(Refusal::EmptyInput));
        assert_eq!(check_input(0, true), Ok(()));
        assert_eq!(check_input(3, false), Ok(()));
    }

    #[test]
    fn prune_decisions() {
        let inv = [
            entry("ConfigMap", Some("ns"), "a"),
            entry("ConfigMap", Some("ns"), "b"),
            entry("Namespace", None, "ns"),
        ];
        let none: Vec<DesiredObject> = Vec::new();
        let keeps_a = desired("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n");
        let keeps_ns = desired("apiVersion: v1\nkind: Namespace\nmetadata: {name: ns, namespace: x}\n");
        let other_ns = desired("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: other}\n");
        let renamed = desired("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n");
        let empty_prune = Err(Refusal::EmptyPrune {
            inventory: "ns/inv".into(),
            count: 3,
        });
        let prune_all = Err(Refusal::PruneAll {
            inventory: "ns/inv".into(),
            count: 3,
        });
        use PruneScope::*;
        type Row<'a> = (PruneScope, &'a [DesiredObject], &'a [Entry], Result<(), Refusal>);
        let table: &[Row] = &[
            // An empty inventory has nothing to lose.
            (NotAll, &none, &[], Ok(())),
            (NotFromEmpty, &none, &[], Ok(())),
            // Nothing desired, something recorded: refused unless anything goes.
            (NotFromEmpty, &none, &inv, empty_prune.clone()),
            (NotAll, &none, &inv, empty_prune),
            (Any, &none, &inv, Ok(())),
            // Something kept: fine.
            (NotAll, &keeps_a, &inv, Ok(())),
            (NotAll, &keeps_ns, &inv, Ok(())),
            // Everything would go: only the CLI's scope refuses.
            (NotAll, &renamed, &inv, prune_all.clone()),
            (NotAll, &other_ns, &inv, prune_all),
            (NotFromEmpty, &renamed, &inv, Ok(())),
            (Any, &renamed, &inv, Ok(())),
        ];
        for (i, (scope, desired, old, want)) in table.iter().enumerate() {
            let got = check_prune(*scope, "ns/inv", desired, "ns", old);
            assert_eq!(&got, want, "row {i}");
        }
    }
}
