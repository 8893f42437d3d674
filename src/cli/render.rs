//! `capstan render`: render a chart offline, like `helm template`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use anyhow::{Context, bail};

use capstan_chart::coalesce::merge_tables;
use capstan_chart::compiled::CompiledChart;
use capstan_chart::ignore::Glob;
use capstan_chart::manifest::{self, StreamOptions};
use capstan_chart::objects::KubeVersion;
use capstan_chart::render::RenderOptions;
use capstan_chart::{Chart, load, strvals, values};
use capstan_template::funcs::FuncEnv;

/// Arguments of `capstan render`.
#[derive(Debug, clap::Args)]
#[command(
    about = "Render a Helm chart, or a whole cluster-stack release, offline like `helm template` (Helm v4.2.3)",
    long_about = "Render a Helm chart offline, byte-for-byte like `helm template` (Helm v4.2.3).\n\n\
        Usage like helm: `capstan render [NAME] CHART`, where CHART is a chart directory or a .tgz \
        archive and NAME the release name (default: release-name).\n\n\
        `capstan render RELEASE --cluster cluster.yaml` renders a whole cluster-stack release instead: \
        RELEASE is a release directory (metadata.yaml and chart archives), a stack source tree \
        (csctl.yaml), OWNER/REPO@TAG (a GitHub release, pulled into the cache when missing), \
        oci://HOST/REPO@TAG (a release in an OCI registry, likewise), git+URL#REF[:PATH] (a git commit built into a v0-sha.<hash> release) or a release tag \
        already in the cache; the ClusterClass chart and the addon chart(s) are rendered with the runtime values \
        computed from the Cluster (and --control-plane, --infra-cluster), with the -f/--values files layered \
        over the addon charts' values, one stream per part."
)]
pub struct Args {
    /// `[NAME] CHART`: optional release name, then the chart directory or .tgz; or RELEASE.
    #[arg(required = true, num_args = 1..=2, value_name = "[NAME] CHART | RELEASE")]
    positional: Vec<String>,

    /// Workload objects for rendering a whole release.
    #[command(flatten)]
    objects: super::stack_input::ObjectArgs,

    /// Where releases named by tag come from (OWNER/REPO@TAG, oci://HOST/REPO@TAG, git+URL#REF,
    /// a cached tag).
    #[command(flatten)]
    sources: super::source_args::SourceArgs,

    /// Values files (YAML; `-` reads stdin); later files win. For a whole release: user
    /// values for the addon charts, layered over the values computed from the Cluster as the
    /// operator layers a ClusterStack's `addonValues` and a Cluster's values.
    #[arg(short = 'f', long = "values", value_name = "FILE")]
    values: Vec<PathBuf>,

    /// Set values (`a.b=1,c[0]=x`); numbers become int64 like Helm's --set.
    #[arg(long = "set", value_name = "KEY=VAL")]
    set: Vec<String>,

    /// Set values as strings.
    #[arg(long = "set-string", value_name = "KEY=VAL")]
    set_string: Vec<String>,

    /// Set values from JSON (`a.b={"x":1}`).
    #[arg(long = "set-json", value_name = "KEY=JSON")]
    set_json: Vec<String>,

    /// Set values from files (`key=path`): the value is the file's content.
    #[arg(long = "set-file", value_name = "KEY=PATH")]
    set_file: Vec<String>,

    /// Release namespace (default: `default`; for a release, the ClusterClass part's
    /// namespace, default: the Cluster's).
    #[arg(short = 'n', long)]
    namespace: Option<String>,

    /// Kubernetes version for `.Capabilities` and the chart's kubeVersion check.
    #[arg(long, value_name = "VERSION")]
    kube_version: Option<String>,

    /// Extra API versions for `.Capabilities.APIVersions` (repeatable or comma-separated).
    #[arg(
        short = 'a',
        long = "api-versions",
        value_name = "GROUP/VERSION",
        value_delimiter = ','
    )]
    api_versions: Vec<String>,

    /// Render as an upgrade (`.Release.IsUpgrade`).
    #[arg(long)]
    is_upgrade: bool,

    /// Resolve the dependencies `charts/` lacks (Chart.lock when in sync, else Chart.yaml's
    /// constraints) through capstan's cache, as `helm template --dependency-update`; a second
    /// render makes no request. A whole release always resolves them (the operator does).
    #[arg(long)]
    dependency_update: bool,

    /// Where chart dependencies come from (mirrors, credentials, --offline).
    #[command(flatten)]
    repositories: super::repository_args::RepositoryArgs,

    /// Print the chart's CRDs (unrendered) first.
    #[arg(long)]
    include_crds: bool,

    /// Leave out test hooks.
    #[arg(long)]
    skip_tests: bool,

    /// Leave out hooks.
    #[arg(long)]
    no_hooks: bool,

    /// Only print manifests from these templates (`chart/templates/x.yaml`).
    #[arg(short = 's', long = "show-only", value_name = "PATH")]
    show_only: Vec<String>,

    /// Fail on references to missing values (`missingkey=error`).
    #[arg(long)]
    strict: bool,

    /// Write each template's manifests to files below this directory instead of stdout.
    #[arg(long, value_name = "DIR")]
    output_dir: Option<PathBuf>,

    /// Answer the chart's `lookup` from the cluster of this kubeconfig (read-only), as
    /// `helm install` would; without it `lookup` finds nothing, as in `helm template`.
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,

    /// Kubeconfig context for --kubeconfig.
    #[arg(long, value_name = "NAME", requires = "kubeconfig")]
    context: Option<String>,

    /// Print the ClusterClass chart's objects as the operator applies them where this Cluster
    /// API version is served: `v1beta2` converts the v1beta1 ClusterClass, kubeadm and docker
    /// templates (what Cluster API's conversion drops is said on stderr; what v1beta2 cannot
    /// say is an error naming the field), `v1beta1` refuses v1beta2 ones. For a whole release
    /// only its ClusterClass part. Without it the output is Helm's, byte for byte.
    #[arg(long, value_enum, value_name = "VERSION")]
    cluster_api: Option<super::render_capi::ClusterApi>,

    /// Output format: the manifest stream, a JSON list of objects, or the raw per-template
    /// engine output as a JSON object (`{"chart/templates/x.yaml": "text", …}`).
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Yaml)]
    output: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Yaml,
    Json,
    TemplatesJson,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    if let [single] = args.positional.as_slice()
        && (super::stack_input::is_release(Path::new(single))
            || super::stack_input::names_a_release(single)
            || args.objects.any())
    {
        return render_release(args, single);
    }
    if args.objects.any() {
        bail!(
            "--cluster, --control-plane and --infra-cluster apply to a whole release: give one RELEASE argument"
        );
    }
    if args.cluster_api.is_some() && (args.output_dir.is_some() || args.output == Format::TemplatesJson) {
        bail!(
            "--cluster-api converts the manifest stream: it does not go with --output-dir or -o templates-json for a single chart"
        );
    }
    // Helm's order: the flag, the chart's dependencies, the release name; then, in the
    // render, the values schema before the chart's kubeVersion.
    let kube_version = kube_version(args.kube_version.as_deref())?;
    let lookup_env = LookupEnv::new(args)?;
    let (release_name, chart_path) = release_and_chart(&args.positional)?;
    let chart = load::load(Path::new(&chart_path)).with_context(|| format!("loading chart {chart_path}"))?;
    // Like `helm template`: a chart's missing dependencies are fetched with
    // --dependency-update, else refused with Helm's message.
    let chart = if args.dependency_update {
        let chart_dir = Path::new(&chart_path).is_dir().then(|| Path::new(&chart_path));
        let resolver = super::repository_args::LazyResolver::new(&args.repositories, &args.sources);
        capstan_chart::deps::DependencyResolver::resolve(&resolver, chart, chart_dir)
            .map_err(anyhow::Error::msg)?
    } else {
        chart
    };
    check_dependencies(&chart)?;
    let user_values = user_values(args)?;
    capstan_chart::checks::check_release_name(&release_name)?;
    let opts = RenderOptions {
        release_name,
        namespace: args.namespace.clone().unwrap_or_else(|| "default".to_string()),
        is_install: !args.is_upgrade,
        is_upgrade: args.is_upgrade,
        kube_version,
        api_versions: args.api_versions.clone(),
        strict: args.strict,
        check_kube_version: true,
        env: lookup_env.env.clone(),
        ..RenderOptions::default()
    };
    let compiled = CompiledChart::new(chart)?;
    let rendered = compiled.render(&user_values, &opts)?;
    let chart = compiled.chart();
    let mut out = std::io::stdout().lock();
    match args.output {
        Format::TemplatesJson => {
            out.write_all(templates_json(&rendered)?.as_bytes())?;
        }
        Format::Yaml | Format::Json => {
            let manifests = manifest::build(chart, &rendered)?;
            // The documents are copied out; a large chart's raw output need not stay alongside.
            drop(rendered);
            let stream_opts = StreamOptions {
                include_crds: args.include_crds,
                skip_tests: args.skip_tests,
                no_hooks: args.no_hooks,
                // `--show-only` filters the finished stream, as `helm template` does.
                show_only: Vec::new(),
            };
            let mut stream = manifest::stream(chart, &manifests, &stream_opts);
            if !args.show_only.is_empty() {
                stream = show_only(&stream, &args.show_only)?;
            }
            if let Some(version) = args.cluster_api {
                stream = super::render_capi::stream_in(&stream, version, &opts.namespace)?;
            }
            if let Some(dir) = &args.output_dir {
                write_output_dir(dir, &manifests)?;
            } else if args.output == Format::Yaml {
                out.write_all(stream.as_bytes())?;
            } else {
                let docs = manifest::split_documents(&stream);
                let mut objects = Vec::new();
                for doc in docs {
                    let value = values::parse_document(&doc).map_err(anyhow::Error::msg)?;
                    if !value.is_nil() {
                        objects.push(super::output::value_to_json(&value));
                    }
                }
                writeln!(out, "{}", serde_json::to_string_pretty(&objects)?)?;
            }
        }
    }
    Ok(())
}

/// `helm template --show-only`: each pattern (a Go `filepath.Match` glob) selects the
/// documents whose `# Source:` path, without the chart name, it matches; documents print
/// per pattern, in stream order; a pattern that matches nothing is an error.
fn show_only(stream: &str, patterns: &[String]) -> anyhow::Result<String> {
    let docs = manifest::split_documents(stream);
    let mut out = String::new();
    for pattern in patterns {
        let glob = Glob::compile(pattern).ok();
        let mut missing = true;
        for doc in &docs {
            let Some(path) = doc
                .lines()
                .find_map(|l| l.strip_prefix("# Source: "))
                .and_then(|source| source.split_once('/'))
                .map(|(_, rest)| rest)
            else {
                continue;
            };
            if glob.as_ref().is_some_and(|g| g.matches(path)) {
                out.push_str(&format!("---\n{doc}\n"));
                missing = false;
            }
        }
        if missing {
            bail!("could not find template {pattern} in chart");
        }
    }
    Ok(out)
}

/// `[NAME] CHART` like `helm template`; `CHART NAME` is accepted too when only the first
/// argument names an existing path.
fn release_and_chart(positional: &[String]) -> anyhow::Result<(String, String)> {
    match positional {
        [chart] => Ok(("release-name".to_string(), chart.clone())),
        [first, second] => {
            let exists = |p: &str| Path::new(p).exists();
            if exists(first) && !exists(second) {
                Ok((second.clone(), first.clone()))
            } else {
                Ok((first.clone(), second.clone()))
            }
        }
        _ => bail!("expected [NAME] CHART"),
    }
}

/// `--kube-version` as `helm template` reads it; empty or absent: Helm's default.
fn kube_version(flag: Option<&str>) -> anyhow::Result<KubeVersion> {
    match flag {
        None | Some("") => Ok(KubeVersion::helm_default()),
        Some(text) => {
            KubeVersion::parse(text).map_err(|e| anyhow::anyhow!("invalid kube version '{text}': {e}"))
        }
    }
}

/// `helm template` refuses charts whose declared dependencies are not in `charts/`.
fn check_dependencies(chart: &Chart) -> anyhow::Result<()> {
    Ok(capstan_chart::checks::check_dependencies(chart)?)
}

/// The engine output as the corpus goldens store it: keys sorted, one-space indent,
/// non-ASCII kept (Python's `json.dumps(indent=1, sort_keys=True, ensure_ascii=False)`).
pub fn templates_json(rendered: &BTreeMap<String, String>) -> anyhow::Result<String> {
    let mut buf = Vec::new();
    let mut ser =
        serde_json::Serializer::with_formatter(&mut buf, serde_json::ser::PrettyFormatter::with_indent(b" "));
    serde::Serialize::serialize(rendered, &mut ser)?;
    buf.push(b'\n');
    Ok(String::from_utf8(buf)?)
}

/// Values from `-f` files and the `--set*` flags, in Helm's order.
fn user_values(args: &Args) -> anyhow::Result<capstan_template::Value> {
    let base = strvals::empty();
    let mut files = Vec::new();
    for file in &args.values {
        // `-f -` reads values from stdin, as the cluster-stack operator passes them.
        let text = super::values_input::read_values_file(file)?;
        files.push(values::parse(&text, &file.display().to_string())?);
    }
    // Later files win: merge from the last one (the destination wins when merging).
    for parsed in files.iter().rev() {
        merge_tables(&base, parsed);
    }
    for e in &args.set_json {
        strvals::apply_json(&base, e)?;
    }
    for e in &args.set {
        strvals::apply(&base, e, strvals::Typing::Typed)?;
    }
    for e in &args.set_string {
        strvals::apply(&base, e, strvals::Typing::Strings)?;
    }
    for e in &args.set_file {
        let (key, path) = e
            .split_once('=')
            .with_context(|| format!("--set-file {e:?}: expected key=path"))?;
        let content = std::fs::read_to_string(path).with_context(|| format!("reading --set-file {path}"))?;
        strvals::apply_file_content(&base, key, content)?;
    }
    Ok(base)
}

/// Writes `<dir>/<template path>` files like `helm template --output-dir`.
fn write_output_dir(dir: &Path, m: &manifest::Manifests) -> anyhow::Result<()> {
    let mut files: BTreeMap<&str, String> = BTreeMap::new();
    for d in m.manifests.iter().chain(m.hooks.iter()) {
        files
            .entry(&d.source)
            .or_default()
            .push_str(&format!("---\n# Source: {}\n{}\n", d.source, d.content));
    }
    for (source, text) in files {
        if source.split('/').any(|c| c == ".." || c.is_empty()) {
            bail!("refusing to write outside the output directory: {source}");
        }
        let path = dir.join(source);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// `capstan render RELEASE --cluster …`: the flags that make sense for a whole release.
/// The template environment of a render: `lookup` answered by `--kubeconfig`'s cluster when
/// given (the runtime its requests run on lives as long as this).
struct LookupEnv {
    env: Rc<FuncEnv>,
    _runtime: Option<tokio::runtime::Runtime>,
}

impl LookupEnv {
    fn new(args: &Args) -> anyhow::Result<LookupEnv> {
        let Some(kubeconfig) = &args.kubeconfig else {
            return Ok(LookupEnv {
                env: Rc::new(FuncEnv::system()),
                _runtime: None,
            });
        };
        let runtime = super::kube::runtime()?;
        let target = runtime.block_on(super::kube::connect_to(
            Some(kubeconfig),
            args.context.as_deref(),
            None,
        ))?;
        let lookup = capstan_operator::cli::clusters::cluster_lookup(runtime.handle().clone(), target.client);
        Ok(LookupEnv {
            env: Rc::new(FuncEnv::system().with_lookup(lookup)),
            _runtime: Some(runtime),
        })
    }
}

fn render_release(args: &Args, release: &str) -> anyhow::Result<()> {
    let unsupported = [
        (!args.set.is_empty(), "--set"),
        (!args.set_string.is_empty(), "--set-string"),
        (!args.set_json.is_empty(), "--set-json"),
        (!args.set_file.is_empty(), "--set-file"),
        (args.kube_version.is_some(), "--kube-version"),
        (!args.api_versions.is_empty(), "--api-versions"),
        (!args.show_only.is_empty(), "--show-only"),
        (args.output == Format::TemplatesJson, "-o templates-json"),
    ];
    if let Some((_, flag)) = unsupported.iter().find(|(on, _)| *on) {
        bail!(
            "{flag} applies to a single chart; a release is rendered with the values computed from --cluster (and -f/--values files layered over them)"
        );
    }
    let lookup_env = LookupEnv::new(args)?;
    super::render_release::run(&super::render_release::Request {
        env: lookup_env.env.clone(),
        release,
        objects: &args.objects,
        sources: &args.sources,
        repositories: &args.repositories,
        namespace: args.namespace.clone(),
        output_dir: args.output_dir.as_deref(),
        json: args.output == Format::Json,
        values: &args.values,
        cluster_api: args.cluster_api,
    })
}
