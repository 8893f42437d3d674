//! `capstan diff`: what `capstan apply` would change, as a unified diff per object
//! (server-side dry run against the live objects). Exit code 0: no differences, 1:
//! differences, 2: an error — like `kubectl diff`.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use super::kube::{KubeArgs, connect, load_objects, runtime};
use capstan_apply::{ApplyOptions, ObjectDiff};

/// Arguments of `capstan diff`.
#[derive(Debug, clap::Args)]
#[command(about = "Show what `capstan apply` would change (exit 1 when anything differs)")]
pub struct Args {
    #[command(flatten)]
    kube: KubeArgs,

    /// Color the diff: auto (when stdout is a terminal and NO_COLOR is unset), always, never.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    color: Color,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

pub fn run(args: &Args) -> ExitCode {
    match diff(args) {
        Ok(true) => ExitCode::from(1),
        Ok(false) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("Error: {}", super::error_chain::error_text(&err));
            ExitCode::from(2)
        }
    }
}

/// Prints the diffs; true when anything differs.
fn diff(args: &Args) -> anyhow::Result<bool> {
    let objects = load_objects(&args.kube)?;
    let diffs = runtime()?.block_on(async {
        let target = connect(&args.kube).await?;
        let opts = ApplyOptions {
            field_manager: args.kube.field_manager.clone(),
            force: args.kube.force(),
            namespace: target.namespace.clone(),
            concurrency: args.kube.concurrency,
            inventory: target.inventory(args.kube.inventory.as_deref())?,
            ..ApplyOptions::default()
        };
        anyhow::Ok(target.applier().diff(&objects, &opts).await?)
    })?;
    let color = match args.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    let mut out = std::io::stdout().lock();
    let mut any = false;
    for d in &diffs {
        print_one(&mut out, d, color)?;
        any |= d.drifted();
    }
    Ok(any)
}

fn print_one(out: &mut impl Write, d: &ObjectDiff, color: bool) -> std::io::Result<()> {
    if !d.message.is_empty() {
        writeln!(out, "# {}: {}", d.key, d.message)?;
    }
    for line in d.diff.lines() {
        let code = match line.as_bytes().first() {
            _ if !color => None,
            Some(b'+') if line.starts_with("+++") => Some("1"),
            Some(b'-') if line.starts_with("---") => Some("1"),
            Some(b'+') => Some("32"),
            Some(b'-') => Some("31"),
            Some(b'@') => Some("36"),
            _ => None,
        };
        match code {
            Some(c) => writeln!(out, "\x1b[{c}m{line}\x1b[0m")?,
            None => writeln!(out, "{line}")?,
        }
    }
    Ok(())
}
