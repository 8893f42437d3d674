//! `capstan releases pull REPO TAG` (or `REPO@TAG`, every form `render` takes: see
//! `release_ref`): a GitHub release (`OWNER/REPO`) or a release in an OCI registry
//! (`oci://HOST/REPO`) into the verified cache, with a progress bar on a terminal and a
//! summary line. (`git+URL#REF` sources: see `releases_git`.)

use std::time::Instant;

use indicatif::HumanBytes;

use capstan_source::pull::PullSummary;

use super::release_ref::ReleaseRef;
use super::repository_args::RepositoryArgs;
use super::source_args::{self, SourceArgs};

#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// `owner/name` of a GitHub repository or `oci://HOST/REPO` of an OCI registry (with TAG, or
    /// with `@TAG`), a git source `git+URL#REF[:PATH]`, or any release name `render` takes.
    source: String,
    /// The release tag (GitHub and OCI sources, unless given as SOURCE@TAG), e.g.
    /// docker-scs-1-30-v1.
    tag: Option<String>,
    /// With --keyring (or --verify-key for `oci://` charts): the chart dependencies of the
    /// release's ClusterClass and addon charts are fetched into the cache and verified, as a
    /// render would resolve them.
    #[command(flatten)]
    repositories: RepositoryArgs,
    #[command(flatten)]
    sources: SourceArgs,
}

pub fn run(args: &PullArgs) -> anyhow::Result<()> {
    let release = ReleaseRef::from_source(&args.source, args.tag.as_deref())?;
    let cache = args.sources.open_cache()?;
    let started = Instant::now();
    match &release {
        ReleaseRef::Git(git) => {
            args.sources.refuse_policy_for(&args.source)?;
            super::releases_git::pull(git, &args.sources)
        }
        ReleaseRef::Oci { repo, tag } => {
            // A policy that cannot be read is refused before anything is fetched.
            args.sources.policy()?;
            // A tag named on purpose is checked against the registry: one HEAD when unchanged.
            let summary = super::pull_progress::pull_oci_with_bar(&args.sources, &cache, repo, tag, true)?;
            print_summary(&format!("{repo}:{tag}"), &summary, started, &cache);
            if let Some(v) = args.sources.verify_oci(&cache, repo, tag)? {
                println!("{repo}:{tag}: verified {}, signed by {}", v.digest, v.signer);
                for skipped in &v.skipped {
                    println!("{repo}:{tag}: skipped an unreadable signature: {skipped}");
                }
            }
            verify_dependencies(args, &format!("{repo}@{tag}"))
        }
        ReleaseRef::GitHub { repo, tag } => {
            args.sources.refuse_policy_for(&format!("{repo} {tag}"))?;
            let summary = match super::pull_progress::pull_with_bar(&args.sources, &cache, repo, tag) {
                Ok(s) => s,
                Err(e) => return Err(source_args::explain_not_found(e, &cache)),
            };
            print_summary(&format!("{repo} {tag}"), &summary, started, &cache);
            verify_dependencies(args, &format!("{repo}@{tag}"))
        }
        ReleaseRef::Path(_) | ReleaseRef::CachedTag(_) => {
            // Nothing to fetch: checked and opened as `render` opens it, its dependencies
            // fetched and verified under --keyring.
            super::stack_input::open_ref(&args.source, &release, &args.sources)?;
            println!(
                "{}: a release directory, source tree or cached release: nothing to pull",
                args.source
            );
            verify_dependencies(args, &args.source)
        }
    }
}

/// With `--keyring`: every chart dependency of the pulled release `source` (`REPO@TAG`),
/// resolved into the cache as a render resolves it, passes the policy; the first that fails
/// is the error, naming the chart, dependency, version, repository and reason.
fn verify_dependencies(args: &PullArgs, source: &str) -> anyhow::Result<()> {
    if args.repositories.keyrings.is_empty() {
        return Ok(());
    }
    let opened = super::stack_input::open(source, &args.sources)?;
    let resolver = args
        .repositories
        .resolver(args.sources.open_cache()?, false, &args.sources)?;
    let mut charts = vec![opened.release.cluster_class_chart()?];
    charts.extend(opened.release.addon_charts()?.into_iter().map(|a| a.chart));
    let mut verified = 0;
    for chart in &charts {
        verified += resolver
            .resolve_dependencies(chart, None)?
            .iter()
            .filter(|d| !d.sha256.is_empty())
            .count();
    }
    println!("{source}: chart dependencies verified against the keyring: {verified}");
    Ok(())
}

/// `pulled … : N files (SIZE), M downloaded (SIZE) in T s (RATE/s) → manifest`.
pub fn print_summary(what: &str, s: &PullSummary, started: Instant, cache: &capstan_source::cache::Cache) {
    let total: u64 = s.manifest.files.values().map(|f| f.size).sum();
    let secs = started.elapsed().as_secs_f64();
    let fetched = if s.was_complete {
        "already complete in the cache, nothing downloaded".to_string()
    } else if s.manifest.files.is_empty() {
        "the release has no files, nothing downloaded".to_string()
    } else if s.downloaded_files == 0 {
        "every file was in the cache already, nothing downloaded".to_string()
    } else {
        format!(
            "{} file(s), {} downloaded in {secs:.2} s ({}/s)",
            s.downloaded_files,
            HumanBytes(s.downloaded_bytes),
            HumanBytes((s.downloaded_bytes as f64 / secs.max(1e-3)) as u64)
        )
    };
    println!(
        "{what}: {} file(s), {} verified; {fetched}; cache {} (key {})",
        s.manifest.files.len(),
        HumanBytes(total),
        cache.root().display(),
        s.manifest.key
    );
}
