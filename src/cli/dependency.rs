//! `capstan dependency update|build|list CHART`: like Helm's, writing `charts/` and `Chart.lock`.

use std::path::{Path, PathBuf};

use capstan_chart::deps::{Lock, exact_version, version_satisfies};
use capstan_chart::load;

/// Arguments of `capstan dependency`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Resolve the chart's dependencies from Chart.yaml (fresh indexes) into charts/ and write Chart.lock.
    Update(Target),
    /// Fetch the versions Chart.lock names into charts/ (refused when the lock is out of sync); without a lock, as update.
    Build(Target),
    /// List the chart's dependencies and whether charts/ holds them.
    List(ListTarget),
}

#[derive(Debug, clap::Args)]
struct Target {
    /// The chart directories (one resolver and cache for all of them).
    #[arg(required = true, num_args = 1..)]
    charts: Vec<PathBuf>,
    #[command(flatten)]
    repositories: super::repository_args::RepositoryArgs,
    #[command(flatten)]
    sources: super::source_args::SourceArgs,
}

#[derive(Debug, clap::Args)]
struct ListTarget {
    /// The chart directory.
    chart: PathBuf,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    match &args.command {
        Command::Update(t) => update(t, false),
        Command::Build(t) => update(t, true),
        Command::List(t) => list(&t.chart),
    }
}

fn update(t: &Target, use_lock: bool) -> anyhow::Result<()> {
    let resolver = t
        .repositories
        .resolver(t.sources.open_cache()?, !use_lock, &t.sources)?;
    for chart in &t.charts {
        let resolved = resolver.update_dir(chart, use_lock)?;
        for r in resolved {
            println!(
                "{}: {} {} from {}",
                chart.display(),
                r.name,
                r.version,
                r.repository
            );
        }
    }
    Ok(())
}

/// Helm's table: NAME, VERSION, REPOSITORY, STATUS (`ok`, `missing`, `wrong version`).
fn list(dir: &Path) -> anyhow::Result<()> {
    let chart = load::load(dir)?;
    let lock = chart.lock.as_deref().and_then(|t| Lock::parse(t).ok());
    let mut rows = vec![[
        "NAME".to_string(),
        "VERSION".into(),
        "REPOSITORY".into(),
        "STATUS".into(),
    ]];
    for d in &chart.metadata.dependencies {
        let status = match chart.dependencies.iter().find(|c| c.name() == d.name) {
            None => "missing",
            Some(c) if version_satisfies(&d.version, &c.metadata.version) => "ok",
            Some(_) => "wrong version",
        };
        rows.push([
            d.name.clone(),
            d.version.clone(),
            d.repository.clone(),
            status.into(),
        ]);
    }
    let widths: Vec<usize> = (0..4)
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths[i]))
            .collect();
        println!("{}", line.join("\t").trim_end());
    }
    if let Some(lock) = lock {
        let sync = if lock.in_sync(&chart.metadata.dependencies) {
            "in sync"
        } else {
            "out of sync"
        };
        let exact = chart
            .metadata
            .dependencies
            .iter()
            .filter(|d| exact_version(&d.version).is_some())
            .count();
        println!(
            "\nChart.lock: {} dependencies, {sync} with Chart.yaml ({exact} pinned exactly)",
            lock.dependencies.len()
        );
    }
    Ok(())
}
