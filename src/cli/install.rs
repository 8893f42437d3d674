//! `capstan install`: renders capstan's own deployment chart (embedded, see
//! [`super::deploy_chart`]) with capstan's engine and applies it with the applier, tracked by
//! the inventory `capstan-install` in the target namespace so that a later install prunes
//! what the chart no longer makes. One line per object and a summary, like `capstan apply`.

use std::io::Write;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};

use super::kube::{connect_to, parse_duration, runtime};
use capstan_apply::{ApplyOptions, InventoryRef, parse_stream};
use capstan_chart::coalesce::merge_tables;
use capstan_chart::compiled::CompiledChart;
use capstan_chart::manifest::{self, StreamOptions};
use capstan_chart::objects::KubeVersion;
use capstan_chart::render::RenderOptions;
use capstan_chart::{strvals, values};
use capstan_template::funcs::{FuncEnv, Lookup};

/// The inventory (a ConfigMap in the target namespace) of what `capstan install` applied.
pub const INVENTORY: &str = "capstan-install";

/// Arguments of `capstan install`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Install or upgrade the capstan operator: CRDs, RBAC, Deployment and webhooks, from the chart built into this binary",
    long_about = "Install or upgrade the capstan operator in a cluster: renders capstan's own deployment \
        chart (deploy/capstan, built into this binary) with capstan's engine and server-side applies it. \
        The chart's objects are recorded in the ConfigMap `capstan-install` of the namespace; objects a \
        later version no longer renders are pruned (the CRDs never are). The webhook certificate the \
        chart generates is kept on later installs (the chart looks the existing Secret up in the cluster)."
)]
pub struct Args {
    /// Namespace of the operator (created when missing).
    #[arg(short = 'n', long, default_value = "capstan-system", value_name = "NS")]
    namespace: String,

    /// Release name (names the objects: `capstan` gives `capstan`, `capstan-webhook`, …).
    #[arg(long, default_value = "capstan", value_name = "NAME")]
    release_name: String,

    /// Values files (YAML); later files win. See the chart's values.yaml for what can be set.
    #[arg(short = 'f', long = "values", value_name = "FILE")]
    values: Vec<PathBuf>,

    /// Set values (`a.b=1,c[0]=x`).
    #[arg(long = "set", value_name = "KEY=VAL")]
    set: Vec<String>,

    /// Set values as strings.
    #[arg(long = "set-string", value_name = "KEY=VAL")]
    set_string: Vec<String>,

    /// The operator's image, `REPOSITORY[:TAG]` (sets image.repository and image.tag).
    #[arg(long, value_name = "REPOSITORY[:TAG]")]
    image: Option<String>,

    /// Kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster).
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,

    /// Kubeconfig context to use (default: the current context).
    #[arg(long, value_name = "NAME")]
    context: Option<String>,

    /// Server-side dry run: nothing changes (the namespace must exist).
    #[arg(long)]
    dry_run: bool,

    /// Wait until the operator's Deployment and the other objects are ready.
    #[arg(long)]
    wait: bool,

    /// Limit of --wait and of the wait for the CRDs to become Established.
    #[arg(long, default_value = "5m", value_parser = parse_duration, value_name = "DURATION")]
    timeout: Duration,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let runtime = runtime()?;
    let target = runtime.block_on(connect_to(
        args.kubeconfig.as_deref(),
        args.context.as_deref(),
        Some(args.namespace.as_str()),
    ))?;
    let server_version = runtime
        .block_on(target.client.apiserver_version())
        .with_context(|| format!("reading the version of {}", target.server))?;
    let kube_version = KubeVersion::parse(&server_version.git_version)
        .map_err(|e| anyhow::anyhow!("server version {:?}: {e}", server_version.git_version))?;
    let created = runtime.block_on(ensure_namespace(&target.client, &args.namespace, args.dry_run))?;

    // Rendered outside the async runtime: `lookup` blocks on it for each object it asks for.
    let stream = render(args, kube_version, cluster_lookup(&runtime, &target.client))?;
    let objects = parse_stream(&stream, "capstan chart")?;

    let opts = ApplyOptions {
        namespace: args.namespace.clone(),
        dry_run: args.dry_run,
        inventory: Some(InventoryRef {
            namespace: args.namespace.clone(),
            name: INVENTORY.into(),
        }),
        prune: true,
        // Deleting a CRD deletes every ClusterStack: never as a side effect of an install.
        prune_crds: false,
        wait: args.wait.then_some(args.timeout),
        crd_timeout: args.timeout,
        ..ApplyOptions::default()
    };
    let report = runtime.block_on(target.applier().apply(&objects, &opts))?;

    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if created {
        writeln!(out, "v1/Namespace/{} created", args.namespace)?;
    }
    for r in &report.results {
        writeln!(out, "{}", r.line())?;
    }
    for key in &report.prune_skipped {
        writeln!(out, "{key} not pruned: no longer carries this inventory's id")?;
    }
    if let Some(e) = &report.inventory_error {
        writeln!(out, "inventory not updated: {e}")?;
    }
    let dry = if args.dry_run { " (server dry run)" } else { "" };
    writeln!(out, "{}{dry}", report.summary)?;
    out.flush()?;
    if report.failed() {
        bail!(
            "{} of {} objects failed",
            report.summary.failed,
            report.results.len()
        );
    }
    Ok(())
}

/// Creates the namespace when it is missing; `true` when it did. Kept out of the applied
/// set: pruning must never delete a namespace and everything in it.
async fn ensure_namespace(client: &kube::Client, name: &str, dry_run: bool) -> anyhow::Result<bool> {
    let api: Api<Namespace> = Api::all(client.clone());
    if api
        .get_opt(name)
        .await
        .with_context(|| format!("reading namespace {name}"))?
        .is_some()
    {
        return Ok(false);
    }
    if dry_run {
        bail!(
            "namespace {name} does not exist: a server dry run needs it (install without --dry-run creates it)"
        );
    }
    let namespace = Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    match api.create(&PostParams::default(), &namespace).await {
        Ok(_) => Ok(true),
        // Created by someone else meanwhile: fine.
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
        Err(e) => Err(e).with_context(|| format!("creating namespace {name}")),
    }
}

/// The chart's manifest stream (CRDs first), like `helm install` renders it.
fn render(args: &Args, kube_version: KubeVersion, lookup: Lookup) -> anyhow::Result<String> {
    let chart = super::deploy_chart::load()?;
    capstan_chart::checks::check_release_name(&args.release_name)?;
    let opts = RenderOptions {
        release_name: args.release_name.clone(),
        namespace: args.namespace.clone(),
        kube_version,
        check_kube_version: true,
        env: Rc::new(FuncEnv::system().with_lookup(lookup)),
        ..RenderOptions::default()
    };
    let compiled = CompiledChart::new(chart)?;
    let rendered = compiled.render(&user_values(args)?, &opts)?;
    let chart = compiled.chart();
    let manifests = manifest::build(chart, &rendered)?;
    let stream_opts = StreamOptions {
        include_crds: true,
        skip_tests: true,
        no_hooks: false,
        show_only: Vec::new(),
    };
    Ok(manifest::stream(chart, &manifests, &stream_opts))
}

/// Values from `-f` files, `--set`, `--set-string` and `--image`, in Helm's order.
fn user_values(args: &Args) -> anyhow::Result<capstan_template::Value> {
    let base = strvals::empty();
    let mut files = Vec::new();
    for file in &args.values {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("reading values file {}", file.display()))?;
        files.push(values::parse(&text, &file.display().to_string())?);
    }
    // Later files win: merge from the last one (the destination wins when merging).
    for parsed in files.iter().rev() {
        merge_tables(&base, parsed);
    }
    for e in &args.set {
        strvals::apply(&base, e, strvals::Typing::Typed)?;
    }
    for e in &args.set_string {
        strvals::apply(&base, e, strvals::Typing::Strings)?;
    }
    if let Some(image) = &args.image {
        let (repository, tag) = split_image(image)?;
        strvals::apply_json(
            &base,
            &format!("image.repository={}", serde_json::to_string(repository)?),
        )?;
        if let Some(tag) = tag {
            strvals::apply_json(&base, &format!("image.tag={}", serde_json::to_string(tag)?))?;
        }
    }
    Ok(base)
}

/// `REPOSITORY[:TAG]`: a `:` after the last `/` starts the tag (`host:5000/capstan` has none).
fn split_image(image: &str) -> anyhow::Result<(&str, Option<&str>)> {
    if image.is_empty() || image.contains('@') {
        bail!("--image {image:?}: expected REPOSITORY[:TAG] (digests are not supported by the chart)");
    }
    let name_start = image.rfind('/').map_or(0, |i| i + 1);
    Ok(match image[name_start..].rfind(':') {
        Some(i) => (&image[..name_start + i], Some(&image[name_start + i + 1..])),
        None => (image, None),
    })
}

fn cluster_lookup(runtime: &tokio::runtime::Runtime, client: &kube::Client) -> Lookup {
    capstan_operator::cli::clusters::cluster_lookup(runtime.handle().clone(), client.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_splits_at_the_tag_colon_only() {
        assert_eq!(split_image("capstan").unwrap(), ("capstan", None));
        assert_eq!(
            split_image("ghcr.io/x/capstan:v1").unwrap(),
            ("ghcr.io/x/capstan", Some("v1"))
        );
        assert_eq!(
            split_image("host:5000/capstan").unwrap(),
            ("host:5000/capstan", None)
        );
        assert_eq!(
            split_image("host:5000/capstan:dev").unwrap(),
            ("host:5000/capstan", Some("dev"))
        );
        assert!(split_image("x@sha256:00").is_err());
    }
}
