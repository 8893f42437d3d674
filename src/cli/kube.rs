//! Flags and helpers `capstan apply` and `capstan diff` share: where the manifests come from
//! (`-f FILE|DIR|-`) and which cluster to talk to (kubeconfig the standard way: `--kubeconfig`,
//! else `KUBECONFIG` / `~/.kube/config`, else in-cluster).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use capstan_apply::{Applier, DesiredObject, parse_stream};

/// Manifest and cluster flags.
#[derive(Debug, clap::Args)]
pub struct KubeArgs {
    /// Manifests: a YAML/JSON file, a directory of them (*.yaml, *.yml, *.json), or `-` for
    /// stdin. Repeatable.
    #[arg(short = 'f', long = "filename", value_name = "FILE|DIR|-", required = true)]
    pub files: Vec<PathBuf>,

    /// Read directories recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,

    /// Kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,

    /// Kubeconfig context to use (default: the current context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,

    /// Namespace for namespaced objects that name none (default: the context's namespace,
    /// else `default`); also where the inventory lives.
    #[arg(short = 'n', long, value_name = "NS")]
    pub namespace: Option<String>,

    /// Field manager of the server-side apply.
    #[arg(long, default_value = capstan_apply::FIELD_MANAGER, value_name = "NAME")]
    pub field_manager: String,

    /// Take over fields other managers own (the default, like a controller owning its objects).
    #[arg(long, overrides_with = "no_force_conflicts")]
    pub force_conflicts: bool,

    /// Fail an object when another manager owns one of its fields.
    #[arg(
        long = "no-force-conflicts",
        visible_alias = "no-force",
        overrides_with = "force_conflicts"
    )]
    pub no_force_conflicts: bool,

    /// Inventory name (`NAME` in the target namespace, or `NS/NAME`): records the applied set
    /// and labels the objects; needed for --prune.
    #[arg(long, value_name = "NAME")]
    pub inventory: Option<String>,

    /// Requests in flight at once.
    #[arg(long, default_value_t = 16, value_name = "N")]
    pub concurrency: usize,
}

impl KubeArgs {
    pub fn force(&self) -> bool {
        !self.no_force_conflicts
    }
}

/// A cluster connection: the client, the server URL (for messages), the namespace to use.
pub struct Target {
    pub client: Client,
    pub server: String,
    pub namespace: String,
}

impl Target {
    pub fn applier(&self) -> Applier {
        Applier::new(self.client.clone(), self.server.clone())
    }

    /// The inventory named by `--inventory` (`NAME` or `NS/NAME`).
    pub fn inventory(&self, name: Option<&str>) -> anyhow::Result<Option<capstan_apply::InventoryRef>> {
        let Some(name) = name else { return Ok(None) };
        let (namespace, name) = match name.split_once('/') {
            Some((ns, n)) => (ns.to_string(), n.to_string()),
            None => (self.namespace.clone(), name.to_string()),
        };
        if name.is_empty() || namespace.is_empty() {
            bail!("--inventory {name:?}: expected NAME or NAMESPACE/NAME");
        }
        Ok(Some(capstan_apply::InventoryRef { namespace, name }))
    }
}

/// Builds the client from the kubeconfig flags.
pub async fn connect(args: &KubeArgs) -> anyhow::Result<Target> {
    connect_to(
        args.kubeconfig.as_deref(),
        args.context.as_deref(),
        args.namespace.as_deref(),
    )
    .await
}

/// Builds a client from a kubeconfig file (else `$KUBECONFIG`, `~/.kube/config`, in-cluster),
/// a context and a namespace (else the context's).
pub async fn connect_to(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
    namespace: Option<&str>,
) -> anyhow::Result<Target> {
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..KubeConfigOptions::default()
    };
    let config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kc, &options)
                .await
                .with_context(|| format!("loading kubeconfig {}", path.display()))?
        }
        None if context.is_some() => Config::from_kubeconfig(&options)
            .await
            .context("loading kubeconfig ($KUBECONFIG or ~/.kube/config)")?,
        None => Config::infer().await.context(
            "no cluster configured: no kubeconfig ($KUBECONFIG, ~/.kube/config) and not in a cluster",
        )?,
    };
    let server = config.cluster_url.to_string().trim_end_matches('/').to_string();
    let namespace = namespace.map_or_else(|| config.default_namespace.clone(), str::to_string);
    let client =
        capstan_apply::client::client(config).with_context(|| format!("setting up a client for {server}"))?;
    Ok(Target {
        client,
        server,
        namespace,
    })
}

/// Reads and parses every manifest the `-f` flags name, in order.
pub fn load_objects(args: &KubeArgs) -> anyhow::Result<Vec<DesiredObject>> {
    let mut objects = Vec::new();
    for path in &args.files {
        if path.as_os_str() == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("reading manifests from stdin")?;
            objects.extend(parse_stream(&text, "-")?);
            continue;
        }
        let meta = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
        let files = if meta.is_dir() {
            let mut files = Vec::new();
            manifest_files(path, args.recursive, &mut files)?;
            files
        } else {
            vec![path.clone()]
        };
        for file in files {
            let text =
                std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            objects.extend(parse_stream(&text, &file.display().to_string())?);
        }
    }
    Ok(objects)
}

fn manifest_files(dir: &Path, recursive: bool, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading {}", dir.display()))?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if recursive {
                manifest_files(&path, recursive, out)?;
            }
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        {
            out.push(path);
        }
    }
    Ok(())
}

/// A multi-threaded runtime for one command.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// `30s`, `5m`, `1h`, `1m30s`, or plain seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total = 0u64;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => return Err(format!("invalid duration {text:?} (use e.g. 30s, 5m, 1h)")),
        };
        let n: u64 = number
            .parse()
            .map_err(|_| format!("invalid duration {text:?} (use e.g. 30s, 5m, 1h)"))?;
        total += n * unit;
        number.clear();
    }
    if !number.is_empty() || text.is_empty() {
        return Err(format!("invalid duration {text:?} (use e.g. 30s, 5m, 1h)"));
    }
    Ok(Duration::from_secs(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        for bad in ["", "5x", "m", "5m3"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn force_is_the_default_and_can_be_turned_off() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            kube: KubeArgs,
        }
        let parse = |args: &[&str]| {
            let mut all = vec!["capstan", "-f", "x.yaml"];
            all.extend(args);
            <Cli as clap::Parser>::try_parse_from(all)
                .expect("parses")
                .kube
                .force()
        };
        assert!(parse(&[]));
        assert!(!parse(&["--no-force-conflicts"]));
        assert!(!parse(&["--no-force"]));
        assert!(parse(&["--no-force", "--force-conflicts"]));
    }
}
