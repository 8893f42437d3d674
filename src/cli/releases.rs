//! `capstan releases …`: commands about releases of cluster stacks.

use std::io::Write;

use capstan_stack::diff::{Change, diff_releases};
use capstan_stack::render::{RenderOptions, render_release};
use capstan_stack::values::ClusterObjects;

use super::stack_input::{self, ObjectArgs};

/// Arguments of `capstan releases`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// The cluster-stack releases of a GitHub repository or an OCI repository
    /// (`oci://HOST/REPO`), newest first (every page),
    /// optionally filtered by provider, stack name, Kubernetes version and channel.
    List(super::releases_list::ListArgs),
    /// Fetch a release into the verified local cache: `OWNER/REPO TAG` (GitHub),
    /// `oci://HOST/REPO TAG` (an OCI registry) or `git+URL#REF[:PATH]` (a commit of a git
    /// repository, built into a v0-sha.<hash> release).
    Pull(super::releases_pull::PullArgs),
    /// Free cache space: keep the newest N releases of each stack, remove the others, the
    /// files no kept release uses and the temp files of interrupted pulls (each with its size).
    Gc(super::releases_gc::GcArgs),
    /// Publish a release directory to an OCI registry in csctl's layout (`DIR oci://HOST/REPO`);
    /// an existing tag is never overwritten.
    Push(super::releases_push::PushArgs),
    /// Build a stack source tree into a release like `csctl create` (`--mode hash|stable`),
    /// into `--output DIR` and/or published with `--push oci://HOST/REPO`.
    Build(super::releases_build::BuildArgs),
    /// Copy a release and every chart dependency of its charts into one OCI repository for an
    /// air gap (`SRC oci://HOST/REPO`; an OCI release keeps its digest and cosign signature),
    /// and print the --repository-mirror mapping that renders from there alone.
    Mirror(super::releases_mirror::MirrorArgs),
    /// What an upgrade from OLD to NEW changes for a Cluster: objects added, removed and
    /// changed (with a unified diff), for the ClusterClass part and the addon part.
    Diff(DiffArgs),
}

#[derive(Debug, clap::Args)]
struct DiffArgs {
    /// The release upgraded from: a release directory, a stack source tree, OWNER/REPO@TAG,
    /// oci://HOST/REPO@TAG, git+URL#REF[:PATH], or a tag in the cache.
    old: String,
    /// The release upgraded to.
    new: String,
    #[command(flatten)]
    objects: ObjectArgs,
    #[command(flatten)]
    sources: super::source_args::SourceArgs,
    /// Namespace of the ClusterClass part (default: the Cluster's).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// Output: text (summary and unified diffs) or json.
    #[arg(short = 'o', long, value_enum, default_value_t = DiffFormat::Text)]
    output: DiffFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum DiffFormat {
    Text,
    Json,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    match &args.command {
        Command::List(list) => super::releases_list::run(list),
        Command::Pull(pull) => super::releases_pull::run(pull),
        Command::Gc(gc) => super::releases_gc::run(gc),
        Command::Push(push) => super::releases_push::run(push),
        Command::Build(build) => super::releases_build::run(build),
        Command::Mirror(mirror) => super::releases_mirror::run(mirror),
        Command::Diff(diff) => run_diff(diff),
    }
}

fn run_diff(args: &DiffArgs) -> anyhow::Result<()> {
    // Published stacks' values templates see the v1beta1 Cluster (a v1beta2 one is converted).
    let objects = args.objects.load(capstan_stack::capi::CapiVersion::V1Beta1)?;
    print_diff(
        &args.old,
        &args.new,
        &objects,
        &args.sources,
        args.namespace.clone(),
        args.output == DiffFormat::Json,
    )
}

/// Prints what an upgrade from release `old` to `new` changes for the Cluster of `objects`
/// (text, or JSON with `json`); `capstan rollout status --diff` shows its releases with it.
pub fn print_diff(
    old: &str,
    new: &str,
    objects: &ClusterObjects,
    sources: &super::source_args::SourceArgs,
    namespace: Option<String>,
    json: bool,
) -> anyhow::Result<()> {
    let opts = RenderOptions {
        namespace,
        ..RenderOptions::default()
    };
    let old = stack_input::open(old, sources)?;
    let new = stack_input::open(new, sources)?;
    let old_parts = render_release(&old.release, objects, &opts).map_err(|e| old.in_release(e))?;
    let new_parts = render_release(&new.release, objects, &opts).map_err(|e| new.in_release(e))?;
    let diffs = diff_releases(
        &old_parts,
        &old.release.tag().cluster_class_name(),
        &new_parts,
        &new.release.tag().cluster_class_name(),
    )?;
    let mut out = std::io::stdout().lock();
    if json {
        let list: Vec<serde_json::Value> = diffs
            .iter()
            .map(|d| {
                serde_json::json!({
                    "part": d.part,
                    "unchanged": d.unchanged,
                    "changes": d.changes.iter().map(|c| match c {
                        Change::Added { key } => serde_json::json!({"change": "added", "object": key.to_string()}),
                        Change::Removed { key } => serde_json::json!({"change": "removed", "object": key.to_string()}),
                        Change::Changed { old, new, diff } => serde_json::json!({
                            "change": "changed", "object": new.to_string(), "was": old.to_string(), "diff": diff,
                        }),
                    }).collect::<Vec<_>>(),
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&list)?)?;
        return Ok(());
    }
    writeln!(out, "{} → {}", old.release.tag(), new.release.tag())?;
    for d in &diffs {
        let count = |f: fn(&Change) -> bool| d.changes.iter().filter(|c| f(c)).count();
        writeln!(
            out,
            "\n{}: {} added, {} removed, {} changed, {} unchanged",
            d.part,
            count(|c| matches!(c, Change::Added { .. })),
            count(|c| matches!(c, Change::Removed { .. })),
            count(|c| matches!(c, Change::Changed { .. })),
            d.unchanged
        )?;
        for c in &d.changes {
            match c {
                Change::Added { key } => writeln!(out, "  added    {key}")?,
                Change::Removed { key } => writeln!(out, "  removed  {key}")?,
                Change::Changed { old, new, .. } if old != new => {
                    writeln!(out, "  changed  {new} (was {})", old.name)?
                }
                Change::Changed { new, .. } => writeln!(out, "  changed  {new}")?,
            }
        }
        for c in &d.changes {
            if let Change::Changed { diff, .. } = c {
                write!(out, "\n{diff}")?;
            }
        }
    }
    Ok(())
}
