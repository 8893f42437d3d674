//! `capstan render RELEASE --cluster FILE`: every part of a whole release (the ClusterClass
//! chart, then the addon chart or each addon stage) for one workload Cluster.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::rc::Rc;

use anyhow::{Context, bail};

use crate::chart::{manifest, values};
use crate::stack::render::{self, Part, RenderOptions};
use crate::template::funcs::FuncEnv;

use super::render::{Args, Format, value_to_json};
use super::stack_input;

pub fn run(args: &Args, release_arg: &str) -> anyhow::Result<()> {
    let unsupported = [
        (!args.values.is_empty(), "-f/--values"),
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
            "{flag} applies to a single chart; a release is rendered with the values computed from --cluster"
        );
    }
    let objects = args.objects.load()?;
    let opened = stack_input::open(release_arg)?;
    let opts = RenderOptions {
        namespace: args.namespace.clone(),
        env: Rc::new(FuncEnv::system()),
    };
    let parts = render::render_release(&opened.release, &objects, &opts)?;
    let mut out = std::io::stdout().lock();
    if let Some(dir) = &args.output_dir {
        for part in &parts {
            write_part(dir, part)?;
        }
        return Ok(());
    }
    match args.output {
        Format::Yaml => out.write_all(render::labelled_stream(&parts).as_bytes())?,
        Format::Json => {
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
        Format::TemplatesJson => unreachable!("refused above"),
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
