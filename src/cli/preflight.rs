//! `capstan preflight CLUSTER --to STACK[@VERSION]`: one Cluster's pre-flight before a switch
//! to a release of another (or the same) ClusterStack, as the rollout controller gathers it —
//! the workload API server's record of deprecated requests, the Helm releases stored there,
//! the target release rendered offline for the Cluster at its Kubernetes version. Exit code 1
//! when a check blocks.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, DynamicObject};

use capstan_operator::api::{ClusterStack, ClusterStackRelease};
use capstan_operator::cli::preflight::{COUNTER_NOTE, PreflightResult, blocks};
use capstan_operator::cli::preflight::{Evidence, requested_apis, stored_release_apis};
use capstan_operator::cli::preflight::{Rendered, cluster_objects, target_renders};
use capstan_operator::cli::rollout::{ReleaseSeen, Resolved, resolve};
use capstan_operator::cli::workload::{self as workload_cluster, kubeconfig_secret};
use capstan_stack::name::KubernetesVersion;

/// Arguments of `capstan preflight`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The Cluster (Cluster API).
    pub cluster: String,
    /// The ClusterStack (of the Cluster's class namespace) to switch to, and its release
    /// version (default: its newest ready release), e.g. `ferrol-1-29@v2`.
    #[arg(long, value_name = "STACK[@VERSION]")]
    pub to: String,
    /// The Cluster's namespace (default: the context's).
    #[arg(short = 'n', long, value_name = "NS")]
    namespace: Option<String>,
    /// Kubeconfig of the management cluster (default: $KUBECONFIG, else ~/.kube/config).
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use (default: the current context).
    #[arg(long, value_name = "NAME")]
    context: Option<String>,
    /// The target release's files, in any form `capstan render` takes (default: its tag, a
    /// release in the local cache).
    #[arg(long, value_name = "RELEASE")]
    release: Option<String>,
    #[command(flatten)]
    sources: super::source_args::SourceArgs,
    #[command(flatten)]
    repositories: super::repository_args::RepositoryArgs,
    /// Output: a table or json.
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Table)]
    output: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Table,
    Json,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let report = check(args)?;
    let text = match args.output {
        Format::Json => format!("{}\n", serde_json::to_string_pretty(&report.json())?),
        Format::Table => report.table(),
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(if report.blocked() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// One Cluster's pre-flight for its switch to `args.to`.
pub fn check(args: &Args) -> anyhow::Result<Report> {
    let runtime = super::kube::runtime()?;
    let live = runtime.block_on(async {
        let connected = super::kube::connect_to(
            args.kubeconfig.as_deref(),
            args.context.as_deref(),
            args.namespace.as_deref(),
        )
        .await?;
        read_live(&connected.client, &connected.namespace, &args.cluster, &args.to).await
    })?;
    // Opening a release may fetch it (its own runtime): outside the one above.
    let opener = Opener {
        release: args.release.as_deref(),
        sources: &args.sources,
        repositories: &args.repositories,
    };
    report(live, &opener)
}

/// Where the target release's files come from.
pub struct Opener<'a> {
    /// The release in any form `capstan render` takes (default: its tag, in the cache).
    pub release: Option<&'a str>,
    pub sources: &'a super::source_args::SourceArgs,
    pub repositories: &'a super::repository_args::RepositoryArgs,
}

/// The verdicts on what [`read_live`] found, the target release rendered for the Cluster
/// (what `capstan preflight` and `capstan rollout plan --kubeconfig` print). Call it outside
/// an async runtime: opening a release may fetch it.
pub fn report(live: Live, opener: &Opener) -> anyhow::Result<Report> {
    let rendered = render(opener, &live);
    let mut evidence = live.evidence;
    evidence.rendered = Some(rendered);
    let to = KubernetesVersion::parse_release(&live.target.kubernetes)
        .with_context(|| format!("release {}'s Kubernetes version", live.target.release))?;
    Ok(Report {
        cluster: live.key,
        results: evidence.verdicts(to),
        release: live.target.release,
        kubernetes: live.target.kubernetes,
    })
}

/// One Cluster's pre-flight for one step.
pub struct Report {
    /// `namespace/name`.
    pub cluster: String,
    pub release: String,
    pub kubernetes: String,
    pub results: Vec<PreflightResult>,
}

impl Report {
    pub fn blocked(&self) -> bool {
        blocks(&self.results)
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "cluster": self.cluster,
            "to": self.release,
            "kubernetes": self.kubernetes,
            "blocked": self.blocked(),
            "preflight": self.results,
            "note": COUNTER_NOTE,
        })
    }

    pub fn table(&self) -> String {
        let mut out = format!(
            "Cluster {} to {} (Kubernetes {}): {}\n",
            self.cluster,
            self.release,
            self.kubernetes,
            if self.blocked() { "BLOCKED" } else { "ok" }
        );
        let width = self
            .results
            .iter()
            .map(|r| r.check.len())
            .max()
            .unwrap_or(5)
            .max(5);
        out.push_str(&format!("{:width$}  {:7}  REASON\n", "CHECK", "VERDICT"));
        for r in &self.results {
            let verdict = if r.ok { "ok" } else { "blocks" };
            out.push_str(&format!("{:width$}  {verdict:7}  {}\n", r.check, r.reason));
        }
        out.push_str(&format!("Note: {COUNTER_NOTE}.\n"));
        out
    }
}

/// What the management and workload clusters say of one Cluster and its step.
pub struct Live {
    key: String,
    target: Resolved,
    cluster: DynamicObject,
    control_plane: Option<DynamicObject>,
    infra_cluster: Option<DynamicObject>,
    user_values: Vec<capstan_operator::cli::user_values::Layer>,
    evidence: Evidence,
}

/// Reads Cluster `namespace/cluster` (of the management cluster behind `client`), the target
/// `to` (`STACK[@VERSION]`, a ClusterStack of the Cluster's class namespace) and the Cluster's
/// workload cluster: an unreachable workload cluster is evidence (its checks fail with the
/// reason), not an error.
pub async fn read_live(
    client: &Client,
    namespace: &str,
    cluster_name: &str,
    to: &str,
) -> anyhow::Result<Live> {
    // Clusters are read in the Cluster API version the management cluster serves.
    capstan_operator::cli::clusters::ensure_discovered(client).await;
    let clusters: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        namespace,
        &capstan_operator::cli::clusters::cluster_resource(),
    );
    let cluster = clusters
        .get_opt(cluster_name)
        .await
        .with_context(|| format!("reading Cluster {namespace}/{cluster_name}"))?
        .with_context(|| format!("Cluster {namespace}/{cluster_name} does not exist"))?;
    let class_namespace = cluster.data["spec"]["topology"]["classNamespace"]
        .as_str()
        .filter(|ns| !ns.is_empty())
        .unwrap_or(namespace)
        .to_string();
    let (stack, target) = resolve_target(client, &class_namespace, to).await?;
    let reference = |field: &str| referenced(client, namespace, cluster.data["spec"][field].clone());
    let (control_plane, infra_cluster) = (
        reference("controlPlaneRef").await?,
        reference("infrastructureRef").await?,
    );
    let user_values = capstan_operator::cli::user_values::gather(client, &stack, &cluster)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let evidence = workload_evidence(client, namespace, cluster_name).await;
    Ok(Live {
        key: format!("{namespace}/{cluster_name}"),
        target,
        cluster,
        control_plane,
        infra_cluster,
        user_values,
        evidence,
    })
}

/// `STACK[@VERSION]` resolved among the ClusterStackReleases of `namespace`, as a rollout does.
async fn resolve_target(
    client: &Client,
    namespace: &str,
    to: &str,
) -> anyhow::Result<(ClusterStack, Resolved)> {
    let (name, version) = to.split_once('@').unwrap_or((to, "latest"));
    let stack = Api::<ClusterStack>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
        .with_context(|| format!("reading ClusterStack {namespace}/{name}"))?
        .with_context(|| format!("ClusterStack {namespace}/{name} does not exist"))?;
    let Some(stack_name) = capstan_operator::cli::rollout::stack_name_of(&stack) else {
        bail!("ClusterStack {namespace}/{name}: its provider, name and kubernetesVersion make no stack name");
    };
    let releases = Api::<ClusterStackRelease>::namespaced(client.clone(), namespace)
        .list(&Default::default())
        .await
        .with_context(|| format!("listing ClusterStackReleases of {namespace}"))?;
    let seen: Vec<ReleaseSeen> = releases.items.iter().map(ReleaseSeen::of).collect();
    let resolved = resolve(&stack_name, version, &seen).with_context(|| format!("--to {to}"))?;
    Ok((stack, resolved))
}

/// The object a Cluster's reference names (`None` without a reference).
async fn referenced(
    client: &Client,
    namespace: &str,
    reference: serde_json::Value,
) -> anyhow::Result<Option<DynamicObject>> {
    let (Some(api_version), Some(kind), Some(name)) = (
        reference["apiVersion"].as_str(),
        reference["kind"].as_str(),
        reference["name"].as_str(),
    ) else {
        return Ok(None);
    };
    let namespace = reference["namespace"].as_str().unwrap_or(namespace);
    let discovery = capstan_apply::discovery::Discovery::new(client.clone());
    let info = discovery.resolve_api_version(api_version, kind).await?;
    let namespace = Some(namespace).filter(|_| info.namespaced);
    let found = capstan_apply::discovery::api_for(client, &info.resource, namespace)
        .get_opt(name)
        .await
        .with_context(|| format!("reading {kind} {name}"))?;
    Ok(Some(
        found.with_context(|| format!("{kind} {name} does not exist"))?,
    ))
}

/// The workload cluster's evidence (none when Cluster API wrote no kubeconfig yet).
async fn workload_evidence(client: &Client, namespace: &str, cluster: &str) -> Evidence {
    let mut evidence = Evidence::default();
    let name = kubeconfig_secret(cluster);
    let secret = match Api::<Secret>::namespaced(client.clone(), namespace)
        .get_opt(&name)
        .await
    {
        Ok(Some(secret)) => secret,
        Ok(None) => return evidence,
        Err(e) => {
            let why = format!("reading the kubeconfig Secret {namespace}/{name}: {e}");
            evidence.requested = Some(Err(why.clone()));
            evidence.in_use = Some(Err(why));
            return evidence;
        }
    };
    match workload_cluster::connect(&secret).await {
        Ok(found) => {
            evidence.requested = Some(requested_apis(&found.client, &found.server).await);
            evidence.in_use = Some(stored_release_apis(&found.client).await);
        }
        Err(gate) => {
            let why = format!("the workload cluster cannot be read: {gate}");
            evidence.requested = Some(Err(why.clone()));
            evidence.in_use = Some(Err(why));
        }
    }
    evidence
}

/// The target release rendered for the Cluster, or why it could not be.
fn render(opener: &Opener, live: &Live) -> Rendered {
    let release = live.target.release.clone();
    let attempt = || -> anyhow::Result<Rendered> {
        let arg = opener.release.unwrap_or(&release);
        let opened = super::stack_input::open(arg, opener.sources)?;
        let resolver = super::repository_args::LazyResolver::new(opener.repositories, opener.sources);
        let compiled =
            capstan_stack::render::CompiledRelease::with_resolver(&opened.release, Some(&resolver))?;
        let objects = cluster_objects(
            &live.cluster,
            live.control_plane.as_ref(),
            live.infra_cluster.as_ref(),
            compiled.values_template_api(),
        )
        .map_err(anyhow::Error::msg)?;
        let user = live
            .user_values
            .iter()
            .map(capstan_operator::cli::user_values::Layer::parse)
            .collect::<Result<Vec<_>, _>>()
            .map_err(anyhow::Error::msg)?;
        Ok(target_renders(&compiled, &objects, &user))
    };
    attempt().unwrap_or_else(|e| Rendered {
        release: release.clone(),
        objects: Err(format!(
            "could not be rendered: {} (pull it with `capstan releases pull`, or give --release)",
            super::error_chain::error_text(&e)
        )),
    })
}
