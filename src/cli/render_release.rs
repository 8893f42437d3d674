//! `capstan render RELEASE --cluster FILE`: every part of a whole release (the ClusterClass
//! chart, then the addon chart or each addon stage) for one workload Cluster.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use anyhow::{Context, bail};

use capstan_chart::{manifest, values};
use capstan_stack::render::{self, CompiledRelease, Part, RenderOptions};
use capstan_stack::user_values::UserValues;
use capstan_template::funcs::FuncEnv;

use super::output::value_to_json;
use super::stack_input::{self, ObjectArgs};

/// The name of a release's ClusterClass part.
const CLASS_PART: &str = "cluster-class";

/// What to render and how to print it.
pub struct Request<'a> {
    /// Randomness, time and `lookup` of the templates.
    pub env: Rc<FuncEnv>,
    /// The RELEASE argument.
    pub release: &'a str,
    pub objects: &'a ObjectArgs,
    pub sources: &'a super::source_args::SourceArgs,
    /// Where the charts' missing dependencies come from.
    pub repositories: &'a super::repository_args::RepositoryArgs,
    /// Namespace of the ClusterClass part.
    pub namespace: Option<String>,
    pub output_dir: Option<&'a Path>,
    /// `-o json` instead of the manifest stream.
    pub json: bool,
    /// `-f` files: user values layered over the addon charts' computed values, in order.
    pub values: &'a [PathBuf],
    /// `--cluster-api`: the ClusterClass part as the operator applies it there.
    pub cluster_api: Option<super::render_capi::ClusterApi>,
}

pub fn run(args: &Request<'_>) -> anyhow::Result<()> {
    args.objects.require_cluster()?;
    let opened = stack_input::open(args.release, args.sources)?;
    let objects = args.objects.load(opened.release.metadata().values_template_api)?;
    let opts = RenderOptions {
        namespace: args.namespace.clone(),
        env: args.env.clone(),
    };
    let resolver = super::repository_args::LazyResolver::new(args.repositories, args.sources);
    let mut user = Vec::new();
    for file in args.values {
        let text = super::values_input::read_values_file(file)?;
        user.push(UserValues::parse(&file.display().to_string(), &text)?);
    }
    // Errors name the release's files, not the scratch copy a cached release is read from
    // (gone by the time the error is printed).
    let mut parts = CompiledRelease::with_resolver(&opened.release, Some(&resolver))
        .map_err(|e| opened.in_release(e))?
        .render_with_user_values(&objects, &opts, &user)
        .map_err(|e| opened.in_release(e))?;
    if let Some(version) = args.cluster_api
        && let Some(class) = parts.iter_mut().find(|p| p.name == CLASS_PART)
    {
        class.stream = super::render_capi::stream_in(&class.stream, version, &class.namespace)?;
    }
    let mut out = std::io::stdout().lock();
    if let Some(dir) = &args.output_dir {
        for part in &parts {
            write_part(dir, part)?;
        }
        return Ok(());
    }
    if !args.json {
        out.write_all(render::labelled_stream(&parts).as_bytes())?;
    } else {
        {
            let mut list = Vec::new();
            for part in &parts {
                let mut objects = Vec::new();
                for doc in manifest::split_documents(&part.stream) {
                    let value = values::parse_document(&doc).map_err(anyhow::Error::msg)?;
                    if !value.is_nil() {
                        objects.push(value_to_json(&value));
                    }
                }
                list.push(serde_json::json!({
                    "part": part.name,
                    "chart": part.chart,
                    "releaseName": part.release_name,
                    "namespace": part.namespace,
                    "kubeVersion": part.kube_version,
                    "values": part.values.as_ref().map(|v| v.text.clone()),
                    "objects": objects,
                }));
            }
            writeln!(out, "{}", serde_json::to_string_pretty(&list)?)?;
        }
    }
    Ok(())
}

/// `<dir>/<part>/<template path>`, like `helm template --output-dir` per part.
fn write_part(dir: &Path, part: &Part) -> anyhow::Result<()> {
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    for doc in manifest::split_documents(&part.stream) {
        let Some(source) = doc.lines().find_map(|l| l.strip_prefix("# Source: ")) else {
            continue;
        };
        files
            .entry(source.to_string())
            .or_default()
            .push_str(&format!("---\n{doc}\n"));
    }
    for (source, text) in files {
        let rel = format!("{}/{source}", part.name);
        if rel.split('/').any(|c| c == ".." || c.is_empty()) {
            bail!("refusing to write outside the output directory: {rel}");
        }
        let path = dir.join(&rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
