//! `capstan docs` (hidden): writes the book's generated reference pages (issue 49) — the
//! command line from its clap definition, the CRDs from their schemas, the metrics from the
//! operator's registry — so no reference is ever copied by hand. `tests/it/book.rs` fails when
//! the committed pages under `docs/book/src/reference/` differ from what this writes.

use std::path::PathBuf;

use anyhow::Context;

/// Arguments of `capstan docs`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write the reference pages (`cli.md`, `crds.md`, `metrics.md`) into this directory.
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
}

/// Writes [`pages`] of `cli`, the whole command-line definition, into `args.dir`.
pub fn run(args: &Args, cli: clap::Command) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.dir).with_context(|| format!("creating {}", args.dir.display()))?;
    for (name, text) in pages(cli)? {
        let path = args.dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// The generated pages: file name and Markdown.
pub fn pages(cli: clap::Command) -> anyhow::Result<Vec<(&'static str, String)>> {
    Ok(vec![
        ("cli.md", super::docs_cli::markdown(cli)),
        (
            "crds.md",
            super::docs_crds::markdown(&capstan_operator::api::crds()).context("describing the CRDs")?,
        ),
        ("metrics.md", super::docs_metrics::markdown()),
    ])
}
