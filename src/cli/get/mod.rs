//! `capstan get stacks|releases|addons|rollouts` and `capstan get addon CLUSTER`: a fleet at a
//! glance.
//! This module is the thin shell: the flags (`args`), the command (here), a list (`list`), the kinds listed (`kinds`),
//! printing (`print`), following changes (`watch`) and one addon's view (`addon_view`); what
//! each row and table holds is decided in `rows` and `describe_addon`.

mod addon_view;
mod args;
mod describe_addon;
mod follow;
mod kinds;
mod list;
mod print;
mod rows;
mod select;
mod table;
mod watch;

use std::process::ExitCode;

use args::What;
pub use args::{Args, ClusterArgs, OneArgs};
use kinds::{AddonKind, ReleaseKind, RolloutKind, StackKind};

pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let runtime = crate::cli::kube::runtime()?;
    runtime.block_on(async {
        let target = crate::cli::kube::connect_to(
            args.cluster.kubeconfig.as_deref(),
            args.cluster.context.as_deref(),
            args.cluster.namespace.as_deref(),
        )
        .await?;
        match &args.what {
            What::Stacks(list) => list::run_list::<StackKind>(&target, list).await,
            What::Releases(list) => list::run_list::<ReleaseKind>(&target, list).await,
            What::Addons(list) => list::run_list::<AddonKind>(&target, list).await,
            What::Addon(one) => addon_view::show_addon(&target, one).await,
            What::Rollouts(list) => list::run_list::<RolloutKind>(&target, list).await,
        }
    })
}

/// `capstan describe addon CLUSTER`: the same view as `capstan get addon CLUSTER`.
pub fn describe(cluster: &ClusterArgs, one: &OneArgs) -> anyhow::Result<ExitCode> {
    run(&Args {
        what: What::Addon(OneArgs {
            cluster: one.cluster.clone(),
            output: one.output,
            fail_not_ready: one.fail_not_ready,
        }),
        cluster: cluster.clone(),
    })
}
