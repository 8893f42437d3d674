//! `capstan rollout approve NAME --cluster NS/NAME --force`: lets one Blocked Cluster go
//! despite its pre-flight, as AKS's force upgrade does — the annotation `capstan.dev/force`
//! gets `NS/NAME@WHO` (beside the entries already there, one per Cluster); the operator
//! records who and when in the Cluster's status, for its current step only.

use anyhow::{Context, bail};
use kube::api::{Api, Patch, PatchParams};

use capstan_operator::api::rollout::{ClusterPhase, ClusterStackRollout, FORCE_ANNOTATION};

/// The annotation's new value: `current`'s entries for other Clusters, then `cluster@who`.
pub fn force_value(current: Option<&str>, cluster: &str, who: &str) -> String {
    let mut entries: Vec<String> = current
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .filter(|e| e.split_once('@').map_or(*e, |(name, _)| name) != cluster)
        .map(str::to_string)
        .collect();
    entries.push(format!("{cluster}@{who}"));
    entries.join(",")
}

/// Sets the force annotation for `cluster` on `rollout`; refuses a Cluster the rollout does
/// not hold, says when it is not Blocked (the force then waits for a pre-flight that blocks).
pub async fn force(
    api: &Api<ClusterStackRollout>,
    params: &PatchParams,
    rollout: &ClusterStackRollout,
    cluster: &str,
    by: Option<&str>,
) -> anyhow::Result<()> {
    let namespace = rollout.metadata.namespace.as_deref().unwrap_or_default();
    let name = rollout.metadata.name.as_deref().unwrap_or_default();
    if cluster
        .split_once('/')
        .is_none_or(|(ns, n)| ns.is_empty() || n.is_empty())
    {
        bail!("--cluster {cluster:?}: give the Cluster as namespace/name");
    }
    let entry = rollout
        .status
        .as_ref()
        .and_then(|s| s.clusters.iter().find(|c| c.name == cluster));
    let Some(entry) = entry else {
        bail!(
            "ClusterStackRollout {namespace}/{name} holds no Cluster {cluster} (see capstan rollout status {name})"
        );
    };
    let who = by
        .map(str::to_string)
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| "unknown".to_string());
    if who.contains([',', '@']) {
        bail!("--by {who:?}: a name without ',' or '@'");
    }
    let current = rollout
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(FORCE_ANNOTATION))
        .map(String::as_str);
    let value = force_value(current, cluster, &who);
    let patch = serde_json::json!({"metadata": {"annotations": {FORCE_ANNOTATION: value}}});
    api.patch(name, params, &Patch::Merge(&patch))
        .await
        .with_context(|| format!("forcing {cluster} in ClusterStackRollout {namespace}/{name}"))?;
    let note = if entry.phase == ClusterPhase::Blocked {
        String::new()
    } else {
        format!(
            " (it is {:?} now: the force counts once its pre-flight blocks it)",
            entry.phase
        )
    };
    println!(
        "ClusterStackRollout {namespace}/{name}: {cluster} let go by {who} despite its pre-flight{note}"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::force_value;

    #[test]
    fn the_force_annotation_keeps_other_clusters_and_replaces_this_ones() {
        let rows: [(Option<&str>, &str); 4] = [
            (None, "t/a@alice"),
            (Some(""), "t/a@alice"),
            (Some("t/b@bob"), "t/b@bob,t/a@alice"),
            (Some("t/a@carol, t/b"), "t/b,t/a@alice"),
        ];
        for (current, want) in rows {
            assert_eq!(force_value(current, "t/a", "alice"), want, "{current:?}");
        }
    }
}
