//! `capstan crds`: print the CustomResourceDefinitions of capstan's API.

use std::io::Write;

/// Arguments of `capstan crds`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only the CRDs of this API group (`clusterstack.x-k8s.io` or `capstan.dev`), as the
    /// chart keeps them: one file per group.
    #[arg(long)]
    group: Option<String>,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let yaml = capstan_operator::api::crds_yaml_of(args.group.as_deref())?;
    if yaml.is_empty() {
        anyhow::bail!(
            "no CRDs of group {:?}: capstan's groups are {} and {}",
            args.group.as_deref().unwrap_or_default(),
            capstan_operator::api::GROUP,
            capstan_operator::api::ROLLOUT_GROUP
        );
    }
    std::io::stdout().lock().write_all(yaml.as_bytes())?;
    Ok(())
}
