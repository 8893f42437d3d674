//! Where releases come from and are kept, for the commands that fetch them: the cache
//! directory, the GitHub API and its token.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use capstan_source::cache::Cache;
use capstan_source::github::{Client, Config, Token};
use capstan_source::net::NetworkTimeouts;
use capstan_source::oci::{self, OciRepo};
use capstan_source::verify::{Identity, Policy, PublicKey, TrustedRoot, Verified};

/// Flags shared by `capstan releases list/pull`, `capstan render` and `capstan releases diff`.
#[derive(Debug, Clone, clap::Args)]
pub struct SourceArgs {
    /// Release cache directory (default: $XDG_CACHE_HOME/capstan/release-cache, else
    /// ~/.cache/capstan/release-cache).
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// GitHub API base URL (GitHub Enterprise: https://HOST/api/v3).
    #[arg(long, value_name = "URL", default_value = "https://api.github.com")]
    pub github_url: String,
    /// File whose first line is a GitHub token (default: the GITHUB_TOKEN variable). The token
    /// is sent to the API host only and never printed.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Longest wait, in seconds, for a connection to a release source (GitHub, asset hosts,
    /// git over http(s), OCI registries) [default: 15].
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pub connect_timeout: Option<Duration>,
    /// Longest wait, in seconds, for the next bytes of a response (its head, then each read
    /// of its body); a timed-out GET is tried once more [default: 60].
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pub timeout: Option<Duration>,
    /// Use plain http for an OCI registry that is not on loopback (loopback registries are
    /// always spoken to over http). Registry credentials come from OCI_USERNAME and
    /// OCI_PASSWORD, or OCI_ACCESS_TOKEN (the cluster-stack operator's variables).
    #[arg(long)]
    pub insecure_registry: bool,
    /// A public key (PEM, as cosign.pub) a release from an OCI registry must carry a cosign
    /// signature of; repeat for several keys (any one suffices). A release that fails is not
    /// used, and the error names the reason. Releases from other sources are refused with it.
    #[arg(long = "verify-key", value_name = "FILE")]
    pub verify_keys: Vec<PathBuf>,
    /// A keyless (Fulcio) signer a release from an OCI registry may be signed by:
    /// `ISSUER=SUBJECT`, regexes of the OIDC issuer and of the certificate's identity (e-mail or
    /// URI), each matching the whole text; repeat for several (any one suffices). Verified
    /// offline: the certificate against --trusted-root, the time against its Rekor bundle.
    #[arg(long = "verify-identity", value_name = "ISSUER=SUBJECT", value_parser = parse_identity)]
    pub verify_identities: Vec<Identity>,
    /// Sigstore trusted root (`trusted_root.json`: Fulcio CAs and Rekor keys) for
    /// --verify-identity [default: Sigstore's public-good instance, shipped with capstan].
    #[arg(long, value_name = "FILE")]
    pub trusted_root: Option<PathBuf>,
}

/// `ISSUER=SUBJECT` of --verify-identity (split at the first `=`).
pub fn parse_identity(text: &str) -> Result<Identity, String> {
    let (issuer, subject) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?}: give ISSUER=SUBJECT (two regexes)"))?;
    if issuer.trim().is_empty() || subject.trim().is_empty() {
        return Err(format!("{text:?}: both ISSUER and SUBJECT must be given"));
    }
    Identity::new(issuer.trim(), subject.trim()).map_err(|e| format!("{text:?}: {e}"))
}

/// A positive number of seconds (`1`, `2.5`).
fn parse_seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .trim()
        .trim_end_matches('s')
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(secs > 0.0 && secs.is_finite() && secs < 1e9) {
        return Err(format!(
            "{text:?}: the timeout must be a positive number of seconds"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `$XDG_CACHE_HOME/capstan/release-cache`, else `~/.cache/capstan/release-cache`.
pub fn default_cache_dir() -> anyhow::Result<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .context("neither XDG_CACHE_HOME nor HOME is set: give --cache DIR")?,
        )
        .join(".cache"),
    };
    Ok(base.join("capstan").join("release-cache"))
}

impl SourceArgs {
    /// The cache directory: `--cache`, else the user's cache directory.
    pub fn cache_dir(&self) -> anyhow::Result<PathBuf> {
        match &self.cache {
            Some(dir) => Ok(dir.clone()),
            None => default_cache_dir(),
        }
    }

    pub fn open_cache(&self) -> anyhow::Result<Cache> {
        let dir = self.cache_dir()?;
        Cache::open(&dir).with_context(|| format!("opening the release cache {}", dir.display()))
    }

    /// The network timeouts the flags give (defaults for the rest).
    pub fn timeouts(&self) -> NetworkTimeouts {
        NetworkTimeouts::with(self.connect_timeout, self.timeout)
    }

    /// A GitHub client listing prereleases too (the commands show them marked, and a tag a
    /// user names is pulled whatever it is).
    pub fn client(&self) -> anyhow::Result<Client> {
        let token = match &self.token_file {
            Some(path) => Some(Token::from_file(path)?),
            None => Token::from_env(),
        };
        Ok(Client::new(Config {
            base_url: self.github_url.clone(),
            token,
            include_prereleases: true,
            timeouts: self.timeouts(),
            ..Config::default()
        })?)
    }
}

impl SourceArgs {
    /// A client of the registry of `repo`, with the credentials of the environment.
    pub fn oci_client(&self, repo: &OciRepo) -> anyhow::Result<oci::Client> {
        let config = oci::Config {
            credentials: oci::Credentials::from_env(),
            insecure: self.insecure_registry,
            timeouts: self.timeouts(),
            ..oci::Config::default()
        };
        Ok(oci::Client::new(&repo.host, config)?)
    }
}

impl SourceArgs {
    /// The signature policy of `--verify-key`, `--verify-identity` and `--trusted-root`
    /// (empty without them).
    pub fn policy(&self) -> anyhow::Result<Policy> {
        read_policy(
            &self.verify_keys,
            &self.verify_identities,
            self.trusted_root.as_deref(),
        )
    }

    /// Refuses `--verify-key` for `what`, a release that carries no cosign signature.
    pub fn refuse_policy_for(&self, what: &str) -> anyhow::Result<()> {
        if !self.verify_keys.is_empty() || !self.verify_identities.is_empty() {
            anyhow::bail!(
                "{what}: --verify-key and --verify-identity verify cosign signatures of releases in an OCI registry; this release has none to check (give oci://HOST/REPO@TAG)"
            );
        }
        Ok(())
    }

    /// Verifies the pulled release `repo:tag` against `--verify-key`: `None` without keys,
    /// else who signed it (recorded in the cache; a release verified before at the same
    /// manifest digest is not read again).
    pub fn verify_oci(&self, cache: &Cache, repo: &OciRepo, tag: &str) -> anyhow::Result<Option<Verified>> {
        let policy = self.policy()?;
        if policy.is_empty() {
            return Ok(None);
        }
        let digest = oci::release::cached_digest(cache, repo, tag).with_context(|| {
            format!("{repo}:{tag}: the cache does not record its manifest digest; pull it again with `capstan releases pull {repo} {tag}`")
        })?;
        if let Some(v) = oci::signature::cached_verification(cache, repo, tag, &digest, &policy) {
            return Ok(Some(v));
        }
        let client = self.oci_client(repo)?;
        let verified = runtime()?.block_on(oci::signature::verify(
            &client, cache, repo, tag, &digest, &policy,
        ))?;
        Ok(Some(verified))
    }
}

/// The signature policy of the `--verify-key` files `paths` and the keyless `identities`
/// trusted through `trusted_root` (Sigstore's public-good root without one); empty without
/// keys and identities.
pub fn read_policy(
    paths: &[PathBuf],
    identities: &[Identity],
    trusted_root: Option<&std::path::Path>,
) -> anyhow::Result<Policy> {
    let mut keys = Vec::with_capacity(paths.len());
    for path in paths {
        let text = std::fs::read(path).with_context(|| format!("reading --verify-key {}", path.display()))?;
        keys.push(PublicKey::from_pem(&text, &path.display().to_string())?);
    }
    let mut policy = Policy::keyed(keys);
    if identities.is_empty() {
        if let Some(path) = trusted_root {
            anyhow::bail!(
                "--trusted-root {}: it is the trust of keyless signatures; give --verify-identity ISSUER=SUBJECT with it",
                path.display()
            );
        }
        return Ok(policy);
    }
    let root = match trusted_root {
        Some(path) => {
            let text =
                std::fs::read(path).with_context(|| format!("reading --trusted-root {}", path.display()))?;
            TrustedRoot::from_json(&text, &path.display().to_string())?
        }
        None => TrustedRoot::public_good()?,
    };
    policy.identities = identities.to_vec();
    policy.trusted_root = Some(root);
    Ok(policy)
}

/// A runtime for one command's network work.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// The GitHub repositories with releases in the cache (`owner/name`), for error messages.
pub fn cached_repos(cache: &Cache) -> Vec<String> {
    let mut repos: Vec<String> = cache
        .releases()
        .unwrap_or_default()
        .iter()
        .filter_map(|k| {
            let mut parts = k.split('/');
            (parts.next() == Some("github")).then(|| {
                let owner = parts.next().unwrap_or_default();
                let name = parts.next().unwrap_or_default();
                format!("{owner}/{name}")
            })
        })
        .collect();
    repos.dedup();
    repos
}

/// Adds what exists to a "repository not found" error.
pub fn explain_not_found(err: anyhow::Error, cache: &Cache) -> anyhow::Error {
    let not_found = err
        .downcast_ref::<capstan_source::github::GitHubError>()
        .is_some_and(|e| matches!(e, capstan_source::github::GitHubError::NotFound { .. }))
        || err
            .downcast_ref::<capstan_source::pull::PullError>()
            .is_some_and(|e| {
                matches!(
                    e,
                    capstan_source::pull::PullError::GitHub(
                        capstan_source::github::GitHubError::NotFound { .. }
                    )
                )
            });
    if !not_found {
        return err;
    }
    let repos = cached_repos(cache);
    let known = if repos.is_empty() {
        "no repository has releases in the cache yet".to_string()
    } else {
        format!("repositories with releases in the cache: {}", repos.join(", "))
    };
    anyhow::anyhow!("{}; {known}", super::error_chain::error_text(&err))
}

fn listing_key(repo: &str) -> String {
    format!("github-listing/{repo}")
}

/// Lists `repo`'s releases, re-polling conditionally with the listing the last command stored
/// in the cache (an unchanged repository costs one `304`, which GitHub does not count against
/// the rate limit), and stores the new listing.
pub async fn releases(
    client: &Client,
    cache: &Cache,
    repo: &str,
) -> Result<Vec<capstan_source::github::Release>, capstan_source::github::GitHubError> {
    let key = listing_key(repo);
    if client.listing(repo).is_none()
        && let Ok(Some(bytes)) = cache.read_state(&key)
        && let Ok(listing) = serde_json::from_slice(&bytes)
    {
        client.restore(repo, listing);
    }
    let releases = client.releases(repo).await?;
    if let Some(listing) = client.listing(repo)
        && let Ok(bytes) = serde_json::to_vec(&listing)
        && let Err(e) = cache.write_state(&key, &bytes)
    {
        tracing::warn!(repo, error = %e, "could not store the listing for conditional re-polls");
    }
    Ok(releases)
}
