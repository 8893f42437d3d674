//! `capstan crds`: print the CustomResourceDefinitions of capstan's API.

use std::io::Write;

/// Arguments of `capstan crds`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: &Args) -> anyhow::Result<()> {
    let yaml = capstan_operator::api::crds_yaml()?;
    std::io::stdout().lock().write_all(yaml.as_bytes())?;
    Ok(())
}
