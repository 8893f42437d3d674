//! The order of an apply: Namespaces first, then CustomResourceDefinitions (the applier waits
//! until they are Established), then the other kinds in Helm's install order
//! ([`capstan_kinds::INSTALL_ORDER`]), custom resources (kinds Helm does not know) last.
//! Objects of one wave do not depend on each other and are applied concurrently; waves run
//! one after the other. Pruning deletes in the reverse order.

use capstan_kinds::install_rank;

/// The kind of a CRD object (group `apiextensions.k8s.io`).
pub const CRD_KIND: &str = "CustomResourceDefinition";
pub const CRD_GROUP: &str = "apiextensions.k8s.io";

/// Sort key of a kind: lower applies earlier. Namespaces, then CRDs, then Helm's order, then
/// unknown kinds all together (they are custom resources and share the last wave).
pub fn wave(group: &str, kind: &str) -> usize {
    match (group, kind) {
        ("", "Namespace") => 0,
        (CRD_GROUP, CRD_KIND) => 1,
        _ => match install_rank(kind) {
            Some(rank) => 2 + rank,
            None => usize::MAX,
        },
    }
}

/// Whether `(group, kind)` is a CRD.
pub fn is_crd(group: &str, kind: &str) -> bool {
    group == CRD_GROUP && kind == CRD_KIND
}

/// Groups the indices of `items` into waves, in apply order, keeping the input order within
/// a wave. `kind_of` gives each item's `(group, kind)`.
pub fn waves<T>(items: &[T], kind_of: impl Fn(&T) -> (&str, &str)) -> Vec<Vec<usize>> {
    let mut keyed: Vec<(usize, usize)> = items
        .iter()
        .enumerate()
        .map(|(i, it)| {
            let (g, k) = kind_of(it);
            (wave(g, k), i)
        })
        .collect();
    keyed.sort_by_key(|&(w, i)| (w, i));
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut last = None;
    for (w, i) in keyed {
        if last != Some(w) {
            out.push(Vec::new());
            last = Some(w);
        }
        if let Some(wave) = out.last_mut() {
            wave.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_then_crds_then_helm_order_then_custom_resources() {
        let items = [
            ("cluster.x-k8s.io", "ClusterClass"),
            ("apps", "Deployment"),
            ("", "ConfigMap"),
            (CRD_GROUP, CRD_KIND),
            ("", "Namespace"),
            ("infrastructure.cluster.x-k8s.io", "DockerClusterTemplate"),
            ("", "ServiceAccount"),
            ("", "ConfigMap"),
            ("", "PriorityClass"),
        ];
        let w = waves(&items, |(g, k)| (*g, *k));
        let kinds: Vec<Vec<&str>> = w
            .iter()
            .map(|wave| wave.iter().map(|&i| items[i].1).collect())
            .collect();
        assert_eq!(
            kinds,
            vec![
                vec!["Namespace"],
                vec![CRD_KIND],
                vec!["PriorityClass"],
                vec!["ServiceAccount"],
                vec!["ConfigMap", "ConfigMap"],
                vec!["Deployment"],
                vec!["ClusterClass", "DockerClusterTemplate"],
            ]
        );
    }
}
