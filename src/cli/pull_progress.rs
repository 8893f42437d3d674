//! Pulling a release into the cache with a progress bar on a terminal: what `releases pull`
//! and every command that opens a release by source and tag share.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

use capstan_source::oci::OciRepo;
use capstan_source::oci::release as oci_release;
use capstan_source::pull::{self, PullProgress, PullSummary};

use super::source_args::{self, SourceArgs};

fn progress_bar(tag: &str) -> Option<ProgressBar> {
    std::io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new(0);
        if let Ok(style) =
            ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(tag.to_string());
        bar
    })
}

/// Moves `bar` (when there is one) by what a pull reports.
fn advance(bar: Option<&ProgressBar>, progress: PullProgress) {
    if let Some(bar) = bar {
        match progress {
            PullProgress::Start { bytes, .. } => bar.set_length(bytes),
            PullProgress::Bytes(n) => bar.inc(n),
        }
    }
}

/// Pulls `tag` of the OCI repository `repo`: from the cache without a request, or (with
/// `revalidate`) after one `HEAD` shows the tag unchanged; else downloaded and verified, with a
/// progress bar on a terminal.
pub fn pull_oci_with_bar(
    sources: &SourceArgs,
    cache: &capstan_source::cache::Cache,
    repo: &OciRepo,
    tag: &str,
    revalidate: bool,
) -> anyhow::Result<PullSummary> {
    if !revalidate && let Some(manifest) = oci_release::cached(cache, repo, tag)? {
        return Ok(PullSummary {
            manifest,
            downloaded_bytes: 0,
            downloaded_files: 0,
            was_complete: true,
        });
    }
    let client = sources.oci_client(repo)?;
    let bar = progress_bar(tag);
    let progress = |p: PullProgress| advance(bar.as_ref(), p);
    let result =
        source_args::runtime()?.block_on(oci_release::pull(&client, cache, repo, tag, revalidate, progress));
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(result?)
}

/// Pulls `tag` of `repo` (nothing when complete in the cache), drawing a progress bar on a
/// terminal.
pub fn pull_with_bar(
    sources: &SourceArgs,
    cache: &capstan_source::cache::Cache,
    repo: &str,
    tag: &str,
) -> anyhow::Result<PullSummary> {
    if let Some(manifest) = pull::cached_github(cache, repo, tag)? {
        return Ok(PullSummary {
            manifest,
            downloaded_bytes: 0,
            downloaded_files: 0,
            was_complete: true,
        });
    }
    let client = sources.client()?;
    let bar = progress_bar(tag);
    let progress = |p: PullProgress| advance(bar.as_ref(), p);
    let result: Result<PullSummary, pull::PullError> = source_args::runtime()?.block_on(async {
        let releases = source_args::releases(&client, cache, repo).await?;
        let release = pull::find_release(&releases, repo, tag)?;
        pull::pull_release(&client, cache, repo, release, progress).await
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    Ok(result?)
}
