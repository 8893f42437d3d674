//! git sources on the command line: `git+URL#REF[:PATH]` (the `git+` already stripped).

use std::time::Instant;

use indicatif::HumanBytes;

use capstan_source::cache::Cache;
use capstan_source::git::{GitRelease, GitSpec, pull_git};

use super::source_args::SourceArgs;

/// Fetches the ref, builds its commit into a `v0-sha.<hash>` release, stores it in the cache.
pub fn fetch(spec: &str, cache: &Cache) -> anyhow::Result<GitRelease> {
    let spec = GitSpec::parse(spec)?;
    Ok(pull_git(cache, &spec)?)
}

/// `capstan releases pull git+URL#REF[:PATH]`: prints what the ref resolved to.
pub fn pull(spec: &str, sources: &SourceArgs) -> anyhow::Result<()> {
    let cache = sources.open_cache()?;
    let started = Instant::now();
    let r = fetch(spec, &cache)?;
    let total: u64 = r.manifest.files.values().map(|f| f.size).sum();
    let what = if r.built {
        format!("built in {:.2} s", started.elapsed().as_secs_f64())
    } else {
        "already complete in the cache".to_string()
    };
    println!(
        "git+{spec}: commit {} → {}: {} file(s), {}; {what}; cache {} (key {})",
        &r.commit[..r.commit.len().min(12)],
        r.tag,
        r.manifest.files.len(),
        HumanBytes(total),
        cache.root().display(),
        r.manifest.key
    );
    Ok(())
}
