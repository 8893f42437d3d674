//! `capstan releases mirror SRC oci://HOST/REPO`: a release and everything its render needs
//! copied into one registry for an air gap — the release in csctl's layout (an OCI release byte
//! for byte with its cosign signature), every chart dependency of its ClusterClass chart and
//! addon charts/stages resolved as a render resolves them and copied under `REPO/charts` (an
//! `oci://` chart byte for byte with its signature, a Helm repository's pushed as an OCI chart
//! with its `.prov` as the provenance layer) — and the `--repository-mirror` mapping that
//! makes a render resolve from there.

use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::{Context, bail};

use capstan_source::oci::mirror;
use capstan_source::oci::release::{self as oci_release, OciRepo, PushOptions};

use super::release_ref::ReleaseRef;
use super::repository_args::RepositoryArgs;
use super::source_args::{self, SourceArgs};

#[derive(Debug, clap::Args)]
pub struct MirrorArgs {
    /// The release: oci://HOST/REPO@TAG, OWNER/REPO@TAG, git+URL#REF[:PATH], a release
    /// directory or a tag in the cache.
    source: String,
    /// The registry repository to copy into, `oci://HOST/REPO` (charts go to REPO/charts).
    destination: String,
    /// Also write the mapping (one `FROM=TO` a line) to this file, for
    /// `--repository-mirrors-file` of `render` and `capstan operator`.
    #[arg(long, value_name = "FILE")]
    write_mirrors: Option<PathBuf>,
    /// Where the chart dependencies are fetched from for the copy (mirrors, credentials).
    #[command(flatten)]
    repositories: RepositoryArgs,
    #[command(flatten)]
    sources: SourceArgs,
}

pub fn run(args: &MirrorArgs) -> anyhow::Result<()> {
    if !args.destination.starts_with("oci://") {
        bail!(
            "a mirror is an OCI registry: give oci://HOST/REPO, not {}",
            args.destination
        );
    }
    let dst = OciRepo::parse(&args.destination)?;
    let dst_client = args.sources.oci_client(&dst)?;
    let runtime = source_args::runtime()?;
    let Some(release) = ReleaseRef::parse(&args.source)? else {
        bail!(
            "{}: not a release; give {}",
            args.source,
            super::release_ref::FORMS
        );
    };
    let opened = super::stack_input::open_ref(&args.source, &release, &args.sources)?;
    let tag = opened.release.tag().tag();

    // The release: byte for byte from a registry (its signatures stay valid), else published.
    if let ReleaseRef::Oci {
        repo: src,
        tag: src_tag,
    } = &release
    {
        let src_client = args.sources.oci_client(src)?;
        let copy = runtime.block_on(mirror::copy_release(&src_client, src, &dst_client, &dst, src_tag))?;
        println!(
            "copied {src}:{src_tag} to {dst}:{src_tag} {} ({} blob(s) uploaded, {})",
            copy.digest,
            copy.blobs_copied,
            signed_note(&copy)
        );
    } else {
        let opts = PushOptions {
            tag: Some(tag.clone()),
            ..PushOptions::default()
        };
        let pushed = runtime.block_on(oci_release::push(&dst_client, &dst, opened.release.dir(), &opts))?;
        println!("pushed {dst}:{} {}", pushed.tag, pushed.digest);
    }

    // Every chart dependency, as a render resolves it.
    let cache = args.sources.open_cache()?;
    let resolver = args.repositories.resolver(cache, false, &args.sources)?;
    let mut charts = vec![opened.release.cluster_class_chart()?];
    charts.extend(opened.release.addon_charts()?.into_iter().map(|a| a.chart));
    let mut pushed = BTreeSet::new();
    let mut mapping = BTreeSet::new();
    for chart in &charts {
        for dep in resolver.resolve_dependencies(chart, None)? {
            if dep.sha256.is_empty() {
                continue; // a file:// chart travels inside the release
            }
            mapping.insert(mirror::mirror_entry(&dep.repository, &dst));
            if !pushed.insert((dep.name.clone(), dep.version.clone())) {
                continue;
            }
            if let Some((src_client, src, tag)) = resolver.oci_origin(&dep)? {
                // Byte for byte, so the chart's cosign signature applies to the copy.
                let copy = runtime.block_on(mirror::copy_chart(
                    &src_client,
                    &src,
                    &dst_client,
                    &dst,
                    &dep.name,
                    &tag,
                ))?;
                println!(
                    "copied chart {src}:{tag} to {}/{}:{tag} {} ({})",
                    mirror::charts_repo(&dst),
                    dep.name,
                    copy.digest,
                    signed_note(&copy)
                );
                continue;
            }
            let archive =
                std::fs::read(&dep.path).with_context(|| format!("reading {}", dep.path.display()))?;
            let meta =
                capstan_chart::load::load_archive(&archive, &format!("{}-{}.tgz", dep.name, dep.version))
                    .map_err(|e| anyhow::anyhow!("{} {}: {e}", dep.name, dep.version))?
                    .metadata;
            let provenance = resolver.provenance(&dep)?;
            let signed = provenance.is_some();
            let digest = runtime.block_on(mirror::push_chart(
                &dst_client,
                &dst,
                mirror::ChartToPush {
                    name: dep.name.clone(),
                    version: dep.version.clone(),
                    archive,
                    metadata: chart_config(&meta),
                    provenance,
                },
            ))?;
            println!(
                "pushed chart {}/{}:{} {digest} (from {}{})",
                mirror::charts_repo(&dst),
                dep.name,
                mirror::chart_tag(&dep.version),
                dep.repository,
                if signed { ", with its provenance" } else { "" }
            );
        }
    }
    let text: String = mapping.iter().map(|m| format!("{m}\n")).collect();
    println!("repository mirrors for a render from {dst} alone:");
    for m in &mapping {
        println!("  --repository-mirror {m}");
    }
    if let Some(file) = &args.write_mirrors {
        std::fs::write(file, &text).with_context(|| format!("writing {}", file.display()))?;
        println!("wrote {}", file.display());
    }
    Ok(())
}

/// The config blob of a chart pushed to a registry: its metadata as JSON, as `helm push`
/// writes it (empty fields left out).
fn chart_config(meta: &capstan_chart::Metadata) -> serde_json::Value {
    let mut config = serde_json::json!({
        "apiVersion": meta.api_version,
        "name": meta.name,
        "version": meta.version,
    });
    for (key, value) in [
        ("appVersion", &meta.app_version),
        ("description", &meta.description),
        ("kubeVersion", &meta.kube_version),
        ("type", &meta.chart_type),
    ] {
        if !value.is_empty() {
            config[key] = serde_json::Value::String(value.clone());
        }
    }
    config
}

/// What a copy carried along to verify it: its cosign signature, its Sigstore bundles.
fn signed_note(copy: &mirror::CopySummary) -> String {
    match (copy.signature, copy.bundles) {
        (false, 0) => "unsigned".to_string(),
        (true, 0) => "with its cosign signature".to_string(),
        (false, n) => format!("with {n} Sigstore bundle(s)"),
        (true, n) => format!("with its cosign signature and {n} Sigstore bundle(s)"),
    }
}
