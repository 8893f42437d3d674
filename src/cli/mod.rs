//! The `capstan` command line: one file per subcommand; parsing and output only.

mod crds;
// `capstan dependency` and the repository flags (issue 24).
mod dependency;
mod dependency_policy;
mod output;
mod pull_progress;
mod release_ref;
mod releases;
mod releases_build;
mod releases_gc;
mod releases_git;
mod releases_list;
mod releases_mirror;
mod releases_pull;
mod releases_push;
mod render;
mod render_capi;
mod render_release;
mod repository_args;
mod source_args;
mod stack_input;
mod values_input;
mod version;
// `capstan apply` / `capstan diff` (issue 12) and the flags they share.
mod apply;
mod diff;
mod kube;
// `capstan operator` (issue 13).
mod operator;
// `capstan install` (issue 13): the operator's own chart, embedded.
mod deploy_chart;
mod install;
// `capstan get` / `capstan describe` (issue 37): a fleet at a glance.
mod describe;
mod get;
// `capstan rollout` (issue 33): follow and steer ClusterStackRollouts.
mod rollout;
mod rollout_force;
// Shell completion and manual pages, generated from the CLI's definition.
mod completion;
mod man;
// `capstan docs` (hidden): the book's generated reference pages (issue 49).
mod docs;
mod docs_cli;
mod docs_crds;
mod docs_metrics;
mod docs_prose;
// A failed command's error chain on one line (main prints it; diff and source_args word
// errors with it).
mod error_chain;
// `capstan rollout plan` (issue 33), offline; `rollout` holds the command group.
mod rollout_live;
mod rollout_paths;
mod rollout_plan;
// `capstan preflight` (issue 48): one Cluster's checks before a switch.
mod preflight;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

use error_chain::error_text;

#[derive(Debug, Parser)]
#[command(
    name = "capstan",
    version,
    about = "Release manager for Cluster API cluster stacks"
)]
struct Cli {
    /// Log output format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true)]
    log_format: LogFormat,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print capstan's version, the Helm version its engine matches and the API version it serves.
    Version(version::Args),
    /// Render a Helm chart, or a whole cluster-stack release for a Cluster, offline.
    Render(Box<render::Args>),
    /// A chart's dependencies: update, build, list (like `helm dependency`).
    Dependency(Box<dependency::Args>),
    /// Cluster-stack releases: list a repository's, pull one into the cache, compare what an
    /// upgrade changes.
    Releases(Box<releases::Args>),
    /// Server-side apply manifests to a cluster.
    Apply(Box<apply::Args>),
    /// Show what `capstan apply` would change (exit code 1 when anything differs).
    Diff(Box<diff::Args>),
    /// Print the CustomResourceDefinitions of capstan's API (YAML): clusterstack.x-k8s.io and capstan.dev.
    Crds(crds::Args),
    /// Run the Kubernetes operator: ClusterStack, ClusterStackRelease, Cluster, ClusterAddon and rollout controllers, webhooks, hooks, metrics.
    Operator(Box<operator::Args>),
    /// Roll a release of a cluster stack out to its Clusters in waves: plan (offline), status,
    /// approve, pause, resume.
    Rollout(Box<rollout::Args>),
    /// One Cluster's pre-flight before a switch to another release: removed APIs in use, the
    /// target release rendered for it (exit code 1 when a check blocks).
    Preflight(Box<preflight::Args>),
    /// Install or upgrade the capstan operator in a cluster (CRDs, RBAC, Deployment, webhooks).
    Install(Box<install::Args>),
    /// List ClusterStacks, ClusterStackReleases, ClusterAddons or ClusterStackRollouts, one
    /// line each, or one Cluster's addons in full.
    Get(Box<get::Args>),
    /// Show one Cluster's addons in full: objects, stages, inputs, Events.
    Describe(Box<describe::Args>),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completion(completion::Args),
    /// Print the manual page (roff), or write one page per command into a directory.
    Man(man::Args),
    /// Write the book's generated reference pages (CLI, CRDs, metrics) into a directory.
    #[command(hide = true)]
    Docs(docs::Args),
}

/// Entry point of the binary: parse arguments, set up logging, run the subcommand.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // The operator is a long-running service: its progress is worth logging by default.
    let default_level = if matches!(cli.command, Command::Operator(_)) {
        "info"
    } else {
        "warn"
    };
    init_tracing(cli.log_format, default_level);
    let result = match cli.command {
        Command::Releases(args) => releases::run(&args).map(|()| ExitCode::SUCCESS),
        Command::Dependency(args) => dependency::run(&args).map(|()| ExitCode::SUCCESS),
        Command::Version(args) => version::run(&args).map(|()| ExitCode::SUCCESS),
        Command::Render(args) => render::run(&args).map(|()| ExitCode::SUCCESS),
        Command::Apply(args) => apply::run(&args),
        Command::Diff(args) => return diff::run(&args),
        Command::Crds(args) => crds::run(&args).map(|()| ExitCode::SUCCESS),
        Command::Operator(args) => operator::run_operator(&args).map(|()| ExitCode::SUCCESS),
        Command::Rollout(args) => rollout::run(&args),
        Command::Preflight(args) => preflight::run(&args),
        Command::Install(args) => install::run(&args).map(|()| ExitCode::SUCCESS),
        Command::Get(args) => get::run(&args),
        Command::Describe(args) => describe::run(&args),
        Command::Completion(args) => completion::run(&args, Cli::command()).map(|()| ExitCode::SUCCESS),
        Command::Man(args) => man::run(&args, Cli::command()).map(|()| ExitCode::SUCCESS),
        Command::Docs(args) => docs::run(&args, Cli::command()).map(|()| ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("Error: {}", error_text(&err));
            ExitCode::FAILURE
        }
    }
}

fn init_tracing(format: LogFormat, default_level: &str) {
    use tracing_subscriber::EnvFilter;
    // kube-client logs every failed request; capstan reports them per object instead. The
    // platform certificate verifier logs each certificate it refuses at ERROR level; the
    // request's error says it once.
    let filter = EnvFilter::try_from_env("CAPSTAN_LOG").unwrap_or_else(|_| {
        EnvFilter::new(format!(
            "{default_level},kube_client=off,rustls_platform_verifier=off"
        ))
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    // A second initialisation (tests calling main twice) is harmless; ignore it.
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
