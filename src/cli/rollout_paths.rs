//! `capstan rollout plan` across stacks (`spec.from`): the namespace's ClusterStacks and their
//! releases from `--stacks` (what `kubectl get clusterstacks,clusterstackreleases -o yaml`
//! prints), the stacks `from` names, and each Cluster's path to the target — one Kubernetes
//! minor per step — or why it has none, with the operator's own functions
//! (`capstan_operator::cli::rollout::path`).

use std::path::Path;

use anyhow::{Context, bail};
use capstan_apply::object::parse_stream;
use capstan_operator::api::ClusterStack;
use capstan_operator::api::rollout::{ClusterStackRollout, PathStep, PreflightResult};
use capstan_operator::cli::rollout::{
    Assignment, ClusterInfo, Hop, ReleaseSeen, Sources, StackId, Target, newest_ready, path, resolve, sources,
};
use capstan_stack::capi::ClusterFields;
use capstan_stack::name::ReleaseTag;

/// What a rollout across stacks reads besides its Clusters.
pub struct Across {
    /// The stacks `spec.from` resolves to.
    pub sources: Vec<StackId>,
    /// An `auto` that finds nothing, names that find no ClusterStack.
    pub notes: Vec<String>,
    hops: Vec<Hop>,
    /// The release rolled out, or why there is none in `--stacks`.
    target: Result<Target, String>,
    stack: StackId,
}

/// One Cluster's path in `-o json`.
#[derive(serde::Serialize)]
pub struct ClusterPathJson {
    pub cluster: String,
    pub path: Vec<PathStep>,
    /// Why the Cluster has no path (it would be Blocked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
    /// The Cluster's class now (a Cluster on its next step's class already is not checked).
    #[serde(skip)]
    pub class: Option<String>,
    /// With `--kubeconfig`: the live pre-flight of the Cluster's next step (offline: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preflight: Option<Vec<PreflightResult>>,
}

/// The namespace's ClusterStacks and ClusterStackReleases, and where they were read.
pub struct Stacks {
    pub stacks: Vec<NamedStack>,
    pub releases: Vec<ReleaseSeen>,
    /// `--stacks FILE`'s path, or the namespace of the management cluster.
    pub origin: String,
}

impl Stacks {
    /// The ClusterStacks and ClusterStackReleases of `file` (`--stacks`).
    pub fn from_file(file: &Path) -> anyhow::Result<Stacks> {
        let (stacks, releases) = read_stacks(file)?;
        Ok(Stacks {
            stacks,
            releases,
            origin: file.display().to_string(),
        })
    }

    /// The stack of ClusterStack `name`, if it is there.
    pub fn stack_named(&self, name: &str) -> Option<StackId> {
        self.stacks
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, stack)| stack.clone())
    }
}

impl Across {
    /// `None` for a rollout within one stack (no `spec.from`) unless `every_cluster` (the
    /// live pre-flight needs each Cluster's step even then: its one step, the target).
    pub fn read(
        rollout: &ClusterStackRollout,
        stack: &StackId,
        version: &str,
        stacks: Option<&Stacks>,
        every_cluster: bool,
    ) -> anyhow::Result<Option<Across>> {
        let from = rollout.spec.from.as_ref();
        if from.is_none() && !every_cluster {
            return Ok(None);
        }
        let Some(Stacks {
            stacks,
            releases,
            origin,
        }) = stacks
        else {
            bail!(
                "the rollout has spec.from: give the namespace's ClusterStacks and ClusterStackReleases with --stacks FILE (kubectl get clusterstacks,clusterstackreleases -n NS -o yaml), or read them from the management cluster with --kubeconfig"
            );
        };
        let hops: Vec<Hop> = stacks
            .iter()
            .map(|(name, stack)| Hop {
                name: name.clone(),
                newest_ready: newest_ready(stack, releases),
                stack: stack.clone(),
            })
            .collect();
        let found = from.map_or_else(Sources::default, |from| sources(from, stack, &hops));
        let target = resolve(stack, version, releases)
            .map(|r| Target {
                release: r.release,
                class: r.class,
                kubernetes: Some(r.kubernetes),
            })
            .map_err(|e| format!("{e} (in {origin})"));
        Ok(Some(Across {
            sources: found.stacks,
            notes: found.notes,
            hops,
            target,
            stack: stack.clone(),
        }))
    }

    /// `STACK@VERSION` of a step's release: the ClusterStack of its stack and the release's
    /// version (what `capstan preflight --to` takes); `None` when no ClusterStack has it.
    pub fn step_target(&self, step: &PathStep) -> Option<String> {
        let tag = ReleaseTag::parse(&step.release).ok()?;
        let hop = self.hops.iter().find(|hop| &hop.stack == tag.stack())?;
        Some(format!("{}@{}", hop.name, tag.version()))
    }

    /// The path of every Cluster the assignment takes, sorted by Cluster.
    pub fn paths(&self, assignment: &Assignment, clusters: &[ClusterInfo]) -> Vec<ClusterPathJson> {
        let mut members: Vec<&String> = assignment.waves.iter().flat_map(|(_, c)| c).collect();
        members.sort();
        members
            .into_iter()
            .filter_map(|key| clusters.iter().find(|c| &c.key() == key))
            .map(|cluster| {
                let (path, blocked) = match self.path_of(cluster) {
                    Ok(path) => (path, None),
                    Err(why) => (Vec::new(), Some(why)),
                };
                ClusterPathJson {
                    cluster: cluster.key(),
                    path,
                    blocked,
                    class: cluster.class.clone(),
                    preflight: None,
                }
            })
            .collect()
    }

    fn path_of(&self, cluster: &ClusterInfo) -> Result<Vec<PathStep>, String> {
        let target = self.target.as_ref().map_err(Clone::clone)?;
        let class = cluster.class.as_deref().unwrap_or_default();
        let tag = ReleaseTag::parse_cluster_class(class).map_err(|e| format!("class {class}: {e}"))?;
        let steps = path(tag.stack(), &self.stack, target, &self.hops)
            .map_err(|e| format!("no path to {}: {e}", target.release))?;
        Ok(steps.into_iter().map(PathStep::from).collect())
    }
}

/// A ClusterStack's name and its stack.
pub type NamedStack = (String, StackId);

/// The ClusterStacks (name and stack) and ClusterStackReleases of `file`; other kinds are
/// ignored.
fn read_stacks(file: &Path) -> anyhow::Result<(Vec<NamedStack>, Vec<ReleaseSeen>)> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let mut stacks = Vec::new();
    let mut releases = Vec::new();
    for object in parse_stream(&text, &file.display().to_string())? {
        let origin = object.origin.clone();
        match object.kind.as_str() {
            "ClusterStack" => {
                let stack: ClusterStack = serde_json::from_value(object.data)
                    .with_context(|| format!("{origin}: not a valid ClusterStack"))?;
                let Some(id) = capstan_operator::cli::rollout::stack_name_of(&stack) else {
                    bail!(
                        "{origin}: ClusterStack {}: its provider, name and kubernetesVersion make no stack name",
                        object.name
                    );
                };
                stacks.push((object.name, id));
            }
            // Only its status is read: `ready` and `kubernetesVersion`.
            "ClusterStackRelease" => releases.push(ReleaseSeen {
                ready: object.data.pointer("/status/ready").and_then(|v| v.as_bool()) == Some(true),
                kubernetes: object
                    .data
                    .pointer("/status/kubernetesVersion")
                    .and_then(|v| v.as_str())
                    .map(str::to_string),
                name: object.name,
            }),
            _ => {}
        }
    }
    Ok((stacks, releases))
}

/// The table's section of paths: one row per Cluster, its steps or why it has none.
pub fn table(paths: &[ClusterPathJson]) -> Vec<(String, String)> {
    paths
        .iter()
        .map(|c| {
            let text = match &c.blocked {
                Some(why) => format!("Blocked: {why}"),
                None => c
                    .path
                    .iter()
                    .map(|s| match &s.kubernetes {
                        Some(k) => format!("{} ({k})", s.class),
                        None => s.class.clone(),
                    })
                    .collect::<Vec<_>>()
                    .join(" → "),
            };
            (c.cluster.clone(), text)
        })
        .collect()
}

/// The table's section of pre-flight results: per Cluster what blocks its next step, or that
/// nothing does.
pub fn preflight_table(paths: &[ClusterPathJson]) -> Vec<(String, String)> {
    paths
        .iter()
        .map(|c| {
            let text = match (&c.blocked, &c.preflight) {
                (Some(_), _) => "not checked: no path".to_string(),
                (None, None) => "not checked".to_string(),
                (None, Some(results)) => {
                    let blocking: Vec<String> = results
                        .iter()
                        .filter(|r| !r.ok)
                        .map(|r| format!("{}: {}", r.check, r.reason))
                        .collect();
                    match blocking.is_empty() {
                        true => format!("ok ({} checks)", results.len()),
                        false => format!("BLOCKED by {}", blocking.join("; ")),
                    }
                }
            };
            (c.cluster.clone(), text)
        })
        .collect()
}

/// What the wave assignment reads of a Cluster of either version.
pub(super) fn cluster_info(fields: &ClusterFields, object: &serde_json::Value) -> ClusterInfo {
    let labels = object
        .pointer("/metadata/labels")
        .and_then(|l| l.as_object())
        .map(|l| {
            l.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    ClusterInfo {
        namespace: fields.namespace.clone(),
        name: fields.name.clone(),
        labels,
        class: fields.class.as_ref().map(|c| c.name.clone()),
        class_namespace: fields.class_namespace().unwrap_or(&fields.namespace).to_string(),
        version: fields.kubernetes_version.clone(),
        deleting: fields.deleting,
        ..ClusterInfo::default()
    }
}
