//! The `capstan` command line: one file per subcommand; parsing and output only.

mod crds;
mod render;
mod version;

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

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
    /// Print capstan's version and build information.
    Version(version::Args),
    /// Render a Helm chart offline, like `helm template`.
    Render(Box<render::Args>),
    /// Print the CustomResourceDefinitions of capstan's clusterstack.x-k8s.io API (YAML).
    Crds(crds::Args),
}

/// Entry point of the binary: parse arguments, set up logging, run the subcommand.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.log_format);
    let result = match cli.command {
        Command::Version(args) => version::run(&args),
        Command::Render(args) => render::run(&args),
        Command::Crds(args) => crds::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("Error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("CAPSTAN_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second initialisation (tests calling main twice) is harmless; ignore it.
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
