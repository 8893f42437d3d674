//! One ClusterStackRelease a row (`capstan get releases`), with the Clusters on it.

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use serde::Serialize;

use capstan_operator::api::{ClusterAddon, ClusterStackRelease, SignedDependency};

use super::super::table::Table;
use super::{Layout, ObjectCount, Readiness, age_cell, frame, push_row, release_tag, rfc3339};

/// One ClusterStackRelease, as `capstan get releases` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseRow {
    pub namespace: String,
    pub name: String,
    pub kubernetes_version: Option<String>,
    pub ready: Readiness,
    pub objects: ObjectCount,
    /// Clusters whose addons were last applied from this release (ClusterAddons of the
    /// namespace with it as `status.appliedClusterStack`).
    pub clusters: usize,
    pub created: Option<String>,
    /// Who signed the release (`status.verifiedBy`), when its stack has a policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified_by: Option<String>,
    /// The chart dependencies a policy verified, with their signers (`status.dependencies`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<SignedDependency>,
}

impl ReleaseRow {
    /// Who signed the release and its dependencies, in one word: `release=SIGNER`, then
    /// `NAME@VERSION=SIGNER` per dependency, comma-separated, each signer by the first word of
    /// its name (the key or certificate identity; `-o json` has the whole); empty when nothing
    /// was verified.
    pub fn signed_cell(&self) -> String {
        let short = |signer: &str| signer.split_whitespace().next().unwrap_or_default().to_string();
        self.verified_by
            .iter()
            .map(|signer| format!("release={}", short(signer)))
            .chain(
                self.dependencies
                    .iter()
                    .map(|d| format!("{}@{}={}", d.name, d.version, short(&d.signer))),
            )
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The row of `release`; `addons` are the ClusterAddons listed with it.
    pub fn of(release: &ClusterStackRelease, addons: &[ClusterAddon]) -> ReleaseRow {
        let status = release.status.clone().unwrap_or_default();
        let namespace = release.namespace().unwrap_or_default();
        let name = release.name_any();
        let tag = release_tag(&name);
        let clusters = addons
            .iter()
            .filter(|a| a.namespace().as_deref() == Some(namespace.as_str()))
            .filter_map(|a| a.status.as_ref()?.applied_cluster_stack.as_deref())
            .filter(|applied| *applied == name || (tag.is_some() && release_tag(applied) == tag))
            .count();
        ReleaseRow {
            kubernetes_version: status.kubernetes_version.clone(),
            ready: Readiness::of(&status.conditions, status.ready),
            objects: ObjectCount::of(&status.resources),
            clusters,
            created: rfc3339(&release.metadata.creation_timestamp),
            verified_by: status.verified_by.clone(),
            dependencies: status.dependencies.clone(),
            namespace,
            name,
        }
    }
}

/// The table of `capstan get releases`.
pub fn releases_table(rows: &[ReleaseRow], layout: Layout, now: Timestamp) -> Table {
    let mut table = frame(
        layout,
        &["NAME", "K8S", "READY", "OBJECTS", "CLUSTERS", "AGE"],
        &["SIGNED", "REASON"],
    );
    for row in rows {
        let main = [
            row.name.clone(),
            row.kubernetes_version.clone().unwrap_or_default(),
            row.ready.status.clone(),
            row.objects.cell(),
            row.clusters.to_string(),
            age_cell(now, row.created.as_deref()),
        ];
        let wide = || vec![row.signed_cell(), row.ready.reason.clone()];
        push_row(&mut table, layout, &row.namespace, main, wide, row.ready.text());
    }
    table
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    #[test]
    fn releases_count_the_clusters_on_them() {
        let mut release = ClusterStackRelease::new("docker-ferrol-1-27-v1", Default::default());
        release.metadata.namespace = Some("tenant".into());
        let row = ReleaseRow::of(&release, &fixtures());
        assert_eq!(row.clusters, 1);
        assert_eq!(row.ready.status, "Unknown");
        assert_eq!(row.signed_cell(), "", "nothing verified");
        let json = serde_json::to_value(&row).unwrap();
        assert!(
            json.get("verifiedBy").is_none() && json.get("dependencies").is_none(),
            "{json}"
        );
    }

    #[test]
    fn releases_show_who_signed_them_and_their_dependencies() {
        let mut release = ClusterStackRelease::new("docker-ferrol-1-27-v1", Default::default());
        release.metadata.namespace = Some("tenant".into());
        let dependency = |name: &str, signer: &str| SignedDependency {
            chart: "ferrol-cluster-class".into(),
            name: name.into(),
            version: "0.1.0".into(),
            repository: "https://charts.example".into(),
            method: "provenance".into(),
            signer: signer.into(),
        };
        release.status = Some(capstan_operator::api::ClusterStackReleaseStatus {
            verified_by: Some("sha256:ab".into()),
            dependencies: vec![
                dependency("demo", "2F9C (Signer <s@x>)"),
                dependency("other", "sha256:cd"),
            ],
            ..Default::default()
        });
        let row = ReleaseRow::of(&release, &[]);
        assert_eq!(
            row.signed_cell(),
            "release=sha256:ab,demo@0.1.0=2F9C,other@0.1.0=sha256:cd"
        );
        let json = serde_json::to_value(&row).unwrap();
        assert_eq!(json["verifiedBy"], "sha256:ab");
        assert_eq!(json["dependencies"][0]["signer"], "2F9C (Signer <s@x>)");
        assert_eq!(json["dependencies"][1]["method"], "provenance");
        release.status.as_mut().unwrap().verified_by = None;
        assert_eq!(
            ReleaseRow::of(&release, &[]).signed_cell(),
            "demo@0.1.0=2F9C,other@0.1.0=sha256:cd"
        );
    }
}
