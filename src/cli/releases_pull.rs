//! `capstan releases pull REPO TAG`: a GitHub release (`OWNER/REPO`) or a release in an OCI
//! registry (`oci://HOST/REPO`) into the verified cache, with a progress bar on a terminal and a
//! summary line. (`git+URL#REF` sources: see `releases_git`.)

use std::time::Instant;

use anyhow::bail;
use indicatif::HumanBytes;

use capstan_source::oci::OciRepo;
use capstan_source::pull::PullSummary;

use super::repository_args::RepositoryArgs;
use super::source_args::{self, SourceArgs};

#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// `owner/name` of a GitHub repository, `oci://HOST/REPO` of an OCI registry, or a git
    /// source `git+URL#REF[:PATH]`.
    source: String,
    /// The release tag (GitHub and OCI sources), e.g. docker-scs-1-30-v1.
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
    if let Some(git) = args.source.strip_prefix("git+") {
        args.sources.refuse_policy_for(&args.source)?;
        if args.tag.is_some() {
            bail!("a git source names its ref in the URL (git+URL#REF); it takes no TAG argument");
        }
        return super::releases_git::pull(git, &args.sources);
    }
    let Some(tag) = &args.tag else {
        bail!(
            "which release of {}? give its tag (`capstan releases list {}` shows them)",
            args.source,
            args.source
        );
    };
    let cache = args.sources.open_cache()?;
    let started = Instant::now();
    if args.source.starts_with("oci://") {
        let repo = OciRepo::parse(&args.source)?;
        // A policy that cannot be read is refused before anything is fetched.
        args.sources.policy()?;
        // A tag named on purpose is checked against the registry: one HEAD when unchanged.
        let summary = super::pull_progress::pull_oci_with_bar(&args.sources, &cache, &repo, tag, true)?;
        print_summary(&format!("{repo}:{tag}"), &summary, started, &cache);
        if let Some(v) = args.sources.verify_oci(&cache, &repo, tag)? {
            println!("{repo}:{tag}: verified {}, signed by {}", v.digest, v.signer);
        }
        return verify_dependencies(args, &format!("{}@{tag}", args.source));
    }
    args.sources
        .refuse_policy_for(&format!("{} {tag}", args.source))?;
    let summary = match super::pull_progress::pull_with_bar(&args.sources, &cache, &args.source, tag) {
        Ok(s) => s,
        Err(e) => return Err(source_args::explain_not_found(e, &cache)),
    };
    print_summary(&format!("{} {tag}", args.source), &summary, started, &cache);
    verify_dependencies(args, &format!("{}@{tag}", args.source))
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
