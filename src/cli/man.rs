//! `capstan man`: manual pages (roff) generated from the CLI's own definition: `capstan.1` on
//! standard output, or with `--dir` one page per command (`capstan.1`, `capstan-render.1`,
//! `capstan-releases-pull.1`, …) for a release archive or `/usr/local/share/man/man1`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

/// Arguments of `capstan man`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write a page per command into this directory instead of `capstan.1` to standard output.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Writes the pages of `cli`, the whole command-line definition (given by `cli/mod.rs`, so
/// this file need not name it).
pub fn run(args: &Args, cli: clap::Command) -> anyhow::Result<()> {
    match &args.dir {
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(&page(cli)?)?;
        }
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(versioned(cli), dir)
                .with_context(|| format!("writing manual pages into {}", dir.display()))?;
        }
    }
    Ok(())
}

/// The top-level command as the pages describe it.
fn versioned(cli: clap::Command) -> clap::Command {
    cli.version(env!("CARGO_PKG_VERSION"))
}

/// `capstan.1`.
pub fn page(cli: clap::Command) -> std::io::Result<Vec<u8>> {
    let mut page = Vec::new();
    clap_mangen::Man::new(versioned(cli)).render(&mut page)?;
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_page_is_roff_naming_the_command_and_its_subcommands() {
        let page = String::from_utf8(page(crate::cli::Cli::command()).expect("renders")).expect("UTF-8");
        assert!(page.starts_with(".ie \\n(.g .ds Aq \\(aq"), "{page}");
        assert!(page.contains(".TH capstan 1"), "{page}");
        assert!(page.contains(".SH NAME"), "{page}");
        assert!(page.contains(".SH SUBCOMMANDS"), "{page}");
        for name in ["render", "operator", "install", "completion", "version"] {
            assert!(
                page.contains(&format!("capstan\\-{name}")),
                "{name} missing:\n{page}"
            );
        }
    }

    #[test]
    fn dir_gets_a_page_per_command() {
        let dir = tempfile::tempdir().expect("temp dir");
        run(
            &Args {
                dir: Some(dir.path().join("man1")),
            },
            crate::cli::Cli::command(),
        )
        .expect("pages written");
        for page in [
            "capstan.1",
            "capstan-render.1",
            "capstan-releases-pull.1",
            "capstan-completion.1",
        ] {
            let text = std::fs::read_to_string(dir.path().join("man1").join(page)).expect(page);
            assert!(text.contains(".SH NAME"), "{page}: {text}");
        }
    }
}
