//! `capstan apply`: server-side apply manifests to a cluster, one line per object.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::bail;

use super::kube::{KubeArgs, connect, load_objects, parse_duration, runtime};
use capstan_apply::guard::{PruneScope, check_input};
use capstan_apply::{ApplyOptions, ObjectResult};

/// Arguments of `capstan apply`.
#[derive(Debug, clap::Args)]
#[command(about = "Server-side apply manifests: ordered, with per-object status, inventory and pruning")]
pub struct Args {
    #[command(flatten)]
    kube: KubeArgs,

    /// Delete objects of the inventory that are no longer in the manifests (needs --inventory).
    #[arg(long)]
    prune: bool,

    /// Accept an empty input, and let --prune delete everything the inventory holds (without
    /// it both are refused: an empty input is more often a failed command than a wish).
    #[arg(long)]
    allow_empty: bool,

    /// Also prune CustomResourceDefinitions (deletes all their objects).
    #[arg(long, requires = "prune")]
    prune_crds: bool,

    /// Wait until applied objects are ready (rollouts complete, Jobs done, Ready conditions).
    #[arg(long)]
    wait: bool,

    /// Limit of --wait and of the wait for CRDs to become Established (e.g. 30s, 5m).
    #[arg(long, default_value = "5m", value_parser = parse_duration, value_name = "DURATION")]
    timeout: Duration,

    /// Server-side dry run: nothing changes.
    #[arg(long)]
    dry_run: bool,

    /// Decide by server-side dry run which objects drifted and send only those.
    #[arg(long)]
    only_drifted: bool,

    /// Output: one line per object and a summary, or the results as JSON.
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Text)]
    output: Output,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Output {
    Text,
    Json,
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let runtime = runtime()?;
    let target = runtime.block_on(connect(&args.kube))?;
    // The connection (TLS handshake) is set up while the manifests are parsed.
    let warm = runtime.spawn({
        let applier = target.applier();
        async move { applier.check_server().await }
    });
    let objects = load_objects(&args.kube)?;
    check_input(objects.len(), args.allow_empty)?;
    runtime.block_on(async {
        let _ = warm.await;
        let opts = ApplyOptions {
            field_manager: args.kube.field_manager.clone(),
            force: args.kube.force(),
            namespace: target.namespace.clone(),
            concurrency: args.kube.concurrency,
            dry_run: args.dry_run,
            inventory: target.inventory(args.kube.inventory.as_deref())?,
            prune: args.prune,
            prune_crds: args.prune_crds,
            wait: args.wait.then_some(args.timeout),
            crd_timeout: args.timeout,
            only_drifted: args.only_drifted,
            prune_scope: if args.allow_empty {
                PruneScope::Any
            } else {
                PruneScope::NotAll
            },
            ..ApplyOptions::default()
        };
        let mut applier = target.applier();
        let total = objects.len();
        let progress = std::io::stderr().is_terminal() && args.output == Output::Text && total >= 20;
        if progress {
            let done = Arc::new(AtomicUsize::new(0));
            applier = applier.with_progress(Arc::new(move |_r: &ObjectResult| {
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                // Redrawn once per percent.
                if n == total || n.is_multiple_of(total.div_ceil(100)) {
                    eprint!("\r{}\r", progress_bar(n, total));
                }
            }));
        }
        let report = applier.apply(&objects, &opts).await;
        if progress {
            eprint!("\r\x1b[2K");
        }
        let report = report?;
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        match args.output {
            Output::Json => writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?,
            Output::Text => {
                for r in &report.results {
                    writeln!(out, "{}", r.line())?;
                }
                for key in &report.prune_skipped {
                    writeln!(out, "{key} not pruned: no longer carries this inventory's id")?;
                }
                if let Some(e) = &report.inventory_error {
                    writeln!(out, "inventory not updated: {e}")?;
                }
                let dry = if args.dry_run { " (server dry run)" } else { "" };
                writeln!(out, "{}{dry}", report.summary)?;
            }
        }
        out.flush()?;
        if report.failed() {
            bail!(
                "{} of {} objects failed",
                report.summary.failed,
                report.results.len()
            );
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn progress_bar(done: usize, total: usize) -> String {
    const WIDTH: usize = 30;
    let filled = (done * WIDTH).checked_div(total).unwrap_or(WIDTH).min(WIDTH);
    format!(
        "[{}{}] {done}/{total}",
        "#".repeat(filled),
        " ".repeat(WIDTH - filled)
    )
}
