//! `capstan rollout plan`: offline, which Cluster goes in which wave of a ClusterStackRollout,
//! with the operator's own assignment (`capstan_operator::cli::rollout`).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use capstan_apply::object::{DesiredObject, parse_stream};
use capstan_operator::api::ClusterStack;
use capstan_operator::api::rollout::ClusterStackRollout;
use capstan_operator::cli::rollout::{Assignment, ClusterInfo, StackId, assign_across};
use capstan_stack::capi::schema::unknown_fields;
use capstan_stack::capi::{self, ClusterFields};
use capstan_stack::name::KubernetesVersion;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use super::preflight::Opener;
use super::rollout_live::Management;
use super::rollout_paths::{Across, ClusterPathJson, Stacks};
use capstan_operator::cli::preflight::COUNTER_NOTE;

/// Arguments of `capstan rollout plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// The ClusterStackRollout (YAML).
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    file: PathBuf,
    /// The Clusters (YAML stream or `kind: List`; with --kubeconfig, default: the management
    /// cluster's).
    #[arg(long, value_name = "FILE", required_unless_present = "kubeconfig")]
    clusters: Option<PathBuf>,
    /// The ClusterStack (YAML) whose provider, name and Kubernetes version the rollout's
    /// Clusters must be on; needed when its name is not `<provider>-<name>-<major>-<minor>`.
    #[arg(long, value_name = "FILE")]
    stack_file: Option<PathBuf>,
    /// The namespace's ClusterStacks and ClusterStackReleases (YAML, as `kubectl get
    /// clusterstacks,clusterstackreleases -o yaml` prints): needed for a rollout with
    /// `spec.from`, whose Clusters' paths across stacks are shown (with --kubeconfig,
    /// default: the management cluster's).
    #[arg(long, value_name = "FILE")]
    stacks: Option<PathBuf>,
    /// Kubeconfig of the management cluster: also run the pre-flight of each Cluster's next
    /// step against its workload cluster (as `capstan preflight`) and show what blocks it.
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use (default: the current context).
    #[arg(long, value_name = "NAME", requires = "kubeconfig")]
    context: Option<String>,
    #[command(flatten)]
    sources: super::source_args::SourceArgs,
    #[command(flatten)]
    repositories: super::repository_args::RepositoryArgs,
    /// The release version rolled out (default: the rollout's `spec.version`).
    #[arg(long)]
    version: Option<String>,
    /// Namespace of the rollout when its file has none (default `default`).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// Output: a table or json.
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Table)]
    output: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Table,
    Json,
}

pub fn run_plan(args: &PlanArgs) -> anyhow::Result<()> {
    let rollout = read_rollout(&args.file)?;
    let namespace = rollout
        .metadata
        .namespace
        .clone()
        .or_else(|| args.namespace.clone())
        .unwrap_or_else(|| "default".to_string());
    let management = match &args.kubeconfig {
        Some(file) => Some(Management::connect(file, args.context.as_deref())?),
        None => None,
    };
    let stacks = match (&args.stacks, &management) {
        (Some(file), _) => Some(Stacks::from_file(file)?),
        (None, Some(management)) => Some(management.stacks(&namespace)?),
        (None, None) => None,
    };
    let stack = match &args.stack_file {
        Some(path) => read_stack(path)?,
        None => match stacks.as_ref().and_then(|s| s.stack_named(&rollout.spec.cluster_stack)) {
            Some(stack) => stack,
            None => StackId::parse(&rollout.spec.cluster_stack).with_context(|| {
                format!(
                    "{}: spec.clusterStack {:?} does not say the stack (a name like docker-ferrol-1-27); give the ClusterStack with --stack-file",
                    args.file.display(),
                    rollout.spec.cluster_stack
                )
            })?,
        },
    };
    let clusters = match (&args.clusters, &management) {
        (Some(file), _) => read_clusters(file)?,
        (None, Some(management)) => management.clusters()?,
        (None, None) => {
            bail!("give the Clusters with --clusters FILE, or the management cluster with --kubeconfig")
        }
    };
    let version = args.version.as_deref().unwrap_or(&rollout.spec.version);
    let across = Across::read(&rollout, &stack, version, stacks.as_ref(), management.is_some())?;
    let sources = across.as_ref().map_or(&[][..], |a| a.sources.as_slice());
    let assignment = assign_across(&rollout.spec, &namespace, &stack, sources, &clusters);
    let mut paths = across.as_ref().map(|a| a.paths(&assignment, &clusters));
    if let (Some(management), Some(across), Some(paths)) = (&management, &across, &mut paths) {
        let opener = Opener {
            release: None,
            sources: &args.sources,
            repositories: &args.repositories,
        };
        super::rollout_live::run_preflight(management, across, paths, &opener);
    }
    let text = match args.output {
        Format::Json => {
            let mut json = plan_json(&assignment);
            json.clusters = paths;
            format!("{}\n", serde_json::to_string_pretty(&json)?)
        }
        Format::Table => {
            let mut text = table(&assignment, &stack, version);
            if let Some(across) = &across {
                for note in &across.notes {
                    text.push_str(&format!("\n{note}\n"));
                }
            }
            if let Some(paths) = &paths {
                text.push('\n');
                push_table(
                    &mut text,
                    ("CLUSTER", "PATH"),
                    &super::rollout_paths::table(paths),
                );
                if management.is_some() {
                    text.push('\n');
                    push_table(
                        &mut text,
                        ("CLUSTER", "PRE-FLIGHT"),
                        &super::rollout_paths::preflight_table(paths),
                    );
                    text.push_str(&format!("\nNote: {COUNTER_NOTE}.\n"));
                }
            }
            text
        }
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}

fn read_objects(path: &Path) -> anyhow::Result<Vec<DesiredObject>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(parse_stream(&text, &path.display().to_string())?)
}

/// The one ClusterStackRollout of `path`, refused with the fields its schema does not know
/// (kubectl's strict field validation).
fn read_rollout(path: &Path) -> anyhow::Result<ClusterStackRollout> {
    let objects = read_objects(path)?;
    let mut rollouts = objects.into_iter().filter(|o| o.kind == "ClusterStackRollout");
    let (Some(object), None) = (rollouts.next(), rollouts.next()) else {
        bail!("{}: expected exactly one ClusterStackRollout", path.display());
    };
    refuse_unknown_fields(&object, &ClusterStackRollout::crd())?;
    let origin = object.origin.clone();
    serde_json::from_value(object.data).with_context(|| format!("{origin}: not a valid ClusterStackRollout"))
}

/// Refuses `object` when it has fields the CRD's schema of its version does not declare,
/// naming them as kubectl's strict decoding does.
fn refuse_unknown_fields(object: &DesiredObject, crd: &CustomResourceDefinition) -> anyhow::Result<()> {
    let version = object.version.as_str();
    let Some(schema) = crd
        .spec
        .versions
        .iter()
        .find(|v| v.name == version)
        .and_then(|v| v.schema.as_ref())
        .and_then(|s| s.open_api_v3_schema.as_ref())
    else {
        bail!(
            "{}: {} of version {} is not served by capstan's CRD (versions: {})",
            object.origin,
            object.kind,
            object.version,
            crd.spec
                .versions
                .iter()
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    };
    let unknown = unknown_fields(&object.data, &serde_json::to_value(schema)?);
    if !unknown.is_empty() {
        let list: Vec<String> = unknown.iter().map(|f| format!("unknown field {f:?}")).collect();
        bail!(
            "{}: {} {}: strict decoding error: {}",
            object.origin,
            object.kind,
            object.name,
            list.join(", ")
        );
    }
    Ok(())
}

/// The stack of the one ClusterStack of `path`.
fn read_stack(path: &Path) -> anyhow::Result<StackId> {
    let objects = read_objects(path)?;
    let mut stacks = objects.into_iter().filter(|o| o.kind == "ClusterStack");
    let (Some(object), None) = (stacks.next(), stacks.next()) else {
        bail!("{}: expected exactly one ClusterStack", path.display());
    };
    refuse_unknown_fields(&object, &ClusterStack::crd())?;
    let origin = object.origin.clone();
    let stack: ClusterStack =
        serde_json::from_value(object.data).with_context(|| format!("{origin}: not a valid ClusterStack"))?;
    let kubernetes = KubernetesVersion::parse(&stack.spec.kubernetes_version)
        .with_context(|| format!("{origin}: spec.kubernetesVersion"))?;
    StackId::new(&stack.spec.provider, &stack.spec.name, kubernetes)
        .with_context(|| format!("{origin}: spec"))
}

/// The Clusters of `path` (v1beta1 or v1beta2, read through one typed model); other kinds
/// are ignored, a Cluster whose needed fields cannot be read is refused.
fn read_clusters(path: &Path) -> anyhow::Result<Vec<ClusterInfo>> {
    let mut clusters = Vec::new();
    for object in read_objects(path)? {
        if object.kind != "Cluster" || object.group != capi::GROUP {
            continue;
        }
        let fields = ClusterFields::from_object(&object.data)
            .with_context(|| format!("{}: Cluster {}", object.origin, object.name))?;
        clusters.push(super::rollout_paths::cluster_info(&fields, &object.data));
    }
    Ok(clusters)
}

/// `-o json`: `{"waves": [{"name", "clusters"}], "excluded": [{"cluster", "reason"}]}`, in
/// this order; with `spec.from` also `"clusters": [{"cluster", "path", "blocked"}]`.
#[derive(serde::Serialize)]
struct PlanJson<'a> {
    waves: Vec<WaveJson<'a>>,
    excluded: Vec<ExcludedJson<'a>>,
    /// With `spec.from`: each Cluster's path across stacks.
    #[serde(skip_serializing_if = "Option::is_none")]
    clusters: Option<Vec<ClusterPathJson>>,
}

#[derive(serde::Serialize)]
struct WaveJson<'a> {
    name: &'a str,
    clusters: &'a [String],
}

#[derive(serde::Serialize)]
struct ExcludedJson<'a> {
    cluster: &'a str,
    reason: &'a str,
}

fn plan_json(assignment: &Assignment) -> PlanJson<'_> {
    PlanJson {
        waves: assignment
            .waves
            .iter()
            .map(|(name, clusters)| WaveJson { name, clusters })
            .collect(),
        excluded: assignment
            .excluded
            .iter()
            .map(|(cluster, reason)| ExcludedJson { cluster, reason })
            .collect(),
        clusters: None,
    }
}

fn table(assignment: &Assignment, stack: &StackId, version: &str) -> String {
    let mut out = format!("Rollout of {stack} version {version}\n\n");
    let rows: Vec<(String, String)> = assignment
        .waves
        .iter()
        .map(|(name, clusters)| {
            let list = if clusters.is_empty() {
                "(none)".to_string()
            } else {
                clusters.join(", ")
            };
            (name.clone(), list)
        })
        .collect();
    push_table(&mut out, ("WAVE", "CLUSTERS"), &rows);
    if !assignment.excluded.is_empty() {
        out.push('\n');
        push_table(&mut out, ("EXCLUDED", "REASON"), &assignment.excluded);
    }
    out
}

fn push_table(out: &mut String, header: (&str, &str), rows: &[(String, String)]) {
    let width = rows
        .iter()
        .map(|(a, _)| a.len())
        .chain([header.0.len()])
        .max()
        .unwrap_or(0);
    out.push_str(&format!("{:width$}  {}\n", header.0, header.1));
    for (a, b) in rows {
        out.push_str(&format!("{a:width$}  {b}\n"));
    }
}
