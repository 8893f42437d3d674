//! `capstan releases build SRC`: a stack source tree built into a release like `csctl create`,
//! in csctl's `hash` mode (`v0-sha.<content hash>`) or `stable` mode (the next major after the
//! newest stable release in the repository `--push` names; nothing is published when that
//! release was built from the same content), written to `--output` and/or published.

use std::path::PathBuf;

use anyhow::{Context, bail};

use capstan_source::local;
use capstan_source::oci::release::{self as oci_release, PushOptions};
use capstan_source::oci::{OciError, OciRepo};
use capstan_stack::build::{self, CsctlConfig};

use super::source_args::{self, SourceArgs};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
    Hash,
    Stable,
}

#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// The stack source tree (csctl.yaml, cluster-class/, cluster-addon/, …).
    source: PathBuf,
    /// csctl's version mode: `hash` (v0-sha.<hash of the content>) or `stable` (the next vN;
    /// needs --push to know the published versions).
    #[arg(long, value_enum, default_value_t = Mode::Hash)]
    mode: Mode,
    /// Write the release here (created; must be empty).
    #[arg(long, value_name = "DIR")]
    output: Option<PathBuf>,
    /// Publish the release to this OCI repository, `oci://HOST/REPO`, in csctl's layout.
    #[arg(long, value_name = "oci://HOST/REPO")]
    push: Option<String>,
    /// The manifest's `org.opencontainers.image.created` (default: now, UTC).
    #[arg(long, value_name = "RFC3339")]
    created: Option<String>,
    /// Sign the pushed manifest with this private key in cosign's format (see `releases push
    /// --sign-key`; the password of an encrypted key from COSIGN_PASSWORD).
    #[arg(long, value_name = "FILE", requires = "push")]
    sign_key: Option<PathBuf>,
    #[command(flatten)]
    sources: SourceArgs,
}

pub fn run(args: &BuildArgs) -> anyhow::Result<()> {
    if args.output.is_none() && args.push.is_none() {
        bail!("give --output DIR, --push oci://HOST/REPO, or both");
    }
    let repo = args.push.as_deref().map(OciRepo::parse).transpose()?;
    let key = args
        .sign_key
        .as_deref()
        .map(super::releases_push::signing_key)
        .transpose()?;
    let runtime = source_args::runtime()?;
    let client = repo.as_ref().map(|r| args.sources.oci_client(r)).transpose()?;
    let hash = build::content_hash(&args.source)?;
    let version = match (args.mode, &repo, &client) {
        (Mode::Hash, _, _) => build::hash_version(&args.source)?,
        (Mode::Stable, Some(repo), Some(client)) => {
            let stack = CsctlConfig::load(&args.source)?.stack;
            // A repository the registry does not know yet holds no release: this is the first.
            let tags = match runtime.block_on(oci_release::tags(client, repo)) {
                Err(oci_release::ReleaseError::Oci(OciError::NotFound { .. })) => Vec::new(),
                other => other?,
            };
            let (latest, next) = oci_release::next_stable(&tags, &stack);
            if let Some(latest) = latest {
                let published = runtime.block_on(oci_release::published_hash(client, repo, &latest.tag()))?;
                if published.as_deref() == Some(&hash[..7]) {
                    println!(
                        "{}: unchanged since {latest} (hash {}); nothing built or published",
                        args.source.display(),
                        &hash[..7]
                    );
                    return Ok(());
                }
            }
            next
        }
        (Mode::Stable, _, _) => {
            bail!("--mode stable needs --push oci://HOST/REPO: the next version follows the published ones")
        }
    };
    let scratch;
    let out = match &args.output {
        Some(dir) => dir.clone(),
        None => {
            scratch = ScratchDir(local::scratch_dir()?);
            scratch.0.join("release")
        }
    };
    let release = build::build(&args.source, &version, &out)
        .with_context(|| format!("building {} at {version}", args.source.display()))?;
    let tag = release.tag().tag();
    println!("built {tag} into {}", out.display());
    if let (Some(repo), Some(client)) = (&repo, &client) {
        let opts = PushOptions {
            tag: Some(tag.clone()),
            created: args.created.clone(),
            hash: Some(hash.clone()),
        };
        let summary = runtime.block_on(oci_release::push(client, repo, &out, &opts))?;
        println!(
            "pushed {repo}:{} {} ({} file(s))",
            summary.tag, summary.digest, summary.files
        );
        if let Some(key) = &key {
            super::releases_push::sign(&runtime, client, repo, &summary.digest, key)?;
        }
    }
    Ok(())
}

/// A scratch directory removed when the command ends.
struct ScratchDir(PathBuf);

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
