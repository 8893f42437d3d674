//! `capstan version`: what binary this is.

use std::io::Write;

/// Arguments of `capstan version`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print as JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let info = crate::cli::version::info();
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&info)?)?;
    } else {
        writeln!(
            out,
            "capstan {} (helm engine compatibility: {})",
            info.version, info.helm_compat
        )?;
    }
    Ok(())
}

/// Version facts reported by `capstan version`.
#[derive(Debug, serde::Serialize)]
pub struct Info {
    pub version: &'static str,
    /// The Helm release whose rendering the native engine reproduces.
    pub helm_compat: &'static str,
}

pub fn info() -> Info {
    Info {
        version: env!("CARGO_PKG_VERSION"),
        helm_compat: "v4.2.3",
    }
}
