//! Which Cluster API version to speak, and the apiVersion of a provider object a v1beta2
//! reference names — pure decisions over what the API server says.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::{CapiVersion, GROUP};

/// What discovery says of the group `cluster.x-k8s.io`: the versions it serves (empty when
/// the group is not served at all, i.e. Cluster API is not installed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServedVersions {
    pub versions: Vec<String>,
}

/// Neither version capstan speaks is served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotServed {
    #[error("the API group {GROUP} is not served: Cluster API is not installed on this cluster")]
    NoGroup,
    #[error(
        "the API group {GROUP} serves {served}, neither v1beta2 nor v1beta1: this Cluster API is not supported"
    )]
    OtherVersions { served: String },
}

impl ServedVersions {
    /// The one version to use for every Cluster API request: v1beta2 where it is served
    /// (Cluster API v1.11 and later; v1beta1 is deprecated there and every request warns),
    /// v1beta1 only where v1beta2 is not (v1.10 and earlier). Never both.
    pub fn choose(&self) -> Result<CapiVersion, NotServed> {
        let serves = |v: CapiVersion| self.versions.iter().any(|s| s == v.as_str());
        if serves(CapiVersion::V1Beta2) {
            Ok(CapiVersion::V1Beta2)
        } else if serves(CapiVersion::V1Beta1) {
            Ok(CapiVersion::V1Beta1)
        } else if self.versions.is_empty() {
            Err(NotServed::NoGroup)
        } else {
            Err(NotServed::OtherVersions {
                served: self.versions.join(", "),
            })
        }
    }
}

/// The apiVersion a v1beta2 reference to a provider object of `group` stands for, from the
/// labels of the provider's CRD, as Cluster API's conversion finds it: the newest contract
/// the CRD declares a label for (`cluster.x-k8s.io/v1beta2`, else `…/v1beta1`), and of that
/// label's `_`-separated versions the latest in Kubernetes' version order
/// (`v1beta2` > `v1beta1` > `v1alpha4`). `None` without such a label.
pub fn api_version_from_contract(group: &str, crd_labels: &BTreeMap<String, String>) -> Option<String> {
    for contract in [CapiVersion::V1Beta2, CapiVersion::V1Beta1] {
        let Some(versions) = crd_labels.get(&contract.api_version()).filter(|v| !v.is_empty()) else {
            continue;
        };
        let latest = versions
            .split('_')
            .filter(|v| !v.is_empty())
            .max_by(|a, b| kube_version_order(a, b))?;
        return Some(format!("{group}/{latest}"));
    }
    None
}

/// Kubernetes' version priority: GA before beta before alpha, higher numbers first within
/// each; versions that do not look like Kubernetes versions last, alphabetically. Returns
/// `Greater` when `a` has the higher priority.
pub fn kube_version_order(a: &str, b: &str) -> Ordering {
    match (parse_kube_version(a), parse_kube_version(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        (None, None) => b.cmp(a),
    }
}

/// `(stability, major, minor)`, ordered so that a higher tuple is a higher priority.
fn parse_kube_version(v: &str) -> Option<(u8, u64, u64)> {
    let rest = v.strip_prefix('v')?;
    let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    let major: u64 = rest[..digits].parse().ok()?;
    if major == 0 {
        return None;
    }
    let tail = &rest[digits..];
    if tail.is_empty() {
        return Some((2, major, 0));
    }
    let (stability, number) = if let Some(n) = tail.strip_prefix("beta") {
        (1, n)
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (0, n)
    } else {
        return None;
    };
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((stability, major, number.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choose_v1beta2_where_served_else_v1beta1_never_both() {
        let table: [(&[&str], Result<CapiVersion, NotServed>); 6] = [
            (&["v1beta1"], Ok(CapiVersion::V1Beta1)),            // CAPI ≤ v1.10
            (&["v1beta2", "v1beta1"], Ok(CapiVersion::V1Beta2)), // v1.11–v1.15
            (&["v1beta1", "v1beta2"], Ok(CapiVersion::V1Beta2)), // order does not matter
            (&["v1beta2"], Ok(CapiVersion::V1Beta2)),            // v1.16
            (&[], Err(NotServed::NoGroup)),
            (
                &["v1alpha4"],
                Err(NotServed::OtherVersions {
                    served: "v1alpha4".into(),
                }),
            ),
        ];
        for (served, want) in table {
            let got = ServedVersions {
                versions: served.iter().map(|s| s.to_string()).collect(),
            }
            .choose();
            assert_eq!(got, want, "{served:?}");
        }
    }

    type Labels<'a> = &'a [(&'a str, &'a str)];

    #[test]
    fn api_version_from_contract_labels() {
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let g = "controlplane.cluster.x-k8s.io";
        let table: [(Labels<'_>, Option<&str>); 6] = [
            // KubeadmControlPlane of v1.14: both contracts, v1beta2 the newest.
            (
                &[
                    ("cluster.x-k8s.io/v1beta1", "v1beta1"),
                    ("cluster.x-k8s.io/v1beta2", "v1beta2"),
                ],
                Some("controlplane.cluster.x-k8s.io/v1beta2"),
            ),
            // A provider on the v1beta1 contract only, with several versions.
            (
                &[("cluster.x-k8s.io/v1beta1", "v1alpha4_v1beta1_v1alpha3")],
                Some("controlplane.cluster.x-k8s.io/v1beta1"),
            ),
            // The v1beta2 contract served by a provider's v1beta1 API (CAPO).
            (
                &[("cluster.x-k8s.io/v1beta2", "v1beta1_v1alpha7")],
                Some("controlplane.cluster.x-k8s.io/v1beta1"),
            ),
            // An empty label does not count.
            (
                &[
                    ("cluster.x-k8s.io/v1beta2", ""),
                    ("cluster.x-k8s.io/v1beta1", "v1beta1"),
                ],
                Some("controlplane.cluster.x-k8s.io/v1beta1"),
            ),
            (&[("cluster.x-k8s.io/provider", "control-plane-kubeadm")], None),
            (
                &[("cluster.x-k8s.io/v1beta2", "v1_v2beta1")],
                Some("controlplane.cluster.x-k8s.io/v1"),
            ),
        ];
        for (pairs, want) in table {
            assert_eq!(
                api_version_from_contract(g, &labels(pairs)).as_deref(),
                want,
                "{pairs:?}"
            );
        }
    }

    #[test]
    fn kubernetes_version_priority() {
        let mut versions = vec![
            "v1alpha1",
            "foo",
            "v1beta1",
            "v2",
            "v1",
            "v1beta2",
            "v11alpha2",
            "v10beta3",
            "v12alpha1",
            "bar",
        ];
        versions.sort_by(|a, b| kube_version_order(b, a));
        assert_eq!(
            versions,
            [
                "v2",
                "v1",
                "v10beta3",
                "v1beta2",
                "v1beta1",
                "v12alpha1",
                "v11alpha2",
                "v1alpha1",
                "bar",
                "foo"
            ]
        );
    }
}
