//! Building a release from a stack source tree, as `csctl create` does, into the layout of a
//! published release (so [`Release::load`](super::release::Release::load) reads it).
//!
//! ```text
//! <source>/                               <out>/
//!   csctl.yaml            provider, name,   metadata.yaml                (generated)
//!                         Kubernetes        hashes.json                  (csctl's content hashes)
//!   cluster-class/        a chart       →   <stack>-cluster-class-<v>.tgz
//!   cluster-addon/        one chart, or →   <stack>-cluster-addon-<v>.tgz
//!     <stage>/            one per stage
//!   clusteraddon.yaml     (stages)      →   clusteraddon.yaml            (validated copy)
//!   cluster-addon-values.yaml           →   cluster-addon-values.yaml    (single chart only)
//! ```
//!
//! Like csctl: text files have the placeholders `<< .ClusterClassVersion >>`,
//! `<< .ClusterAddonVersion >>` and `<< .NodeImageVersion >>` replaced (another `<< … >>` tag
//! becomes empty); the `version` of `cluster-class/Chart.yaml` becomes the stack version and
//! that of `cluster-addon/Chart.yaml` (single-chart addons) the addon version; charts are
//! packaged as Helm packages them (`.helmignore` applied, one top directory named after the
//! chart); a multi-stage addon is archived as it is (one directory per stage). The version is
//! the caller's: [`hash_version`] gives csctl's hash-mode version `v0-sha.<hash>` of a tree.
//! Unlike csctl, binary files are copied untouched and a single-chart addon without
//! `cluster-addon-values.yaml` is accepted (its chart then gets no runtime values).

use std::path::{Path, PathBuf};

use base64::Engine;
use sha2::{Digest, Sha256};

use capstan_chart::ignore::Rules;
use capstan_encoding::yaml_load::{YamlNode, parse_yaml};

use super::addon_config::{ADDON_CONFIG_FILE, AddonConfig};
use super::archive::write_tgz;
use super::doc::{DocumentError, read_text, with_root};
use super::metadata::{METADATA_FILE, Metadata};
use super::name::{KubernetesVersion, ReleaseTag, StackName};
use super::release::{ADDON_VALUES_FILE, HASHES_FILE, Release, ReleaseError};
use super::version::Version;

/// The stack's configuration file in a source tree.
pub const CSCTL_FILE: &str = "csctl.yaml";
/// The `apiVersion` of `csctl.yaml`.
pub const CSCTL_API_VERSION: &str = "csctl.clusterstack.x-k8s.io/v1alpha1";

/// A source tree that cannot be built into a release.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Document(#[from] DocumentError),
    #[error("stack source {}: {problem}", source_dir.display())]
    Source { source_dir: PathBuf, problem: String },
    #[error("writing {}: {error}", path.display())]
    Write { path: PathBuf, error: std::io::Error },
    /// The built release does not load (a bug in the source that only shows once built).
    #[error(transparent)]
    Release(#[from] ReleaseError),
}

/// `csctl.yaml`: what the source tree is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsctlConfig {
    pub stack: StackName,
    /// `config.kubernetesVersion` (`v1.30.10`).
    pub kubernetes: String,
    /// `capstan.valuesTemplateAPIVersion` (capstan's own; csctl ignores it): copied into the
    /// release's `metadata.yaml`.
    pub values_template_api: super::capi::CapiVersion,
}

impl CsctlConfig {
    /// Reads `<source>/csctl.yaml`.
    pub fn load(source: &Path) -> Result<CsctlConfig, DocumentError> {
        let file = source.join(CSCTL_FILE);
        let text = read_text(&file)?;
        with_root(&text, &file, |root| {
            let api = root.required_string("apiVersion")?;
            if api != CSCTL_API_VERSION {
                return Err(DocumentError::field(
                    &file,
                    "apiVersion",
                    format!("expected {CSCTL_API_VERSION:?}, found {api:?}"),
                ));
            }
            let values_template_api = super::metadata::values_template_api(&root)?;
            root.with_field("config", |config| {
                let Some(config) = config else {
                    return Err(DocumentError::field(&file, "config", "is missing"));
                };
                let kubernetes = config.required_string("kubernetesVersion")?;
                let minor = KubernetesVersion::parse_release(&kubernetes)
                    .map_err(|e| DocumentError::field(&file, "config.kubernetesVersion", e.to_string()))?;
                let name = config.required_string("clusterStackName")?;
                let provider = config.with_field("provider", |p| match p {
                    None => Err(DocumentError::field(&file, "config.provider", "is missing")),
                    Some(p) => p.required_string("type"),
                })?;
                let stack = StackName::new(&provider, &name, minor).map_err(|e| {
                    let field = if e.to_string().contains("provider") {
                        "config.provider.type"
                    } else {
                        "config.clusterStackName"
                    };
                    DocumentError::field(&file, field, e.to_string())
                })?;
                Ok(CsctlConfig {
                    stack,
                    kubernetes,
                    values_template_api,
                })
            })
        })
    }
}

/// csctl's hash-mode version of a source tree: `v0-sha.` + the first 7 characters of its
/// content hash ([`content_hash`]).
pub fn hash_version(source: &Path) -> Result<Version, BuildError> {
    let hash = content_hash(source)?;
    Version::hash(&hash[..7]).map_err(|e| BuildError::Source {
        source_dir: source.to_path_buf(),
        problem: e.to_string(),
    })
}

/// csctl's content hash of a directory: Go's `dirhash.HashDir` (`h1:`, the base64 of the
/// sha256 of the sorted `"<sha256 hex>  <path>\n"` lines of every file), without `h1:`, `/`,
/// `+` and `=`, lowercased.
pub fn content_hash(dir: &Path) -> Result<String, BuildError> {
    let mut files = Vec::new();
    walk(dir, "", &mut files)?;
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut summary = Sha256::new();
    for (name, path) in &files {
        let data = std::fs::read(path).map_err(|e| source_error(dir, format!("cannot read {name}: {e}")))?;
        let digest = Sha256::digest(&data);
        summary.update(format!("{}  {name}\n", hex(&digest)).as_bytes());
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(summary.finalize());
    Ok(encoded
        .chars()
        .filter(|c| !matches!(c, '/' | '+' | '='))
        .flat_map(char::to_lowercase)
        .collect())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn source_error(dir: &Path, problem: String) -> BuildError {
    BuildError::Source {
        source_dir: dir.to_path_buf(),
        problem,
    }
}

/// Every regular file below `dir` as (`/`-separated relative name, path); symlinks refused.
fn walk(dir: &Path, rel: &str, out: &mut Vec<(String, PathBuf)>) -> Result<(), BuildError> {
    let entries = std::fs::read_dir(dir).map_err(|e| source_error(dir, format!("cannot list: {e}")))?;
    for entry in entries {
        let entry = entry.map_err(|e| source_error(dir, format!("cannot list: {e}")))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let child_rel = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        let kind = entry
            .file_type()
            .map_err(|e| source_error(dir, format!("{child_rel}: {e}")))?;
        if kind.is_symlink() {
            return Err(source_error(
                dir,
                format!("{child_rel} is a symlink; a stack source may not contain links"),
            ));
        }
        if kind.is_dir() {
            walk(&entry.path(), &child_rel, out)?;
        } else if kind.is_file() {
            out.push((child_rel, entry.path()));
        }
    }
    Ok(())
}

/// Builds the release of `source` at `version` into `out` (created; must not hold files)
/// and loads it.
pub fn build(source: &Path, version: &Version, out: &Path) -> Result<Release, BuildError> {
    let config = CsctlConfig::load(source)?;
    let metadata = Metadata {
        cluster_stack: version.clone(),
        kubernetes: config.kubernetes.clone(),
        cluster_addon: version.clone(),
        node_image: Some(version.clone()),
        values_template_api: config.values_template_api,
    };
    let tag = config.stack.release(version.clone());
    let write_err = |path: &Path| {
        let path = path.to_path_buf();
        move |error| BuildError::Write { path, error }
    };
    std::fs::create_dir_all(out).map_err(write_err(out))?;
    if std::fs::read_dir(out).map_err(write_err(out))?.next().is_some() {
        return Err(BuildError::Write {
            path: out.to_path_buf(),
            error: std::io::Error::other("the output directory is not empty"),
        });
    }
    let placeholders = [
        (".ClusterClassVersion", metadata.cluster_stack.to_string()),
        (".ClusterAddonVersion", metadata.cluster_addon.to_string()),
        (
            ".NodeImageVersion",
            metadata
                .node_image
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
        ),
    ];
    let fill = |name: &str, data: Vec<u8>| -> Result<Vec<u8>, BuildError> {
        match String::from_utf8(data) {
            Ok(text) => fill_placeholders(&text, &placeholders)
                .map(String::into_bytes)
                .map_err(|problem| source_error(source, format!("{name}: {problem}"))),
            Err(e) => Ok(e.into_bytes()),
        }
    };

    // The ClusterClass chart.
    let class_dir = source.join("cluster-class");
    if !class_dir.is_dir() {
        return Err(source_error(
            source,
            "has no cluster-class/ chart directory".into(),
        ));
    }
    let class_files = chart_files(source, &class_dir, "cluster-class", &fill)?;
    let class_files = set_chart_version(source, "cluster-class", class_files, &metadata.cluster_stack)?;
    package_chart(
        source,
        "cluster-class",
        class_files,
        &out.join(tag.cluster_class_asset()),
    )?;

    // The addon.
    let addon_dir = source.join("cluster-addon");
    if !addon_dir.is_dir() {
        return Err(source_error(source, "has no cluster-addon/ directory".into()));
    }
    let addon_asset = out.join(tag.cluster_addon_asset(&metadata.cluster_addon));
    let config_path = source.join(ADDON_CONFIG_FILE);
    if config_path.is_file() {
        AddonConfig::load(&config_path)?;
        let mut files = Vec::new();
        walk(&addon_dir, "", &mut files)?;
        files.sort_by(|a, b| a.0.cmp(&b.0));
        let mut entries = Vec::new();
        for (name, path) in files {
            let data = std::fs::read(&path)
                .map_err(|e| source_error(source, format!("cannot read cluster-addon/{name}: {e}")))?;
            entries.push((name.clone(), fill(&format!("cluster-addon/{name}"), data)?));
        }
        write_tgz(&addon_asset, &entries).map_err(write_err(&addon_asset))?;
        copy(&config_path, &out.join(ADDON_CONFIG_FILE))?;
    } else {
        let files = chart_files(source, &addon_dir, "cluster-addon", &fill)?;
        let files = set_chart_version(source, "cluster-addon", files, &metadata.cluster_addon)?;
        package_chart(source, "cluster-addon", files, &addon_asset)?;
        let values = source.join(ADDON_VALUES_FILE);
        if values.is_file() {
            let data = std::fs::read(&values)
                .map_err(|e| source_error(source, format!("cannot read {ADDON_VALUES_FILE}: {e}")))?;
            let data = fill(ADDON_VALUES_FILE, data)?;
            let dest = out.join(ADDON_VALUES_FILE);
            std::fs::write(&dest, data).map_err(write_err(&dest))?;
        }
    }

    let hashes = release_hashes(source)?;
    let dest = out.join(HASHES_FILE);
    std::fs::write(&dest, hashes).map_err(write_err(&dest))?;
    let dest = out.join(METADATA_FILE);
    std::fs::write(&dest, metadata.to_yaml()).map_err(write_err(&dest))?;
    Ok(Release::load_tagged(out, &tag)?)
}

/// The release tag `build` would produce for `source` at `version`.
pub fn release_tag(source: &Path, version: &Version) -> Result<ReleaseTag, BuildError> {
    Ok(CsctlConfig::load(source)?.stack.release(version.clone()))
}

/// csctl's `hashes.json`: the hashes of the whole tree, of `cluster-addon/`, of
/// `cluster-addon-values.yaml` and of `node-image/` (when present).
fn release_hashes(source: &Path) -> Result<String, BuildError> {
    let addon = content_hash(&source.join("cluster-addon"))?;
    let values_path = source.join(ADDON_VALUES_FILE);
    let values = if values_path.is_file() {
        let data = std::fs::read(&values_path)
            .map_err(|e| source_error(source, format!("cannot read {ADDON_VALUES_FILE}: {e}")))?;
        base64::engine::general_purpose::STANDARD
            .encode(Sha256::digest(&data))
            .chars()
            .filter(|c| !matches!(c, '/' | '+' | '='))
            .flat_map(char::to_lowercase)
            .collect()
    } else {
        String::new()
    };
    let mut out = format!(
        "{{\n  \"clusterStack\": \"{}\",\n  \"clusterAddonDir\": \"{addon}\",\n  \"clusterAddonValues\": \"{values}\"",
        content_hash(source)?
    );
    let node_image = source.join("node-image");
    if node_image.is_dir() {
        out.push_str(&format!(
            ",\n  \"nodeImageDir\": \"{}\"",
            content_hash(&node_image)?
        ));
    }
    out.push_str("\n}");
    Ok(out)
}

fn copy(from: &Path, to: &Path) -> Result<(), BuildError> {
    std::fs::copy(from, to)
        .map(drop)
        .map_err(|error| BuildError::Write {
            path: to.to_path_buf(),
            error,
        })
}

/// Fills the placeholders of one file (named for errors).
type Filler<'a> = dyn Fn(&str, Vec<u8>) -> Result<Vec<u8>, BuildError> + 'a;

/// The files of the chart directory `dir` as `helm package` takes them: `.helmignore` (and
/// Helm's default rule) applied, placeholders filled.
fn chart_files(
    source: &Path,
    dir: &Path,
    label: &str,
    fill: &Filler<'_>,
) -> Result<Vec<(String, Vec<u8>)>, BuildError> {
    let mut rules = match std::fs::read(dir.join(".helmignore")) {
        Ok(text) => Rules::parse(&String::from_utf8_lossy(&text))
            .map_err(|e| source_error(source, format!("{label}/.helmignore: {e}")))?,
        Err(_) => Rules::empty(),
    };
    rules.add_defaults();
    let mut files = Vec::new();
    walk(dir, "", &mut files)?;
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::new();
    for (name, path) in files {
        let parts: Vec<&str> = name.split('/').collect();
        if (1..parts.len()).any(|n| rules.ignore(&parts[..n].join("/"), true)) || rules.ignore(&name, false) {
            continue;
        }
        let data = std::fs::read(&path)
            .map_err(|e| source_error(source, format!("cannot read {label}/{name}: {e}")))?;
        out.push((name.clone(), fill(&format!("{label}/{name}"), data)?));
    }
    Ok(out)
}

/// Sets the top-level `version:` of the chart's Chart.yaml (csctl's `overwriteVersionInFile`).
fn set_chart_version(
    source: &Path,
    label: &str,
    mut files: Vec<(String, Vec<u8>)>,
    version: &Version,
) -> Result<Vec<(String, Vec<u8>)>, BuildError> {
    let Some((_, data)) = files.iter_mut().find(|(n, _)| n == "Chart.yaml") else {
        return Err(source_error(source, format!("{label}/Chart.yaml is missing")));
    };
    let text = String::from_utf8(data.clone())
        .map_err(|_| source_error(source, format!("{label}/Chart.yaml is not UTF-8")))?;
    let file = source.join(label).join("Chart.yaml");
    with_root(&text, &file, |root| {
        root.required_string("version")?;
        root.required_string("name")?;
        Ok(())
    })?;
    let mut replaced = false;
    let lines: Vec<String> = text
        .split_inclusive('\n')
        .map(|line| {
            if !replaced && line.starts_with("version:") {
                replaced = true;
                format!("version: {version}\n")
            } else {
                line.to_string()
            }
        })
        .collect();
    if !replaced {
        return Err(source_error(
            source,
            format!("{label}/Chart.yaml: no top-level `version:` line to set"),
        ));
    }
    *data = lines.concat().into_bytes();
    Ok(files)
}

/// Writes a chart archive as `helm package` lays it out: every file below a top directory
/// named after the chart.
fn package_chart(
    source: &Path,
    label: &str,
    files: Vec<(String, Vec<u8>)>,
    dest: &Path,
) -> Result<(), BuildError> {
    let name = files
        .iter()
        .find(|(n, _)| n == "Chart.yaml")
        .and_then(|(_, d)| parse_yaml(&String::from_utf8_lossy(d)).ok())
        .and_then(|node| match node {
            YamlNode::Map(entries) => entries.into_iter().find_map(|(k, v)| match (k, v) {
                (YamlNode::Str(k), YamlNode::Str(v)) if k == "name" => Some(v),
                _ => None,
            }),
            _ => None,
        })
        .ok_or_else(|| source_error(source, format!("{label}/Chart.yaml has no name")))?;
    if name.is_empty() || name.contains('/') || name == ".." || name == "." {
        return Err(source_error(
            source,
            format!("{label}/Chart.yaml: chart name {name:?} cannot name a directory"),
        ));
    }
    let entries: Vec<(String, Vec<u8>)> = files
        .into_iter()
        .map(|(n, d)| (format!("{name}/{n}"), d))
        .collect();
    write_tgz(dest, &entries).map_err(|error| BuildError::Write {
        path: dest.to_path_buf(),
        error,
    })
}

/// Replaces fasttemplate tags `<< X >>` (start `<< `, end ` >>`) with their value; an
/// unknown tag becomes empty; a start without an end is an error, as in csctl.
fn fill_placeholders(text: &str, values: &[(&str, String)]) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<< ") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 3..];
        let Some(end) = after.find(" >>") else {
            return Err(format!(
                "a placeholder opened with \"<< \" is not closed with \" >>\" (at {:?})",
                &rest[start..rest.len().min(start + 40)]
            ));
        };
        let tag = &after[..end];
        if let Some((_, v)) = values.iter().find(|(k, _)| *k == tag) {
            out.push_str(v);
        }
        rest = &after[end + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_like_fasttemplate() {
        let values = [(".ClusterAddonVersion", "v2".to_string())];
        assert_eq!(
            fill_placeholders("version: << .ClusterAddonVersion >>\nx: << .Other >>!\n", &values).unwrap(),
            "version: v2\nx: !\n"
        );
        assert_eq!(fill_placeholders("a <<b>> c", &values).unwrap(), "a <<b>> c");
        assert!(
            fill_placeholders("a << b", &values)
                .unwrap_err()
                .contains("not closed")
        );
    }

    #[test]
    fn chart_version_is_set() {
        let files = vec![(
            "Chart.yaml".to_string(),
            b"apiVersion: v2\nname: c\nversion: v1\ndependencies:\n  - name: x\n    version: 1.0.0\n"
                .to_vec(),
        )];
        let out = set_chart_version(
            Path::new("/s"),
            "cluster-class",
            files,
            &Version::parse("v0-sha.abc").unwrap(),
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out[0].1.clone()).unwrap(),
            "apiVersion: v2\nname: c\nversion: v0-sha.abc\ndependencies:\n  - name: x\n    version: 1.0.0\n"
        );
    }
}
