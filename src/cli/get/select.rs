//! `capstan get addons -l SELECTOR`: a ClusterAddon is selected by its Cluster's labels (a
//! ring, a region, a tenant: what Clusters are labelled with) together with its own, among
//! them the Cluster's name as `cluster.x-k8s.io/cluster-name` (which the operator labels each
//! ClusterAddon with). The selector is Kubernetes' syntax, read here because it applies to
//! labels of two objects at once.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, bail};
use kube::api::{Api, DynamicObject, ListParams};
use kube::{Client, ResourceExt};

use capstan_operator::api::ClusterAddon;
use capstan_operator::cli::clusters::CLUSTER_NAME_LABEL;
use capstan_operator::cli::clusters::cluster_resource;

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Exists(String),
    Absent(String),
    In(String, BTreeSet<String>),
    /// Also met by a missing label, as `!=` and `notin` are in Kubernetes.
    NotIn(String, BTreeSet<String>),
    /// `key>N` / `key<N`: the label exists and is an integer above / below `N`.
    Greater(String, i64),
    Less(String, i64),
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Requirement::Exists(key) => labels.contains_key(key),
            Requirement::Absent(key) => !labels.contains_key(key),
            Requirement::In(key, values) => labels.get(key).is_some_and(|v| values.contains(v)),
            Requirement::NotIn(key, values) => labels.get(key).is_none_or(|v| !values.contains(v)),
            Requirement::Greater(key, n) => int_label(labels, key).is_some_and(|v| v > *n),
            Requirement::Less(key, n) => int_label(labels, key).is_some_and(|v| v < *n),
        }
    }
}

fn int_label(labels: &BTreeMap<String, String>, key: &str) -> Option<i64> {
    labels.get(key)?.parse().ok()
}

/// A parsed label selector: every requirement must be met (none: everything is selected).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector(Vec<Requirement>);

impl Selector {
    /// Reads `text` in Kubernetes' syntax: `key=value`, `key==value`, `key!=value`, `key`,
    /// `!key`, `key in (a,b)`, `key notin (a,b)`, `key>1`, `key<1`, joined by commas.
    pub fn parse(text: &str) -> anyhow::Result<Selector> {
        let mut requirements = Vec::new();
        for part in split_top_level(text)? {
            let part = part.trim();
            if part.is_empty() {
                if text.trim().is_empty() {
                    continue;
                }
                bail!("label selector {text:?}: an empty requirement");
            }
            requirements.push(requirement(part).with_context(|| format!("label selector {text:?}"))?);
        }
        Ok(Selector(requirements))
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| r.matches(labels))
    }
}

/// `text` split at the commas outside parentheses.
fn split_top_level(text: &str) -> anyhow::Result<Vec<&str>> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' if depth == 0 => depth = 1,
            ')' if depth == 1 => depth = 0,
            '(' | ')' => bail!("label selector {text:?}: unbalanced parentheses"),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        bail!("label selector {text:?}: unbalanced parentheses");
    }
    parts.push(&text[start..]);
    Ok(parts)
}

fn requirement(part: &str) -> anyhow::Result<Requirement> {
    if let Some(key) = part.strip_prefix('!') {
        return Ok(Requirement::Absent(key_of(key)?));
    }
    for (operator, negated) in [("!=", true), ("==", false), ("=", false)] {
        if let Some((key, value)) = part.split_once(operator) {
            let set = BTreeSet::from([value_of(value)?]);
            let key = key_of(key)?;
            return Ok(if negated {
                Requirement::NotIn(key, set)
            } else {
                Requirement::In(key, set)
            });
        }
    }
    for (operator, greater) in [('>', true), ('<', false)] {
        if let Some((key, value)) = part.split_once(operator) {
            let n: i64 = value
                .trim()
                .parse()
                .with_context(|| format!("{part:?}: {:?} is not an integer", value.trim()))?;
            let key = key_of(key)?;
            return Ok(if greater {
                Requirement::Greater(key, n)
            } else {
                Requirement::Less(key, n)
            });
        }
    }
    if let Some(open) = part.find('(') {
        let (head, list) = part.split_at(open);
        let list = list
            .strip_prefix('(')
            .and_then(|l| l.trim_end().strip_suffix(')'))
            .with_context(|| format!("{part:?}: a value list ends in ')'"))?;
        let mut words = head.split_whitespace();
        let (Some(key), Some(operator), None) = (words.next(), words.next(), words.next()) else {
            bail!("{part:?}: expected `KEY in (VALUES)` or `KEY notin (VALUES)`");
        };
        let values = list
            .split(',')
            .map(value_of)
            .collect::<anyhow::Result<BTreeSet<_>>>()?;
        if values.is_empty() || list.trim().is_empty() {
            bail!("{part:?}: `in` and `notin` need at least one value");
        }
        let key = key_of(key)?;
        return match operator {
            "in" => Ok(Requirement::In(key, values)),
            "notin" => Ok(Requirement::NotIn(key, values)),
            other => bail!("{part:?}: unknown operator {other:?} (in, notin)"),
        };
    }
    Ok(Requirement::Exists(key_of(part)?))
}

fn key_of(key: &str) -> anyhow::Result<String> {
    let key = key.trim();
    if key.is_empty()
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
    {
        bail!("{key:?} is not a label key");
    }
    Ok(key.to_string())
}

fn value_of(value: &str) -> anyhow::Result<String> {
    let value = value.trim();
    if !value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        bail!("{value:?} is not a label value");
    }
    Ok(value.to_string())
}

/// The Clusters' labels a selection of ClusterAddons reads, by (namespace, name).
#[derive(Debug)]
pub struct ByCluster {
    selector: Selector,
    clusters: BTreeMap<(String, String), BTreeMap<String, String>>,
}

impl ByCluster {
    /// Reads `selector` and the labels of the Clusters of `namespace` (`None`: all). No
    /// Cluster API in the cluster (its CRD's 404) leaves each Cluster its name label alone.
    pub async fn list(client: &Client, namespace: Option<&str>, selector: &str) -> anyhow::Result<ByCluster> {
        let selector = Selector::parse(selector)?;
        capstan_operator::cli::clusters::ensure_discovered(client).await;
        let api: Api<DynamicObject> = match namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &cluster_resource()),
            None => Api::all_with(client.clone(), &cluster_resource()),
        };
        let clusters = match api.list_metadata(&ListParams::default()).await {
            Ok(list) => list
                .items
                .iter()
                .map(|c| {
                    (
                        (c.namespace().unwrap_or_default(), c.name_any()),
                        c.labels().clone(),
                    )
                })
                .collect(),
            Err(e) if capstan_operator::cli::clusters::is_not_found(&e) => BTreeMap::new(),
            Err(e) => return Err(e).context("listing Clusters for their labels"),
        };
        Ok(ByCluster { selector, clusters })
    }

    /// Whether `addon` and its Cluster (`spec.clusterRef`, in its namespace) have the labels
    /// together: the ClusterAddon's, the Cluster's over them, and the Cluster's name as
    /// `cluster.x-k8s.io/cluster-name`.
    pub fn selects(&self, addon: &ClusterAddon) -> bool {
        let namespace = addon.namespace().unwrap_or_default();
        let cluster = addon.spec.cluster_ref.name.clone().unwrap_or_default();
        let mut labels = addon.labels().clone();
        if let Some(of_cluster) = self.clusters.get(&(namespace, cluster.clone())) {
            labels.extend(of_cluster.clone());
        }
        labels.insert(CLUSTER_NAME_LABEL.to_string(), cluster);
        self.selector.matches(&labels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn selectors_match_as_kubernetes_ones() {
        let canary = labels(&[("ring", "canary"), ("tier", "2")]);
        let main = labels(&[("ring", "main")]);
        let none = labels(&[]);
        #[rustfmt::skip]
        let table: &[(&str, [bool; 3])] = &[
            ("", [true, true, true]),
            ("ring=canary", [true, false, false]),
            ("ring==canary", [true, false, false]),
            (" ring = canary ", [true, false, false]),
            ("ring!=canary", [false, true, true]),
            ("ring", [true, true, false]),
            ("!ring", [false, false, true]),
            ("ring in (canary, main)", [true, true, false]),
            ("ring notin (canary)", [false, true, true]),
            ("ring in (canary,main),tier", [true, false, false]),
            ("tier>1", [true, false, false]),
            ("tier<2", [false, false, false]),
            ("ring=", [false, false, false]),
        ];
        for (text, want) in table {
            let selector = Selector::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e:#}"));
            let got = [&canary, &main, &none].map(|l| selector.matches(l));
            assert_eq!(&got, want, "{text:?}");
        }
    }

    #[test]
    fn bad_selectors_are_refused_with_the_requirement() {
        #[rustfmt::skip]
        let table: &[(&str, &str)] = &[
            ("ring in (a", "unbalanced parentheses"),
            ("ring in ()", "at least one value"),
            ("ring within (a)", "unknown operator"),
            ("a,,b", "an empty requirement"),
            ("tier>x", "not an integer"),
            ("ring=a b", "not a label value"),
            ("=a", "not a label key"),
        ];
        for (text, want) in table {
            let error = format!("{:#}", Selector::parse(text).expect_err(text));
            assert!(error.contains(want), "{text:?}: {error}");
        }
    }

    fn addon(namespace: &str, cluster: &str) -> ClusterAddon {
        let mut addon = ClusterAddon::new(&format!("cluster-addon-{cluster}"), Default::default());
        addon.metadata.namespace = Some(namespace.into());
        addon.metadata.labels = Some(labels(&[("state", "ready"), ("ring", "main")]));
        addon.spec.cluster_ref.name = Some(cluster.into());
        addon
    }

    #[test]
    fn an_addon_is_selected_by_its_clusters_labels_and_name() {
        let by = |selector: &str| ByCluster {
            selector: Selector::parse(selector).expect("selector"),
            clusters: [(("a".to_string(), "c1".to_string()), labels(&[("ring", "canary")]))].into(),
        };
        #[rustfmt::skip]
        let table = [
            ("ring=canary", addon("a", "c1"), true),
            // The Cluster of another namespace.
            ("ring=canary", addon("b", "c1"), false),
            ("ring!=canary", addon("a", "c2"), true),
            ("ring!=main", addon("a", "c2"), false),
            ("cluster.x-k8s.io/cluster-name=c2", addon("a", "c2"), true),
            ("cluster.x-k8s.io/cluster-name=c2,ring=canary", addon("a", "c2"), false),
            ("cluster.x-k8s.io/cluster-name=c1,ring=canary", addon("a", "c1"), true),
            // Its own labels count, the Cluster's over them.
            ("state=ready,ring=canary", addon("a", "c1"), true),
            ("ring=main", addon("a", "c1"), false),
            ("ring=main", addon("a", "c2"), true),
        ];
        for (selector, addon, want) in table {
            assert_eq!(
                by(selector).selects(&addon),
                want,
                "{selector} {:?}",
                addon.metadata
            );
        }
    }
}
