//! `capstan describe addon CLUSTER`: one Cluster's addons in full, the view
//! `capstan get addon CLUSTER` prints (see `get` and `describe_addon`).

use std::process::ExitCode;

use super::get::{ClusterArgs, OneArgs};

/// `capstan describe`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,

    #[command(flatten)]
    cluster: ClusterArgs,
}

#[derive(Debug, clap::Subcommand)]
enum What {
    /// One Cluster's addons: objects with sync and health, stages, inputs, the last Events.
    #[command(visible_aliases = ["clusteraddon", "caddon"])]
    Addon(OneArgs),
}

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    match &args.what {
        What::Addon(one) => super::get::describe(&args.cluster, one),
    }
}
