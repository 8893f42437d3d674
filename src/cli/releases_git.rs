//! git sources on the command line: `git+URL#REF[:PATH]`.

use anyhow::bail;

use crate::source::cache::Cache;
use crate::source::pull::PullSummary;

use super::source_args::SourceArgs;

pub fn fetch(spec: &str, _cache: &Cache) -> anyhow::Result<PullSummary> {
    bail!("git sources are not supported yet: git+{spec}")
}

pub fn pull(spec: &str, sources: &SourceArgs) -> anyhow::Result<()> {
    let cache = sources.open_cache()?;
    fetch(spec, &cache).map(drop)
}
