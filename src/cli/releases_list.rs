//! `capstan releases list REPO`: the cluster-stack releases of a GitHub repository or an OCI
//! registry's repository, filtered, newest first.

use std::cmp::Ordering;
use std::io::Write;

use anyhow::bail;

use capstan_stack::{KubernetesVersion, ReleaseTag};

use super::source_args::{self, SourceArgs};

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// The repository: `owner/name` on GitHub (e.g. SovereignCloudStack/cluster-stacks) or
    /// `oci://HOST/REPO` (e.g. oci://registry.scs.community/kaas/cluster-stacks).
    repo: String,
    /// Only releases of this provider (e.g. docker, openstack).
    #[arg(long)]
    provider: Option<String>,
    /// Only releases of this stack name (e.g. scs, ferrol).
    #[arg(long)]
    name: Option<String>,
    /// Only releases for this Kubernetes minor version (e.g. 1.27).
    #[arg(long, value_name = "MAJOR.MINOR")]
    kubernetes: Option<String>,
    /// Only releases of this channel: stable, a pre-release channel (alpha, beta, rc, …) or
    /// sha (hash versions `v0-sha.<hash>`; `custom` is accepted for it).
    #[arg(long)]
    channel: Option<String>,
    /// Output: a table or JSON.
    #[arg(short = 'o', long, value_enum, default_value_t = ListFormat::Table)]
    output: ListFormat,
    #[command(flatten)]
    sources: SourceArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ListFormat {
    Table,
    Json,
}

/// Newest first: by stack (provider, name ascending; Kubernetes version descending), then by
/// version descending. Hash versions say nothing about age, so among themselves they keep
/// GitHub's order (newest first): the sort is stable.
fn newest_first(a: &ReleaseTag, b: &ReleaseTag) -> Ordering {
    let (sa, sb) = (a.stack(), b.stack());
    sa.provider()
        .cmp(sb.provider())
        .then_with(|| sa.name().cmp(sb.name()))
        .then_with(|| sb.kubernetes().cmp(&sa.kubernetes()))
        .then_with(|| {
            if a.version().is_hash() && b.version().is_hash() {
                Ordering::Equal
            } else {
                b.version().cmp(a.version())
            }
        })
}

pub fn run(args: &ListArgs) -> anyhow::Result<()> {
    let kubernetes = match &args.kubernetes {
        Some(k) => Some(KubernetesVersion::parse(k.trim_start_matches('v'))?),
        None => None,
    };
    let channel = args
        .channel
        .as_deref()
        .map(|c| if c == "custom" { "sha" } else { c });
    let releases = list_entries(args)?;
    let mut other = 0usize;
    let mut rows: Vec<(ReleaseTag, &Entry)> = Vec::new();
    for r in &releases {
        let Ok(tag) = ReleaseTag::parse(&r.tag) else {
            other += 1;
            continue;
        };
        let s = tag.stack();
        let keep = args.provider.as_deref().is_none_or(|p| p == s.provider())
            && args.name.as_deref().is_none_or(|n| n == s.name())
            && kubernetes.is_none_or(|k| k == s.kubernetes())
            && channel.is_none_or(|c| c == tag.version().channel());
        if keep {
            rows.push((tag, r));
        }
    }
    rows.sort_by(|a, b| newest_first(&a.0, &b.0));
    let signed = signed_states(args, &rows)?;
    let mut out = std::io::stdout().lock();
    if args.output == ListFormat::Json {
        let list: Vec<serde_json::Value> = rows
            .iter()
            .zip(&signed)
            .map(|((tag, r), signed)| {
                serde_json::json!({
                    "tag": r.tag,
                    "provider": tag.stack().provider(),
                    "name": tag.stack().name(),
                    "kubernetes": tag.stack().kubernetes().to_string(),
                    "version": tag.version().to_string(),
                    "channel": tag.version().channel(),
                    "clusterClass": tag.cluster_class_name(),
                    "prerelease": r.prerelease,
                    "assets": r.assets,
                    "size": r.size,
                    "signed": signed,
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&list)?)?;
    } else {
        if rows.is_empty() {
            if releases.is_empty() {
                bail!("repository {} has no published releases", args.repo);
            }
            bail!(
                "none of the {} releases of {} matches the filters",
                releases.len(),
                args.repo
            );
        }
        let width = rows.iter().map(|(_, r)| r.tag.len()).max().unwrap_or(3).max(3);
        writeln!(
            out,
            "{:width$}  {:10}  {:10}  {:10}  {:14}  {:8}  {:7}  ASSETS",
            "TAG", "PROVIDER", "NAME", "KUBERNETES", "VERSION", "CHANNEL", "SIGNED"
        )?;
        for ((tag, r), signed) in rows.iter().zip(&signed) {
            let channel = if r.prerelease {
                format!("{} (pre)", tag.version().channel())
            } else {
                tag.version().channel().to_string()
            };
            writeln!(
                out,
                "{:width$}  {:10}  {:10}  {:10}  {:14}  {:8}  {:7}  {}",
                r.tag,
                tag.stack().provider(),
                tag.stack().name(),
                tag.stack().kubernetes().to_string(),
                tag.version().to_string(),
                channel,
                signed_word(*signed),
                r.assets.map_or_else(|| "-".to_string(), |n| n.to_string())
            )?;
        }
    }
    if other > 0 {
        eprintln!(
            "({other} release(s) of {} have tags that are not cluster-stack release tags; not listed)",
            args.repo
        );
    }
    Ok(())
}

/// `yes`, `no`, or `unknown` (not an OCI release, or the registry did not say).
fn signed_word(signed: Option<bool>) -> &'static str {
    match signed {
        Some(true) => "yes",
        Some(false) => "no",
        None => "unknown",
    }
}

/// Whether each listed release carries a cosign signature, without a policy: for an OCI
/// repository a `HEAD` of the tag (its digest) and one of its `sha256-<hex>.sig` tag, eight at
/// a time; `None` for other sources (GitHub releases carry no cosign signature to look for).
fn signed_states(args: &ListArgs, rows: &[(ReleaseTag, &Entry)]) -> anyhow::Result<Vec<Option<bool>>> {
    use futures::StreamExt;
    if !args.repo.starts_with("oci://") {
        return Ok(vec![None; rows.len()]);
    }
    let repo = capstan_source::oci::OciRepo::parse(&args.repo)?;
    let client = args.sources.oci_client(&repo)?;
    let (repo, client) = (&repo, &client);
    let states = futures::stream::iter(rows.iter().map(|(_, r)| async move {
        let head = client.head_manifest(&repo.repository, &r.tag).await.ok()??;
        let digest = head.digest?;
        capstan_source::oci::signature::is_signed(client, repo, &digest)
            .await
            .ok()
    }))
    .buffered(8)
    .collect::<Vec<_>>();
    Ok(source_args::runtime()?.block_on(states))
}

/// One release as a source lists it; the OCI tag list tells nothing of a release's files.
struct Entry {
    tag: String,
    prerelease: bool,
    assets: Option<usize>,
    size: Option<u64>,
}

fn list_entries(args: &ListArgs) -> anyhow::Result<Vec<Entry>> {
    if args.repo.starts_with("oci://") {
        let repo = capstan_source::oci::OciRepo::parse(&args.repo)?;
        let client = args.sources.oci_client(&repo)?;
        let tags = source_args::runtime()?.block_on(capstan_source::oci::release::tags(&client, &repo))?;
        return Ok(tags
            .into_iter()
            .map(|tag| Entry {
                tag,
                prerelease: false,
                assets: None,
                size: None,
            })
            .collect());
    }
    let client = args.sources.client()?;
    let cache = args.sources.open_cache()?;
    let releases = match source_args::runtime()?.block_on(source_args::releases(&client, &cache, &args.repo))
    {
        Ok(r) => r,
        Err(e) => return Err(source_args::explain_not_found(e.into(), &cache)),
    };
    Ok(releases
        .into_iter()
        .map(|r| Entry {
            tag: r.tag,
            prerelease: r.prerelease,
            assets: Some(r.assets.len()),
            size: Some(r.assets.iter().map(|a| a.size).sum()),
        })
        .collect())
}
