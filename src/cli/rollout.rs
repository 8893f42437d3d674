//! `capstan rollout …`: follow and steer a ClusterStackRollout — `status` (a table per wave
//! and per Cluster, exit code 0 complete, 1 halted, 2 still under way), `approve` (a Manual
//! wave), `pause` and `resume`. They read and patch the object only; the operator acts.
//! `plan` (offline, which Cluster goes in which wave) is in `rollout_plan`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};

use super::kube::{connect_to, parse_duration, runtime};
use capstan_operator::api::conditions;
use capstan_operator::api::rollout::{
    ClusterRolloutStatus, ClusterStackRollout, ClusterStackRolloutStatus, RolloutPhase, WavePhase,
};

use capstan_operator::cli::rollout::{APPROVE_ANNOTATION, RESUME_ANNOTATION};
/// Field manager of the CLI's patches.
const FIELD_MANAGER: &str = "capstan-cli";

fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PatchParams::default()
    }
}

/// Arguments of `capstan rollout`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Which Cluster goes in which wave (offline): the rollout from -f, the Clusters from
    /// --clusters (a YAML stream or a `kind: List`, as `kubectl get clusters -o yaml` prints).
    Plan(Box<super::rollout_plan::PlanArgs>),
    /// Where a rollout stands: its waves and Clusters (exit code 0 complete, 1 halted, 2 under
    /// way; with --watch, waits until complete or halted).
    Status(StatusArgs),
    /// Approve a Manual wave (default: the wave waiting for approval).
    Approve(ApproveArgs),
    /// Pause a rollout: nothing more is switched until `resume` (Clusters switched go on).
    Pause(TargetArgs),
    /// Resume a paused rollout, or a halted one (its failed Clusters stay failed).
    Resume(TargetArgs),
}

/// The rollout and the cluster it is on.
#[derive(Debug, clap::Args)]
struct TargetArgs {
    /// The ClusterStackRollout.
    name: String,
    /// Its namespace (default: the context's).
    #[arg(short = 'n', long, value_name = "NS")]
    namespace: Option<String>,
    /// Kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster).
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use (default: the current context).
    #[arg(long, value_name = "NAME")]
    context: Option<String>,
}

#[derive(Debug, clap::Args)]
struct StatusArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Follow the rollout, printing each change, until it completes or halts.
    #[arg(short = 'w', long)]
    watch: bool,
    /// Longest wait with --watch (e.g. 30m); then exit code 2.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION", requires = "watch")]
    timeout: Option<Duration>,
    /// Also show what the rollout changes: `capstan releases diff` of each release Clusters
    /// come from to the target, from the stack's source.
    #[arg(long)]
    diff: bool,
}

#[derive(Debug, clap::Args)]
struct ApproveArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// The wave to approve (default: the one waiting for approval).
    #[arg(long, value_name = "WAVE", conflicts_with = "force")]
    wave: Option<String>,
    /// With --force: the Blocked Cluster to let go (`namespace/name`).
    #[arg(long, value_name = "NS/NAME", requires = "force")]
    cluster: Option<String>,
    /// Let the --cluster go despite its pre-flight, for its current step (annotation
    /// capstan.dev/force: `NS/NAME@WHO`, recorded in the Cluster's status).
    #[arg(long, requires = "cluster")]
    force: bool,
    /// Who lets it go, as recorded (default: $USER).
    #[arg(long, value_name = "NAME", requires = "force")]
    by: Option<String>,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let done = |()| ExitCode::SUCCESS;
    if let Command::Plan(plan) = &args.command {
        return super::rollout_plan::run_plan(plan).map(done);
    }
    let runtime = runtime()?;
    match &args.command {
        Command::Plan(plan) => super::rollout_plan::run_plan(plan).map(done),
        Command::Status(status) => run_status(&runtime, status),
        Command::Approve(approve) => runtime.block_on(run_approve(approve)).map(done),
        Command::Pause(target) => runtime.block_on(set_paused(target, true)).map(done),
        Command::Resume(target) => runtime.block_on(run_resume(target)).map(done),
    }
}

async fn api_of(target: &TargetArgs) -> anyhow::Result<(Api<ClusterStackRollout>, String, Client)> {
    let connected = connect_to(
        target.kubeconfig.as_deref(),
        target.context.as_deref(),
        target.namespace.as_deref(),
    )
    .await?;
    let api = Api::namespaced(connected.client.clone(), &connected.namespace);
    Ok((api, connected.namespace, connected.client))
}

async fn read(
    api: &Api<ClusterStackRollout>,
    namespace: &str,
    name: &str,
) -> anyhow::Result<ClusterStackRollout> {
    api.get_opt(name)
        .await
        .with_context(|| format!("reading ClusterStackRollout {namespace}/{name}"))?
        .with_context(|| format!("ClusterStackRollout {namespace}/{name} does not exist"))
}

/// How `status` ends for a phase: `Some(code)` once the rollout is done either way.
fn final_code(phase: Option<&RolloutPhase>) -> Option<u8> {
    match phase {
        Some(RolloutPhase::Complete) => Some(0),
        Some(RolloutPhase::Halted) => Some(1),
        _ => None,
    }
}

/// Exit code of `status` for a rollout still under way.
const UNDER_WAY: u8 = 2;

/// `status`: the table now; with --diff the releases compared (blocking, outside the
/// runtime: releases are fetched and rendered); with --watch each change until done.
fn run_status(runtime: &tokio::runtime::Runtime, args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let (rollout, inputs) = runtime.block_on(async {
        let (api, namespace, client) = api_of(&args.target).await?;
        let rollout = read(&api, &namespace, &args.target.name).await?;
        print!("{}", render_status(&rollout, Timestamp::now()));
        std::io::stdout().flush()?;
        let inputs = match args.diff {
            true => diff_inputs(&client, &rollout).await?,
            false => None,
        };
        anyhow::Ok((rollout, inputs))
    })?;
    if let Some(inputs) = inputs {
        print_diffs(&inputs)?;
    }
    let phase = rollout.status.as_ref().map(|s| &s.phase);
    if let Some(code) = final_code(phase) {
        return Ok(ExitCode::from(code));
    }
    if !args.watch {
        return Ok(ExitCode::from(UNDER_WAY));
    }
    runtime.block_on(watch_status(args, rollout))
}

/// Follows the rollout, printing the table again when something other than the ages
/// changed, until it completes, halts or --timeout passes.
async fn watch_status(args: &StatusArgs, mut current: ClusterStackRollout) -> anyhow::Result<ExitCode> {
    let (api, namespace, _) = api_of(&args.target).await?;
    let now = Timestamp::now;
    let mut shown = render_status(&current, now());
    let started = Instant::now();
    let mut out = std::io::stdout().lock();
    loop {
        if let Some(code) = final_code(current.status.as_ref().map(|s| &s.phase)) {
            return Ok(ExitCode::from(code));
        }
        if args.timeout.is_some_and(|limit| started.elapsed() > limit) {
            writeln!(out, "timed out waiting for the rollout to complete or halt")?;
            return Ok(ExitCode::from(UNDER_WAY));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        current = read(&api, &namespace, &args.target.name).await?;
        let text = render_status(&current, now());
        if strip_ages(&text) != strip_ages(&shown) {
            writeln!(out)?;
            write!(out, "{text}")?;
            out.flush()?;
            shown = text;
        }
    }
}

/// The text without its AGE/SINCE column values, to tell a change from time passing.
fn strip_ages(text: &str) -> String {
    text.lines()
        .map(|line| line.rsplit_once("  ").map_or(line, |(head, _)| head))
        .collect::<Vec<_>>()
        .join("\n")
}

fn phase_text<T: std::fmt::Debug>(phase: &T) -> String {
    format!("{phase:?}")
}

/// `12s`, `4m3s`, `2h5m`, like kubectl's ages.
fn age(since: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>, now: Timestamp) -> String {
    let Some(since) = since else { return "-".into() };
    let seconds = now.duration_since(since.0).as_secs().max(0);
    match seconds {
        0..=59 => format!("{seconds}s"),
        60..=3599 => format!("{}m{}s", seconds / 60, seconds % 60),
        _ => format!("{}h{}m", seconds / 3600, (seconds % 3600) / 60),
    }
}

/// Left-aligned columns two spaces apart; the last column is not padded.
fn columns(rows: &[Vec<String>]) -> String {
    let count = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..count)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  ", width = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The status as `capstan rollout status` prints it.
pub fn render_status(rollout: &ClusterStackRollout, now: Timestamp) -> String {
    let namespace = rollout.metadata.namespace.as_deref().unwrap_or_default();
    let name = rollout.metadata.name.as_deref().unwrap_or_default();
    let default = ClusterStackRolloutStatus::default();
    let status = rollout.status.as_ref().unwrap_or(&default);
    let mut out = format!(
        "ClusterStackRollout {namespace}/{name}: {}",
        phase_text(&status.phase)
    );
    if let Some(release) = &status.target_release {
        out.push_str(&format!(" → {release}"));
        if let Some(kubernetes) = &status.target_kubernetes {
            out.push_str(&format!(" (Kubernetes {kubernetes})"));
        }
    }
    if let Some(wave) = &status.current_wave {
        out.push_str(&format!(", wave {wave}"));
    }
    out.push('\n');
    if let Some(message) = status.message.as_deref().filter(|m| !m.is_empty()) {
        out.push_str(&format!("  {message}\n"));
    }
    for type_ in ["Halted"] {
        if let Some(c) = conditions::find(&status.conditions, type_).filter(|c| c.is_true()) {
            out.push_str(&format!("  {type_}: {}\n", c.message));
        }
    }
    if let Some(next) = &status.next_window {
        out.push_str(&format!(
            "  Next window: {}\n",
            next.0.strftime("%Y-%m-%d %H:%M:%SZ")
        ));
    }
    out.push('\n');
    let mut waves = vec![
        [
            "WAVE",
            "PHASE",
            "CLUSTERS",
            "UPDATED",
            "HEALTHY",
            "FAILED",
            "SOAK UNTIL",
            "STARTED",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for wave in &status.waves {
        let soak = match (&wave.phase, &wave.soak_until) {
            (WavePhase::Soaking, Some(until)) => until.0.strftime("%H:%M:%SZ").to_string(),
            _ => "-".into(),
        };
        waves.push(vec![
            wave.name.clone(),
            phase_text(&wave.phase),
            wave.total.to_string(),
            wave.updated.to_string(),
            wave.healthy.to_string(),
            wave.failed.to_string(),
            soak,
            age(wave.started_at.as_ref(), now),
        ]);
    }
    out.push_str(&columns(&waves));
    if !status.clusters.is_empty() {
        out.push('\n');
        let mut clusters = vec![
            ["CLUSTER", "WAVE", "PHASE", "FROM", "TO", "MESSAGE", "SINCE"]
                .map(String::from)
                .to_vec(),
        ];
        for cluster in &status.clusters {
            clusters.push(cluster_row(cluster, now));
        }
        out.push_str(&columns(&clusters));
        out.push_str(&paths_text(&status.clusters));
    }
    out
}

fn cluster_row(cluster: &ClusterRolloutStatus, now: Timestamp) -> Vec<String> {
    let dash = |v: &Option<String>| v.clone().filter(|s| !s.is_empty()).unwrap_or_else(|| "-".into());
    vec![
        cluster.name.clone(),
        cluster.wave.clone(),
        phase_text(&cluster.phase),
        dash(&cluster.from),
        dash(&cluster.to),
        dash(&cluster.message),
        age(cluster.since.as_ref(), now),
    ]
}

/// Across stacks: each Cluster's path with the step it is at (`[2/2]`), and the pre-flight
/// checks that block a Blocked Cluster; empty for a rollout within one stack.
fn paths_text(clusters: &[ClusterRolloutStatus]) -> String {
    let mut rows = Vec::new();
    for c in clusters.iter().filter(|c| !c.path.is_empty()) {
        let at = c.step.unwrap_or(0) as usize;
        let steps: Vec<String> = c
            .path
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if i == at {
                    format!("[{}]", s.class)
                } else {
                    s.class.clone()
                }
            })
            .collect();
        rows.push(vec![
            c.name.clone(),
            format!("{}/{}", at + 1, c.path.len()),
            steps.join(" → "),
        ]);
    }
    let mut out = String::new();
    if !rows.is_empty() {
        rows.insert(0, ["CLUSTER", "STEP", "PATH"].map(String::from).to_vec());
        out.push('\n');
        out.push_str(&columns(&rows));
    }
    let blocked: Vec<String> = clusters
        .iter()
        .filter(|c| c.phase == capstan_operator::api::rollout::ClusterPhase::Blocked)
        .flat_map(|c| {
            let failed: Vec<String> = c
                .preflight
                .iter()
                .filter(|r| !r.ok)
                .map(|r| format!("  {}: {}: {}", c.name, r.check, r.reason))
                .collect();
            if failed.is_empty() {
                vec![format!(
                    "  {}: {}",
                    c.name,
                    c.message.as_deref().unwrap_or("blocked")
                )]
            } else {
                failed
            }
        })
        .collect();
    if !blocked.is_empty() {
        out.push_str("\nBlocked:\n");
        out.push_str(&blocked.join("\n"));
        out.push('\n');
    }
    out
}

async fn run_approve(args: &ApproveArgs) -> anyhow::Result<()> {
    let (api, namespace, _) = api_of(&args.target).await?;
    let name = &args.target.name;
    let rollout = read(&api, &namespace, name).await?;
    if let (true, Some(cluster)) = (args.force, &args.cluster) {
        return super::rollout_force::force(&api, &patch_params(), &rollout, cluster, args.by.as_deref())
            .await;
    }
    let status = rollout.status.clone().unwrap_or_default();
    let wave = match &args.wave {
        Some(wave) => {
            if !rollout.spec.waves.iter().any(|w| &w.name == wave) {
                let known: Vec<&str> = rollout.spec.waves.iter().map(|w| w.name.as_str()).collect();
                bail!("ClusterStackRollout {namespace}/{name} has no wave {wave:?} (its waves: {})", known.join(", "));
            }
            wave.clone()
        }
        None => waiting_wave(&status).with_context(|| {
            format!(
                "ClusterStackRollout {namespace}/{name} has no wave waiting for approval (phase {}); name one with --wave",
                phase_text(&status.phase)
            )
        })?,
    };
    // `<wave>@<time>`: a value acts once, so approving the same wave again (for a later
    // target) is a new value.
    let value = format!("{wave}@{}", Timestamp::now());
    let patch = serde_json::json!({"metadata": {"annotations": {APPROVE_ANNOTATION: value}}});
    api.patch(name, &patch_params(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("approving wave {wave} of ClusterStackRollout {namespace}/{name}"))?;
    println!("ClusterStackRollout {namespace}/{name}: wave {wave} approved");
    Ok(())
}

/// The wave waiting for approval, if any.
fn waiting_wave(status: &ClusterStackRolloutStatus) -> Option<String> {
    status
        .waves
        .iter()
        .find(|w| matches!(w.phase, WavePhase::WaitingForApproval))
        .map(|w| w.name.clone())
}

async fn set_paused(target: &TargetArgs, paused: bool) -> anyhow::Result<()> {
    let (api, namespace, _) = api_of(target).await?;
    let name = &target.name;
    read(&api, &namespace, name).await?;
    let patch = serde_json::json!({"spec": {"paused": paused}});
    api.patch(name, &patch_params(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("patching ClusterStackRollout {namespace}/{name}"))?;
    let what = if paused { "paused" } else { "resumed" };
    println!("ClusterStackRollout {namespace}/{name} {what}");
    Ok(())
}

/// Resumes a paused rollout (`spec.paused: false`) and a halted one (a new resume token).
async fn run_resume(target: &TargetArgs) -> anyhow::Result<()> {
    let (api, namespace, _) = api_of(target).await?;
    let name = &target.name;
    let rollout = read(&api, &namespace, name).await?;
    let halted = rollout
        .status
        .as_ref()
        .is_some_and(|s| matches!(s.phase, RolloutPhase::Halted));
    let mut patch = serde_json::json!({"spec": {"paused": false}});
    if halted {
        let token = Timestamp::now().to_string();
        patch["metadata"] = serde_json::json!({"annotations": {RESUME_ANNOTATION: token}});
    }
    api.patch(name, &patch_params(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("resuming ClusterStackRollout {namespace}/{name}"))?;
    let note = if halted {
        " (from Halted: its failed Clusters stay failed)"
    } else {
        ""
    };
    println!("ClusterStackRollout {namespace}/{name} resumed{note}");
    Ok(())
}

/// What `--diff` compares: each release Clusters come from (their recorded `from` class) to
/// the target, rendered for one of the rollout's Clusters, from the stack's source.
struct DiffInputs {
    /// `OWNER/REPO@` or `oci://HOST/REPO@`, the release tag appended.
    source: String,
    github_url: Option<String>,
    froms: Vec<String>,
    target: String,
    cluster: capstan_stack::values::ClusterObjects,
    namespace: String,
}

/// Reads what `--diff` needs; `Ok(None)` (after saying why) when there is nothing to compare.
async fn diff_inputs(client: &Client, rollout: &ClusterStackRollout) -> anyhow::Result<Option<DiffInputs>> {
    use capstan_operator::api::StackSource;
    let namespace = rollout.metadata.namespace.clone().unwrap_or_default();
    let status = rollout.status.clone().unwrap_or_default();
    let Some(target) = status.target_class.clone() else {
        println!("\n(no target release yet: nothing to compare)");
        return Ok(None);
    };
    let mut switched: Vec<&ClusterRolloutStatus> = status
        .clusters
        .iter()
        .filter(|c| c.from.as_deref().is_some_and(|from| from != target))
        .collect();
    switched.sort_by(|a, b| a.name.cmp(&b.name));
    let Some(example) = switched.first() else {
        println!("\n(no Cluster of the rollout comes from another release yet: nothing to compare)");
        return Ok(None);
    };
    let mut froms: Vec<String> = switched.iter().filter_map(|c| c.from.clone()).collect();
    froms.sort_unstable();
    froms.dedup();
    let stacks: Api<capstan_operator::api::ClusterStack> = Api::namespaced(client.clone(), &namespace);
    let stack_name = &rollout.spec.cluster_stack;
    let stack = stacks
        .get(stack_name)
        .await
        .with_context(|| format!("reading ClusterStack {namespace}/{stack_name}"))?;
    let (source, github_url) = match &stack.spec.source {
        Some(StackSource::Github(github)) => (
            format!("{}/{}@", github.owner, github.repo),
            github.api_url.clone(),
        ),
        Some(StackSource::Oci(oci)) => (
            format!("oci://{}@", oci.repository.trim_start_matches("oci://")),
            None,
        ),
        _ => bail!(
            "--diff: ClusterStack {namespace}/{stack_name} has no GitHub or OCI source; compare its releases with `capstan releases diff OLD NEW --cluster FILE`"
        ),
    };
    let (cluster_namespace, cluster_name) = example
        .name
        .split_once('/')
        .unwrap_or((namespace.as_str(), example.name.as_str()));
    capstan_operator::cli::clusters::ensure_discovered(client).await;
    let clusters: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client.clone(),
        cluster_namespace,
        &capstan_operator::cli::clusters::cluster_resource(),
    );
    let cluster = clusters
        .get(cluster_name)
        .await
        .with_context(|| format!("reading Cluster {}", example.name))?;
    let text = serde_json::to_string(&cluster)?;
    let cluster = capstan_stack::values::parse_object(&text, std::path::Path::new(&example.name))
        .with_context(|| format!("Cluster {}", example.name))?;
    Ok(Some(DiffInputs {
        source,
        github_url,
        froms,
        target,
        cluster: capstan_stack::values::ClusterObjects::new(cluster),
        namespace,
    }))
}

/// Prints `capstan releases diff` of each `from` release to the target (blocking: the
/// releases are fetched into the cache and rendered).
fn print_diffs(inputs: &DiffInputs) -> anyhow::Result<()> {
    use capstan_stack::name::ReleaseTag;
    let sources = super::source_args::SourceArgs {
        cache: None,
        github_url: inputs
            .github_url
            .clone()
            .unwrap_or_else(|| "https://api.github.com".into()),
        token_file: None,
        connect_timeout: None,
        timeout: None,
        insecure_registry: false,
        verify_keys: Vec::new(),
        verify_identities: Vec::new(),
        trusted_root: None,
    };
    let reference = |class: &str| -> anyhow::Result<String> {
        let tag = ReleaseTag::parse_cluster_class(class).with_context(|| format!("class {class}"))?;
        Ok(format!("{}{}", inputs.source, tag.tag()))
    };
    let target = reference(&inputs.target)?;
    for from in &inputs.froms {
        println!();
        super::releases::print_diff(
            &reference(from)?,
            &target,
            &inputs.cluster,
            &sources,
            Some(inputs.namespace.clone()),
            false,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_and_the_last_is_not_padded() {
        let rows = vec![
            vec!["A".to_string(), "LONG HEADER".to_string(), "X".to_string()],
            vec!["wide cell".to_string(), "b".to_string(), "last".to_string()],
        ];
        assert_eq!(
            columns(&rows),
            "A          LONG HEADER  X\nwide cell  b            last\n"
        );
    }

    #[test]
    fn exit_codes_by_phase() {
        assert_eq!(final_code(Some(&RolloutPhase::Complete)), Some(0));
        assert_eq!(final_code(Some(&RolloutPhase::Halted)), Some(1));
        for phase in [
            RolloutPhase::Idle,
            RolloutPhase::Progressing,
            RolloutPhase::WaitingForApproval,
            RolloutPhase::Soaking,
            RolloutPhase::Paused,
        ] {
            assert_eq!(final_code(Some(&phase)), None, "{phase:?}");
        }
        assert_eq!(final_code(None), None);
    }

    /// Issue 48: a rollout across stacks shows each Cluster's path with its step, the blocked
    /// Clusters with what blocks them, and the next window.
    #[test]
    fn status_shows_paths_blocked_clusters_and_the_next_window() {
        let rollout: ClusterStackRollout = serde_json::from_value(serde_json::json!({
            "apiVersion": "capstan.dev/v1alpha1", "kind": "ClusterStackRollout",
            "metadata": {"name": "kubernetes-1-29", "namespace": "tenant-a"},
            "spec": {"clusterStack": "ferrol-1-29", "from": "auto", "waves": [{"name": "rest"}]},
            "status": {
                "phase": "WaitingForWindow", "targetRelease": "docker-ferrol-1-29-v1",
                "targetKubernetes": "v1.29.10", "currentWave": "rest",
                "nextWindow": "2026-12-07T21:00:00Z",
                "clusters": [
                    {"name": "tenant-a/legacy", "wave": "rest", "phase": "Blocked",
                     "message": "no path to docker-ferrol-1-29-v1: no ClusterStack for Kubernetes 1.26"},
                    {"name": "tenant-a/prod-a", "wave": "rest", "phase": "Pending", "step": 1,
                     "path": [{"release": "docker-ferrol-1-28-v2", "class": "docker-ferrol-1-28-v2"},
                              {"release": "docker-ferrol-1-29-v1", "class": "docker-ferrol-1-29-v1"}]},
                    {"name": "tenant-a/prod-c", "wave": "rest", "phase": "Blocked", "step": 0,
                     "path": [{"release": "docker-ferrol-1-29-v1", "class": "docker-ferrol-1-29-v1"}],
                     "preflight": [{"check": "RemovedAPIs", "ok": false,
                                    "reason": "extensions/v1beta1 ingresses requested (removed in 1.22)"},
                                   {"check": "VersionSkew", "ok": true}]}
                ]
            }
        }))
        .expect("rollout");
        let text = render_status(&rollout, Timestamp::now());
        for line in [
            "  Next window: 2026-12-07 21:00:00Z",
            "CLUSTER          STEP  PATH",
            "tenant-a/prod-a  2/2   docker-ferrol-1-28-v2 → [docker-ferrol-1-29-v1]",
            "tenant-a/prod-c  1/1   [docker-ferrol-1-29-v1]",
            "Blocked:\n  tenant-a/legacy: no path to docker-ferrol-1-29-v1: no ClusterStack for Kubernetes 1.26\n  tenant-a/prod-c: RemovedAPIs: extensions/v1beta1 ingresses requested (removed in 1.22)\n",
        ] {
            assert!(text.contains(line), "{line:?} in\n{text}");
        }
        let one_stack = render_status(
            &serde_json::from_value(serde_json::json!({
                "apiVersion": "capstan.dev/v1alpha1", "kind": "ClusterStackRollout",
                "metadata": {"name": "r", "namespace": "t"},
                "spec": {"clusterStack": "docker-ferrol-1-27", "waves": [{"name": "all"}]},
                "status": {"phase": "Progressing", "clusters": [{"name": "t/a", "wave": "all", "phase": "Pending"}]}
            }))
            .expect("rollout"),
            Timestamp::now(),
        );
        assert!(
            !one_stack.contains("PATH") && !one_stack.contains("Next window"),
            "{one_stack}"
        );
    }

    #[test]
    fn ages_read_like_kubectls() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let now = Timestamp::now();
        let at = |s: i64| Time(now - k8s_openapi::jiff::SignedDuration::from_secs(s));
        assert_eq!(age(Some(&at(5)), now), "5s");
        assert_eq!(age(Some(&at(243)), now), "4m3s");
        assert_eq!(age(Some(&at(7500)), now), "2h5m");
        assert_eq!(age(None, now), "-");
    }
}
