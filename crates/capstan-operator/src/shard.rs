//! Sharding: several operator Deployments split a fleet by the label [`SHARD_LABEL`]. An
//! operator started with `--shard KEY` reconciles the objects labelled `KEY`; the one without
//! `--shard` (the default shard) reconciles the objects without the label — the semantics of
//! Flux's `sharding.fluxcd.io/key`. Clusters and ClusterStacks are labelled by their users;
//! what the operator makes for them (a Cluster's ClusterAddon, a ClusterStack's releases)
//! follows its owner's label, so it moves with its owner.

use std::collections::BTreeMap;

use kube::api::ObjectMeta;

/// The shard label of Clusters, ClusterStacks and what the operator makes for them.
pub const SHARD_LABEL: &str = "sharding.capstan.dev/key";

/// The Lease of the default shard; a shard `KEY` has `capstan-operator-KEY`.
pub const DEFAULT_LEASE: &str = "capstan-operator";

/// A shard key that is not a valid label value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--shard {key:?}: {problem} (a shard key is a label value: up to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)"
)]
pub struct ShardKeyError {
    pub key: String,
    pub problem: &'static str,
}

/// Checks `key` as the value of [`SHARD_LABEL`] (and as the end of a Lease name).
pub fn parse_key(key: &str) -> Result<String, ShardKeyError> {
    let refuse = |problem| {
        Err(ShardKeyError {
            key: key.to_string(),
            problem,
        })
    };
    if key.is_empty() {
        return refuse("empty");
    }
    if key.len() > 63 {
        return refuse("longer than 63 characters");
    }
    if !key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return refuse("has a character other than a letter, digit, '-', '_' or '.'");
    }
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !edge(key.chars().next()) || !edge(key.chars().last()) {
        return refuse("does not start and end with a letter or digit");
    }
    Ok(key.to_string())
}

/// The label selector of the objects shard `shard` reconciles (`None`: the default shard).
pub fn selector(shard: Option<&str>) -> String {
    match shard {
        Some(key) => format!("{SHARD_LABEL}={key}"),
        None => format!("!{SHARD_LABEL}"),
    }
}

/// Whether shard `shard` reconciles an object with `meta`: what [`selector`] selects.
pub fn owns(shard: Option<&str>, meta: &ObjectMeta) -> bool {
    key_of(meta) == shard
}

/// The shard an object is in: its label's value; `None`: the default shard.
pub fn key_of(meta: &ObjectMeta) -> Option<&str> {
    meta.labels.as_ref()?.get(SHARD_LABEL).map(String::as_str)
}

/// The Lease of shard `shard`: each shard elects its own leader.
pub fn lease_name(shard: Option<&str>) -> String {
    match shard {
        Some(key) => format!("{DEFAULT_LEASE}-{key}"),
        None => DEFAULT_LEASE.to_string(),
    }
}

/// The labels of a new object made for `owner`: `labels` and the owner's shard label.
pub fn with_owner_shard(
    mut labels: BTreeMap<String, String>,
    owner: &ObjectMeta,
) -> BTreeMap<String, String> {
    if let Some(key) = key_of(owner) {
        labels.insert(SHARD_LABEL.to_string(), key.to_string());
    }
    labels
}

/// The merge patch that moves `owned` into `owner`'s shard, or `None` when it is there.
pub fn follow_owner(owner: &ObjectMeta, owned: &ObjectMeta) -> Option<serde_json::Value> {
    let want = key_of(owner);
    (key_of(owned) != want).then(|| serde_json::json!({"metadata": {"labels": {SHARD_LABEL: want}}}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(shard: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            labels: shard.map(|key| {
                BTreeMap::from([
                    ("app".to_string(), "x".to_string()),
                    (SHARD_LABEL.to_string(), key.to_string()),
                ])
            }),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn shard_keys_are_label_values() {
        let long = "a".repeat(64);
        #[rustfmt::skip]
        let table: &[(&str, Result<(), &str>)] = &[
            ("a", Ok(())),
            ("shard-1", Ok(())),
            ("eu_west.2", Ok(())),
            (&long[..63], Ok(())),
            ("", Err("empty")),
            (&long, Err("longer than 63")),
            ("-a", Err("start and end")),
            ("a.", Err("start and end")),
            ("a/b", Err("a character other")),
            ("ä", Err("a character other")),
            ("a b", Err("a character other")),
        ];
        for (key, want) in table {
            match (parse_key(key), want) {
                (Ok(got), Ok(())) => assert_eq!(&got, key),
                (Err(e), Err(part)) => assert!(e.to_string().contains(part), "{key:?}: {e}"),
                (got, want) => panic!("{key:?}: {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn a_shard_owns_what_its_selector_selects() {
        // (shard of the operator, label of the object, owned, selector)
        #[rustfmt::skip]
        let table: &[(Option<&str>, Option<&str>, bool, &str)] = &[
            (None, None, true, "!sharding.capstan.dev/key"),
            (None, Some("a"), false, "!sharding.capstan.dev/key"),
            (Some("a"), Some("a"), true, "sharding.capstan.dev/key=a"),
            (Some("a"), Some("b"), false, "sharding.capstan.dev/key=a"),
            (Some("a"), None, false, "sharding.capstan.dev/key=a"),
            // An empty value is a label: not the default shard's, as for the selector.
            (None, Some(""), false, "!sharding.capstan.dev/key"),
        ];
        for (i, &(shard, label, owned, want_selector)) in table.iter().enumerate() {
            assert_eq!(owns(shard, &meta(label)), owned, "row {i}");
            assert_eq!(selector(shard), want_selector, "row {i}");
        }
        assert_eq!(lease_name(None), "capstan-operator");
        assert_eq!(lease_name(Some("a")), "capstan-operator-a");
    }

    #[test]
    fn owned_objects_follow_their_owners_shard() {
        #[rustfmt::skip]
        let table: &[(Option<&str>, Option<&str>, Option<serde_json::Value>)] = &[
            (None, None, None),
            (Some("a"), Some("a"), None),
            (Some("a"), None, Some(serde_json::json!({"metadata": {"labels": {SHARD_LABEL: "a"}}}))),
            (Some("b"), Some("a"), Some(serde_json::json!({"metadata": {"labels": {SHARD_LABEL: "b"}}}))),
            // Back to the default shard: the label is removed.
            (None, Some("a"), Some(serde_json::json!({"metadata": {"labels": {SHARD_LABEL: null}}}))),
        ];
        for (i, (owner, owned, want)) in table.iter().enumerate() {
            assert_eq!(&follow_owner(&meta(*owner), &meta(*owned)), want, "row {i}");
        }
        let labels = BTreeMap::from([("app".to_string(), "y".to_string())]);
        let made = with_owner_shard(labels.clone(), &meta(Some("a")));
        assert_eq!(made.get(SHARD_LABEL).map(String::as_str), Some("a"));
        assert_eq!(made.get("app").map(String::as_str), Some("y"));
        assert_eq!(with_owner_shard(labels.clone(), &meta(None)), labels);
    }
}
