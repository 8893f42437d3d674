//! `capstan releases push DIR oci://HOST/REPO`: a release directory published to an OCI
//! registry in csctl's layout; an existing tag is never overwritten.

use std::path::PathBuf;

use indicatif::HumanBytes;

use capstan_source::oci::OciRepo;
use capstan_source::oci::release::{self as oci_release, PushOptions};

use super::source_args::{self, SourceArgs};

#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// The release directory (metadata.yaml, the ClusterClass and addon charts, …).
    dir: PathBuf,
    /// The repository, `oci://HOST/REPO`.
    repo: String,
    /// The tag (default: the release's own tag, from its metadata and ClusterClass chart).
    #[arg(long)]
    tag: Option<String>,
    /// The manifest's `org.opencontainers.image.created` (default: now, UTC).
    #[arg(long, value_name = "RFC3339")]
    created: Option<String>,
    /// The manifest's `hash` annotation (its first 7 characters; default: clusterStack of the
    /// release's hashes.json, else empty).
    #[arg(long)]
    hash: Option<String>,
    #[command(flatten)]
    sources: SourceArgs,
}

pub fn run(args: &PushArgs) -> anyhow::Result<()> {
    if !args.repo.starts_with("oci://") {
        anyhow::bail!(
            "releases are pushed to an OCI registry: give oci://HOST/REPO, not {}",
            args.repo
        );
    }
    let repo = OciRepo::parse(&args.repo)?;
    let client = args.sources.oci_client(&repo)?;
    let opts = PushOptions {
        tag: args.tag.clone(),
        created: args.created.clone(),
        hash: args.hash.clone(),
    };
    let summary = source_args::runtime()?.block_on(oci_release::push(&client, &repo, &args.dir, &opts))?;
    println!(
        "pushed {repo}:{} {} ({} file(s), {})",
        summary.tag,
        summary.digest,
        summary.files,
        HumanBytes(summary.bytes)
    );
    Ok(())
}
