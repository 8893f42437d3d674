//! `capstan releases gc`: keep the newest releases of each stack in the cache, remove the
//! rest, the files no kept release uses, and the temp files of interrupted pulls.

use indicatif::HumanBytes;

use capstan_source::cache::RemovedKind;
use capstan_source::retention::{self, Stored};

use super::source_args::SourceArgs;

#[derive(Debug, clap::Args)]
pub struct GcArgs {
    /// How many releases of each stack (per repository) to keep, newest first.
    #[arg(long, value_name = "N", default_value_t = 3)]
    keep: usize,
    #[command(flatten)]
    sources: SourceArgs,
}

pub fn run(args: &GcArgs) -> anyhow::Result<()> {
    let cache = args.sources.open_cache()?;
    let mut stored = Vec::new();
    for key in cache.releases()? {
        let written = cache
            .release_written(&key)?
            .unwrap_or(std::time::SystemTime::UNIX_EPOCH);
        stored.push(Stored { key, written });
    }
    let keep = retention::keep_newest(&stored, args.keep);
    let removed = cache.gc(&keep)?;
    for r in &removed {
        let what = match r.kind {
            RemovedKind::Release => "release",
            RemovedKind::Blob => "file",
            RemovedKind::Temp => "temp file",
        };
        println!("removed {what} {} ({})", r.name, HumanBytes(r.bytes));
    }
    let count = |k: RemovedKind| removed.iter().filter(|r| r.kind == k).count();
    println!(
        "{} release(s), {} file(s) and {} temp file(s) removed, {} freed; {} release(s) kept in {}",
        count(RemovedKind::Release),
        count(RemovedKind::Blob),
        count(RemovedKind::Temp),
        HumanBytes(removed.iter().map(|r| r.bytes).sum()),
        keep.len(),
        cache.root().display()
    );
    Ok(())
}
