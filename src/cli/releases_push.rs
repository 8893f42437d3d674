//! `capstan releases push DIR oci://HOST/REPO`: a release directory published to an OCI
//! registry in csctl's layout; an existing tag is never overwritten. With `--sign-key` the
//! manifest is signed in cosign's format.

use std::path::{Path, PathBuf};

use anyhow::Context;
use indicatif::HumanBytes;

use capstan_source::oci::OciRepo;
use capstan_source::oci::release::{self as oci_release, PushOptions};
use capstan_source::oci::signature;
use capstan_source::verify::SigningKey;

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
    /// Sign the pushed manifest with this private key in cosign's format (the signature at
    /// tag sha256-<hex>.sig): cosign's encrypted cosign.key (password from COSIGN_PASSWORD) or
    /// an unencrypted PKCS#8 EC P-256 key.
    #[arg(long, value_name = "FILE")]
    sign_key: Option<PathBuf>,
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
    // Read before the push: a wrong password publishes nothing.
    let key = args.sign_key.as_deref().map(signing_key).transpose()?;
    let client = args.sources.oci_client(&repo)?;
    let opts = PushOptions {
        tag: args.tag.clone(),
        created: args.created.clone(),
        hash: args.hash.clone(),
    };
    let runtime = source_args::runtime()?;
    let summary = runtime.block_on(oci_release::push(&client, &repo, &args.dir, &opts))?;
    println!(
        "pushed {repo}:{} {} ({} file(s), {})",
        summary.tag,
        summary.digest,
        summary.files,
        HumanBytes(summary.bytes)
    );
    if let Some(key) = &key {
        sign(&runtime, &client, &repo, &summary.digest, key)?;
    }
    Ok(())
}

/// The private key of `--sign-key`, opened with COSIGN_PASSWORD when it is encrypted.
pub fn signing_key(path: &Path) -> anyhow::Result<SigningKey> {
    let text = std::fs::read(path).with_context(|| format!("reading --sign-key {}", path.display()))?;
    let password = std::env::var_os("COSIGN_PASSWORD").map(|p| p.into_encoded_bytes());
    Ok(SigningKey::from_pem(
        &text,
        password.as_deref(),
        &path.display().to_string(),
    )?)
}

/// Signs the pushed manifest `digest` and says where the signature is.
pub fn sign(
    runtime: &tokio::runtime::Runtime,
    client: &capstan_source::oci::Client,
    repo: &OciRepo,
    digest: &str,
    key: &SigningKey,
) -> anyhow::Result<()> {
    let tag = runtime.block_on(signature::sign(client, repo, digest, key))?;
    println!(
        "signed {repo}@{digest} with key {} ({repo}:{tag})",
        key.public_key().fingerprint()
    );
    Ok(())
}
