//! The flags of chart dependency resolution (`capstan render`, `capstan dependency`):
//! repository mirrors, credentials, offline mode.

use anyhow::Context;

use capstan_source::cache::Cache;
use capstan_source::charts::{ChartResolver, Credential, Settings};
use capstan_source::net::NetworkTimeouts;
use capstan_source::verify::provenance::Keyring;

/// Where chart dependencies come from.
#[derive(Debug, Clone, clap::Args)]
pub struct RepositoryArgs {
    /// Fetch a chart repository from another URL (`https://helm.cilium.io=http://mirror/cilium`;
    /// FROM may also be `@name` or `alias:name`). Repeatable; the first match wins.
    #[arg(long = "repository-mirror", value_name = "FROM=TO")]
    pub mirrors: Vec<String>,

    /// Repository mirrors from a file, one `FROM=TO` a line (`#` comments), after the
    /// --repository-mirror flags: what `capstan releases mirror --write-mirrors` writes.
    #[arg(long = "repository-mirrors-file", value_name = "FILE")]
    pub mirrors_file: Option<std::path::PathBuf>,

    /// Credentials for the chart repositories below URL (`https://…` or `oci://HOST[/PATH]`):
    /// `URL=basic:USER:PASSWORD` or `URL=bearer:TOKEN` (repeatable; also from
    /// CAPSTAN_REPOSITORY_CREDENTIALS, one per line). Sent only to that URL's host (and a
    /// registry's token endpoint), never logged.
    #[arg(long = "repository-credential", value_name = "URL=AUTH")]
    pub credentials: Vec<String>,

    /// Resolve chart dependencies from the cache only; name what is missing.
    #[arg(long)]
    pub offline: bool,

    /// An OpenPGP keyring (binary, as `gpg --export` writes, or armored) every chart
    /// dependency from a Helm or OCI repository must carry a Helm provenance (`.prov`) signed
    /// by, as `helm pull --verify --keyring`; repeat for several. A chart that fails refuses
    /// the render, naming the chart, version, repository and reason.
    #[arg(long = "keyring", value_name = "FILE")]
    pub keyrings: Vec<std::path::PathBuf>,

    /// What the chart dependencies of each repository must carry, overriding --keyring and
    /// --verify-key for the repositories it names (YAML: `repositories: [{url, keyring, keys,
    /// identities: [{issuer, subject}], trustedRoot}]`, paths relative to the file; the
    /// longest matching url wins; an entry requiring nothing exempts its repository).
    #[arg(long = "dependency-policy", value_name = "FILE")]
    pub dependency_policy: Option<std::path::PathBuf>,
}

impl RepositoryArgs {
    /// The resolver over `cache`; `refresh`: fetch indexes again (`dependency update`). The
    /// timeouts are the release sources' (`--connect-timeout`, `--timeout`), and their
    /// `--verify-key` checks the cosign signatures of `oci://` charts.
    pub fn resolver(
        &self,
        cache: Cache,
        refresh: bool,
        sources: &super::source_args::SourceArgs,
    ) -> anyhow::Result<ChartResolver> {
        let settings = Settings {
            cosign: sources.policy()?,
            ..self.settings(refresh, sources.timeouts())?
        };
        ChartResolver::new(cache, settings).map_err(anyhow::Error::msg)
    }

    /// The resolver's settings from the flags and CAPSTAN_REPOSITORY_CREDENTIALS.
    pub fn settings(&self, refresh: bool, timeouts: NetworkTimeouts) -> anyhow::Result<Settings> {
        let mut mirrors = Vec::new();
        for m in &self.mirrors {
            let (from, to) = m
                .split_once('=')
                .with_context(|| format!("--repository-mirror {m:?}: expected FROM=TO"))?;
            mirrors.push((from.to_string(), to.to_string()));
        }
        if let Some(file) = &self.mirrors_file {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("reading --repository-mirrors-file {}", file.display()))?;
            mirrors.extend(parse_mirrors_file(&text, &file.display().to_string())?);
        }
        let mut credentials = Vec::new();
        let from_env = std::env::var("CAPSTAN_REPOSITORY_CREDENTIALS").unwrap_or_default();
        for text in self
            .credentials
            .iter()
            .map(String::as_str)
            .chain(from_env.lines().map(str::trim).filter(|l| !l.is_empty()))
        {
            credentials.push(Credential::parse(text).map_err(anyhow::Error::msg)?);
        }
        Ok(Settings {
            mirrors,
            credentials,
            offline: self.offline,
            refresh,
            timeouts,
            keyring: read_keyrings(&self.keyrings)?,
            cosign: Default::default(),
            repository_policies: match &self.dependency_policy {
                Some(path) => super::dependency_policy::read(path)?,
                None => Vec::new(),
            },
            overriding_policies: Vec::new(),
        })
    }
}

/// The keys of the `--keyring` files (`None` without any).
fn read_keyrings(paths: &[std::path::PathBuf]) -> anyhow::Result<Option<Keyring>> {
    if paths.is_empty() {
        return Ok(None);
    }
    let mut keyrings = Vec::with_capacity(paths.len());
    for path in paths {
        let bytes = std::fs::read(path).with_context(|| format!("reading --keyring {}", path.display()))?;
        keyrings.push(Keyring::parse(&bytes, &path.display().to_string())?);
    }
    Ok(Some(Keyring::merge(keyrings)))
}

/// The mirrors of a `--repository-mirrors-file` (one `FROM=TO` a line, `#` comments, blank
/// lines); a bad line is named by `origin` and its number.
fn parse_mirrors_file(text: &str, origin: &str) -> anyhow::Result<Vec<(String, String)>> {
    let mut mirrors = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (from, to) = line
            .split_once('=')
            .filter(|(from, to)| !from.trim().is_empty() && !to.trim().is_empty())
            .with_context(|| format!("{origin}:{}: {line:?}: expected FROM=TO", n + 1))?;
        mirrors.push((from.trim().to_string(), to.trim().to_string()));
    }
    Ok(mirrors)
}

/// A resolver made on first need: a render whose charts lack nothing never opens the cache.
pub struct LazyResolver<'a> {
    repositories: &'a RepositoryArgs,
    sources: &'a super::source_args::SourceArgs,
    inner: std::sync::OnceLock<Result<ChartResolver, String>>,
}

impl<'a> LazyResolver<'a> {
    pub fn new(
        repositories: &'a RepositoryArgs,
        sources: &'a super::source_args::SourceArgs,
    ) -> LazyResolver<'a> {
        LazyResolver {
            repositories,
            sources,
            inner: std::sync::OnceLock::new(),
        }
    }
}

impl capstan_chart::deps::DependencyResolver for LazyResolver<'_> {
    fn resolve(
        &self,
        chart: capstan_chart::Chart,
        chart_dir: Option<&std::path::Path>,
    ) -> Result<capstan_chart::Chart, String> {
        if capstan_chart::deps::missing_dependencies(&chart).is_empty() {
            return Ok(chart);
        }
        let resolver = self.inner.get_or_init(|| {
            self.sources
                .open_cache()
                .and_then(|cache| self.repositories.resolver(cache, false, self.sources))
                .map_err(|e| format!("{e:#}"))
        });
        match resolver {
            Ok(r) => r.resolve(chart, chart_dir),
            Err(e) => Err(e.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirrors_files_read_like_the_flag_and_name_a_bad_line() {
        let text = "# written by capstan releases mirror\n\nhttps://helm.cilium.io=oci://r/a/charts\n  oci://ghcr.io/x = oci://r/a/charts \n";
        assert_eq!(
            parse_mirrors_file(text, "m.txt").unwrap(),
            [
                (
                    "https://helm.cilium.io".to_string(),
                    "oci://r/a/charts".to_string()
                ),
                ("oci://ghcr.io/x".to_string(), "oci://r/a/charts".to_string()),
            ]
        );
        for (bad, line) in [("a=b\nno-equals\n", 2), ("=oci://r\n", 1), ("https://x=\n", 1)] {
            let err = parse_mirrors_file(bad, "m.txt").unwrap_err().to_string();
            assert!(err.starts_with(&format!("m.txt:{line}: ")), "{err}");
        }
    }
}
