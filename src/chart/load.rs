//! Loading charts from a directory or a `.tgz` archive, like Helm v4.2.3's `loader.Load`:
//! the same file classification, validation and error messages, plus safety limits.
//!
//! - Directories honour `.helmignore` and Helm's default rule (hidden files directly in
//!   `templates/`); archives do not. A UTF-8 BOM at the start of any file is dropped.
//! - `Chart.yaml` is required (apiVersion defaults to `v1`); `requirements.yaml` is decoded
//!   on top of it (v1 charts also keep it, and `requirements.lock`, as `.Files`).
//! - `charts/<x>` become subcharts: directories or `<x>.tgz`, recursively; names starting
//!   with `_` or `.` are skipped, `*.prov` files stay in `.Files`.
//! - Safety (beyond Helm): symlinks may not leave the chart directory, archive entries may
//!   not escape the chart root, and sizes are capped per file (5 MiB, Helm's limit), per
//!   archive (100 MiB decompressed, Helm's limit) and per load (all archives and files
//!   together), as are the number of files and subchart nesting.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::chart::ignore::{IgnoreError, Rules};
use crate::chart::metadata::{ChartYaml, DecodeError, ValidationError, check_lock};
use crate::chart::{Chart, ChartFile, Memo, values};
use crate::go::value::frozen::Frozen;

/// Largest single file Helm accepts (`loader.MaxDecompressedFileSize`).
pub const MAX_FILE_SIZE: u64 = 5 * 1024 * 1024;
/// Largest decompressed archive Helm accepts (`loader.MaxDecompressedChartSize`).
pub const MAX_ARCHIVE_SIZE: u64 = 100 * 1024 * 1024;
/// Largest total of file bytes one load may read (nested archives included).
pub const MAX_TOTAL_SIZE: u64 = 256 * 1024 * 1024;
/// Most files (archive entries included) one load may read.
pub const MAX_FILES: usize = 100_000;
/// Deepest subchart nesting accepted.
pub const MAX_DEPTH: usize = 32;

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Why a chart could not be loaded. Helm's own failures keep Helm's wording; the safety
/// checks name the offending file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Printed whole (no error source), so chains do not repeat the OS message.
    #[error("{path}: {error}")]
    Io { path: PathBuf, error: std::io::Error },
    #[error("Chart.yaml file is missing")]
    MissingChartYaml,
    #[error("cannot load {file}: {error}")]
    Decode { file: String, error: DecodeError },
    /// `values.yaml` is not a valid values file (Helm reads it at load time).
    #[error("cannot load values.yaml: {0}")]
    Values(String),
    #[error(transparent)]
    Validation(#[from] ValidationError),
    #[error(transparent)]
    Ignore(#[from] IgnoreError),
    #[error("error unpacking subchart {name} in {parent}: {error}")]
    Subchart {
        name: String,
        parent: String,
        error: Box<LoadError>,
    },
    #[error("error unpacking subchart tar in {parent}: expected {expected}, got {got}")]
    SubchartTar {
        parent: String,
        expected: String,
        got: String,
    },
    #[error("cannot load irregular file {0} as it has file mode type bits set")]
    Irregular(String),
    #[error("chart file {file:?} is larger than the maximum file size {limit}")]
    FileTooLarge { file: String, limit: u64 },
    #[error("decompressed chart file {file:?} is larger than the maximum file size {limit}")]
    ArchiveFileTooLarge { file: String, limit: u64 },
    #[error("decompressed chart is larger than the maximum size {0}")]
    ArchiveTooLarge(u64),
    #[error("file '{path}' does not appear to be a gzipped archive; got '{content_type}'")]
    NotGzip { path: String, content_type: String },
    #[error("no files in chart archive")]
    EmptyArchive,
    #[error("chart illegally contains absolute paths")]
    AbsolutePath,
    #[error("chart illegally contains content outside the base directory: {0}")]
    OutsideBase(String),
    #[error("chart illegally references parent directory")]
    ParentReference,
    #[error("chart contains illegally named files")]
    IllegalName,
    #[error("chart yaml not in base directory")]
    ChartYamlNotInBase,
    #[error("{archive}: reading archive entry {entry}: {reason}")]
    Archive {
        archive: String,
        entry: String,
        reason: String,
    },
    #[error("symlink {link} points outside the chart directory ({target})")]
    SymlinkEscape { link: String, target: String },
    #[error("symlink cycle at {0}")]
    SymlinkCycle(String),
    #[error("chart has more than {0} files")]
    TooManyFiles(usize),
    #[error("chart files total more than {0} bytes")]
    TotalTooLarge(u64),
    #[error("subcharts nested deeper than {0} levels at {1}")]
    TooDeep(usize, String),
}

/// What one load may still consume, shared by every nested archive.
struct Budget {
    bytes: u64,
    files: usize,
}

impl Budget {
    fn new() -> Budget {
        Budget {
            bytes: MAX_TOTAL_SIZE,
            files: MAX_FILES,
        }
    }

    fn take(&mut self, bytes: u64) -> Result<(), LoadError> {
        self.files = self
            .files
            .checked_sub(1)
            .ok_or(LoadError::TooManyFiles(MAX_FILES))?;
        self.bytes = self
            .bytes
            .checked_sub(bytes)
            .ok_or(LoadError::TotalTooLarge(MAX_TOTAL_SIZE))?;
        Ok(())
    }
}

/// Loads a chart from a directory or a `.tgz` file.
pub fn load(path: &Path) -> Result<Chart, LoadError> {
    let meta = std::fs::metadata(path).map_err(|error| LoadError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    let mut budget = Budget::new();
    if meta.is_dir() {
        load_dir(path, &mut budget)
    } else {
        let data = read_capped(path, MAX_TOTAL_SIZE)?;
        ensure_gzip(path, &data)?;
        let mut chart = load_archive_bytes(&data, &path.display().to_string(), &mut budget, 0)?;
        chart.source = path.to_path_buf();
        Ok(chart)
    }
}

/// Loads a chart from the bytes of a `.tgz` archive (`source` names it in errors).
pub fn load_archive(data: &[u8], source: &str) -> Result<Chart, LoadError> {
    ensure_gzip(Path::new(source), data)?;
    let mut chart = load_archive_bytes(data, source, &mut Budget::new(), 0)?;
    chart.source = PathBuf::from(source);
    Ok(chart)
}

/// Helm's `loader.LoadFiles`: a chart from files already in memory (names relative to the
/// chart root, `/`-separated), such as one chart directory of a multi-chart archive. Like
/// archive loading, no `.helmignore` is applied here (filter the files first to get directory
/// semantics); a UTF-8 BOM is dropped and the load's size limits apply.
pub fn load_files_in_memory(files: Vec<ChartFile>, source: &str) -> Result<Chart, LoadError> {
    let mut budget = Budget::new();
    let mut clean = Vec::with_capacity(files.len());
    for f in files {
        budget.take(f.data.len() as u64)?;
        clean.push(ChartFile {
            name: f.name,
            data: strip_bom(f.data),
        });
    }
    let mut chart = load_files(clean, &mut budget, 0)?;
    chart.source = PathBuf::from(source);
    Ok(chart)
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> LoadError + '_ {
    move |error| LoadError::Io {
        path: path.to_path_buf(),
        error,
    }
}

fn read_capped(path: &Path, limit: u64) -> Result<Vec<u8>, LoadError> {
    let file = std::fs::File::open(path).map_err(io_err(path))?;
    let mut data = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut data)
        .map_err(io_err(path))?;
    if data.len() as u64 > limit {
        return Err(LoadError::FileTooLarge {
            file: path.display().to_string(),
            limit,
        });
    }
    Ok(data)
}

fn ensure_gzip(path: &Path, data: &[u8]) -> Result<(), LoadError> {
    if data.starts_with(&[0x1f, 0x8b]) {
        return Ok(());
    }
    // Go's http.DetectContentType, for the cases a mistaken chart path usually hits.
    let head = &data[..data.len().min(512)];
    let content_type = if head.is_empty() || std::str::from_utf8(head).is_ok() {
        "text/plain; charset=utf-8"
    } else {
        "application/octet-stream"
    };
    Err(LoadError::NotGzip {
        path: path.display().to_string(),
        content_type: content_type.into(),
    })
}

/// Walks a chart directory like Helm (lexical order, following symlinks that stay inside
/// the chart), applying `.helmignore`.
fn load_dir(root: &Path, budget: &mut Budget) -> Result<Chart, LoadError> {
    let canonical_root = std::fs::canonicalize(root).map_err(io_err(root))?;
    let mut rules = match std::fs::read(root.join(".helmignore")) {
        Ok(text) => Rules::parse(&String::from_utf8_lossy(&text))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Rules::empty(),
        Err(error) => {
            return Err(LoadError::Io {
                path: root.join(".helmignore"),
                error,
            });
        }
    };
    rules.add_defaults();
    let mut files = Vec::new();
    let mut walk = Walk {
        root: &canonical_root,
        rules: &rules,
        budget,
        files: &mut files,
        stack: vec![canonical_root.clone()],
    };
    // Helm names irregular files by their absolute path.
    let absolute = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    walk.dir(&absolute, "")?;
    let mut chart = load_files(files, budget, 0)?;
    chart.source = root.to_path_buf();
    Ok(chart)
}

struct Walk<'a> {
    root: &'a Path,
    rules: &'a Rules,
    budget: &'a mut Budget,
    files: &'a mut Vec<ChartFile>,
    /// Canonical directories being walked, to stop symlink cycles.
    stack: Vec<PathBuf>,
}

impl Walk<'_> {
    fn dir(&mut self, dir: &Path, rel: &str) -> Result<(), LoadError> {
        let mut entries: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
            .map_err(io_err(dir))?
            .map(|e| {
                let e = e.map_err(io_err(dir))?;
                Ok((e.file_name().to_string_lossy().into_owned(), e.path()))
            })
            .collect::<Result<_, LoadError>>()?;
        entries.sort();
        for (name, path) in entries {
            // Size errors name the file by its base name, like Helm.
            let rel = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            let link = std::fs::symlink_metadata(&path).map_err(io_err(&path))?;
            let meta = if link.file_type().is_symlink() {
                let target = std::fs::canonicalize(&path).map_err(io_err(&path))?;
                if !target.starts_with(self.root) {
                    return Err(LoadError::SymlinkEscape {
                        link: rel,
                        target: target.display().to_string(),
                    });
                }
                std::fs::metadata(&target).map_err(io_err(&path))?
            } else {
                link
            };
            if meta.is_dir() {
                if self.rules.ignore(&rel, true) {
                    continue;
                }
                let canonical = std::fs::canonicalize(&path).map_err(io_err(&path))?;
                if self.stack.contains(&canonical) {
                    return Err(LoadError::SymlinkCycle(rel));
                }
                self.stack.push(canonical);
                // Deeply nested directories must not overflow the stack.
                stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.dir(&path, &rel))?;
                self.stack.pop();
                continue;
            }
            if self.rules.ignore(&rel, false) {
                continue;
            }
            if !meta.is_file() {
                return Err(LoadError::Irregular(path.display().to_string()));
            }
            if meta.len() > MAX_FILE_SIZE {
                return Err(LoadError::FileTooLarge {
                    file: name.clone(),
                    limit: MAX_FILE_SIZE,
                });
            }
            let data = read_capped(&path, MAX_FILE_SIZE).map_err(|e| match e {
                LoadError::FileTooLarge { limit, .. } => LoadError::FileTooLarge {
                    file: name.clone(),
                    limit,
                },
                other => other,
            })?;
            self.budget.take(data.len() as u64)?;
            self.files.push(ChartFile {
                name: rel,
                data: strip_bom(data),
            });
        }
        Ok(())
    }
}

fn strip_bom(mut data: Vec<u8>) -> Vec<u8> {
    if data.starts_with(UTF8_BOM) {
        data.drain(..UTF8_BOM.len());
    }
    data
}

/// Reads the entries of a gzipped tar: the first path component (the chart's directory) is
/// dropped, paths are checked like Helm checks them, sizes are capped.
fn archive_files(data: &[u8], source: &str, budget: &mut Budget) -> Result<Vec<ChartFile>, LoadError> {
    let archive_err = |entry: &str, e: std::io::Error| LoadError::Archive {
        archive: source.to_string(),
        entry: entry.to_string(),
        reason: e.to_string(),
    };
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(data));
    let mut remaining = MAX_ARCHIVE_SIZE;
    let mut files = Vec::new();
    for entry in archive.entries().map_err(|e| archive_err("", e))? {
        let mut entry = entry.map_err(|e| archive_err("", e))?;
        let header_name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let kind = entry.header().entry_type();
        if kind.is_dir() || kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
            continue;
        }
        let parts: Vec<&str> = header_name.split('/').collect();
        let name = parts.get(1..).map(|p| p.join("/")).unwrap_or_default();
        let name = clean_archive_path(&name).map_err(|e| match e {
            LoadError::OutsideBase(_) => LoadError::OutsideBase(go_quote(&header_name)),
            other => other,
        })?;
        if parts.first() == Some(&"Chart.yaml") {
            return Err(LoadError::ChartYamlNotInBase);
        }
        let size = entry.header().size().map_err(|e| archive_err(&header_name, e))?;
        if size > MAX_FILE_SIZE {
            return Err(LoadError::ArchiveFileTooLarge {
                file: header_name,
                limit: MAX_FILE_SIZE,
            });
        }
        if size > remaining {
            return Err(LoadError::ArchiveTooLarge(MAX_ARCHIVE_SIZE));
        }
        // Links carry no data; like Helm they become empty files (nothing is followed).
        let mut buf = Vec::new();
        if kind.is_file() || kind == tar::EntryType::Continuous || kind == tar::EntryType::GNUSparse {
            (&mut entry)
                .take(MAX_FILE_SIZE + 1)
                .read_to_end(&mut buf)
                .map_err(|e| archive_err(&header_name, e))?;
        }
        if buf.len() as u64 > MAX_FILE_SIZE {
            return Err(LoadError::ArchiveFileTooLarge {
                file: header_name,
                limit: MAX_FILE_SIZE,
            });
        }
        remaining = remaining
            .checked_sub(buf.len() as u64)
            .ok_or(LoadError::ArchiveTooLarge(MAX_ARCHIVE_SIZE))?;
        budget.take(buf.len() as u64)?;
        files.push(ChartFile {
            name,
            data: strip_bom(buf),
        });
    }
    if files.is_empty() {
        return Err(LoadError::EmptyArchive);
    }
    Ok(files)
}

/// Helm's checks on an archive entry name (after dropping the chart directory): no absolute
/// paths, nothing outside the base, no `..`, no drive letters; returns the cleaned path.
fn clean_archive_path(name: &str) -> Result<String, LoadError> {
    if name.starts_with('/') {
        return Err(LoadError::AbsolutePath);
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(LoadError::ParentReference);
                }
            }
            p => parts.push(p),
        }
    }
    let cleaned = parts.join("/");
    if cleaned.is_empty() {
        return Err(LoadError::OutsideBase(String::new()));
    }
    if cleaned.starts_with("..") {
        return Err(LoadError::ParentReference);
    }
    let b = cleaned.as_bytes();
    if b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'/' {
        return Err(LoadError::IllegalName);
    }
    // Backslashes would let a later Windows user escape; Helm's own drive check covers
    // `c:\`, so refuse such names as illegal too.
    if cleaned.contains('\\') && cleaned.split('\\').any(|p| p == "..") {
        return Err(LoadError::IllegalName);
    }
    Ok(cleaned)
}

fn load_archive_bytes(
    data: &[u8],
    source: &str,
    budget: &mut Budget,
    depth: usize,
) -> Result<Chart, LoadError> {
    let files = archive_files(data, source, budget)?;
    let mut chart = load_files(files, budget, depth)?;
    chart.source = PathBuf::from(source);
    Ok(chart)
}

/// Helm's `LoadFiles`: classifies the files of one chart and loads its subcharts.
fn load_files(files: Vec<ChartFile>, budget: &mut Budget, depth: usize) -> Result<Chart, LoadError> {
    let mut chart_yaml: Option<ChartYaml> = None;
    for f in files.iter().filter(|f| f.name == "Chart.yaml") {
        let decoded = chart_yaml.get_or_insert_with(ChartYaml::default);
        decoded
            .decode(&text(&f.data))
            .map_err(|error| LoadError::Decode {
                file: "Chart.yaml".into(),
                error,
            })?;
        if decoded.metadata.api_version.is_empty() {
            decoded.metadata.api_version = "v1".into();
        }
    }
    let mut templates = Vec::new();
    let mut other = Vec::new();
    let mut values_text = None;
    let mut lock_text = None;
    let memo = Memo::default();
    let mut schema = None;
    let mut subcharts: BTreeMap<String, Vec<ChartFile>> = BTreeMap::new();
    for f in files {
        let is_v1 = |c: &Option<ChartYaml>| c.as_ref().is_some_and(|c| c.metadata.api_version == "v1");
        match f.name.as_str() {
            "Chart.yaml" => {}
            "Chart.lock" => {
                let lock = text(&f.data);
                check_lock(&lock).map_err(|error| LoadError::Decode {
                    file: "Chart.lock".into(),
                    error,
                })?;
                lock_text = Some(lock);
            }
            "values.yaml" => {
                let values = text(&f.data);
                // Helm reads values.yaml at load time; the decoded tree is kept for renders.
                let parsed = values::parse(&values, "values.yaml").map_err(|e| LoadError::Values(e.msg))?;
                if let Ok(frozen) = Frozen::freeze(&parsed) {
                    let _ = memo.defaults.set(frozen);
                }
                values_text = Some(values);
            }
            "values.schema.json" => schema = Some(f.data),
            "requirements.yaml" => {
                let decoded = chart_yaml.get_or_insert_with(ChartYaml::default);
                decoded
                    .decode(&text(&f.data))
                    .map_err(|error| LoadError::Decode {
                        file: "requirements.yaml".into(),
                        error,
                    })?;
                if is_v1(&chart_yaml) {
                    other.push(f);
                }
            }
            "requirements.lock" => {
                check_lock(&text(&f.data)).map_err(|error| LoadError::Decode {
                    file: "requirements.lock".into(),
                    error,
                })?;
                chart_yaml.get_or_insert_with(ChartYaml::default);
                if is_v1(&chart_yaml) {
                    other.push(f);
                }
            }
            n if n.starts_with("templates/") => templates.push(f),
            n if n.starts_with("charts/") => {
                if n.ends_with(".prov") {
                    other.push(f);
                    continue;
                }
                let rest = &n["charts/".len()..];
                let sub = rest.split('/').next().unwrap_or(rest).to_string();
                subcharts.entry(sub).or_default().push(ChartFile {
                    name: rest.to_string(),
                    data: f.data,
                });
            }
            _ => other.push(f),
        }
    }
    let metadata = chart_yaml.ok_or(LoadError::MissingChartYaml)?.validate()?;
    let parent = metadata.name.clone();
    let mut dependencies = Vec::new();
    for (name, files) in subcharts {
        if name.starts_with('_') || name.starts_with('.') {
            continue;
        }
        let wrap = |error: LoadError| LoadError::Subchart {
            name: name.clone(),
            parent: parent.clone(),
            error: Box::new(error),
        };
        if depth + 1 > MAX_DEPTH {
            return Err(LoadError::TooDeep(MAX_DEPTH, format!("{parent}/charts/{name}")));
        }
        let sub = if name.ends_with(".tgz") {
            let first = files.into_iter().next();
            match first {
                Some(file) if file.name == name => {
                    load_archive_bytes(&file.data, &format!("charts/{name}"), budget, depth + 1)
                        .map_err(wrap)?
                }
                Some(file) => {
                    return Err(LoadError::SubchartTar {
                        parent,
                        expected: name,
                        got: file.name,
                    });
                }
                None => continue,
            }
        } else {
            // Strip `<name>/`; a file directly in charts/ leaves nothing (and then fails for
            // its missing Chart.yaml, as in Helm).
            let inner: Vec<ChartFile> = files
                .into_iter()
                .filter_map(|f| {
                    f.name.split_once('/').map(|(_, rest)| ChartFile {
                        name: rest.to_string(),
                        data: f.data,
                    })
                })
                .collect();
            load_files(inner, budget, depth + 1).map_err(wrap)?
        };
        dependencies.push(sub);
    }
    Ok(Chart {
        metadata,
        templates,
        files: other,
        values_text,
        schema,
        dependencies,
        lock: lock_text,
        source: PathBuf::new(),
        memo,
    })
}

/// Go's `%q` for the plain names Helm quotes.
fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// File bytes as text for the YAML readers (invalid UTF-8 is replaced, not fatal).
fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tgz(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::fast(),
        ));
        for (name, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_entry_type(tar::EntryType::Regular);
            // set_path refuses `..`; write the raw name so the loader's checks are exercised.
            let raw = &mut header.as_old_mut().name;
            raw[..name.len()].copy_from_slice(name.as_bytes());
            header.set_cksum();
            builder.append(&header, *data).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    fn archive_err(entries: &[(&str, &[u8])]) -> String {
        load_archive(&tgz(entries), "x.tgz").unwrap_err().to_string()
    }

    #[test]
    fn archive_paths_are_checked_like_helm() {
        assert_eq!(
            archive_err(&[("c/../../etc/passwd", b"x")]),
            "chart illegally references parent directory"
        );
        assert_eq!(
            archive_err(&[("c//abs", b"x")]),
            "chart illegally contains absolute paths"
        );
        assert_eq!(
            archive_err(&[("Chart.yaml", b"x")]),
            "chart illegally contains content outside the base directory: \"Chart.yaml\""
        );
        assert_eq!(
            archive_err(&[("c/c:/x", b"x")]),
            "chart contains illegally named files"
        );
        assert_eq!(archive_err(&[]), "no files in chart archive");
    }

    #[test]
    fn archive_sizes_are_capped() {
        let big = vec![b'a'; (MAX_FILE_SIZE + 1) as usize];
        assert_eq!(
            archive_err(&[("c/big.txt", &big)]),
            format!(
                "decompressed chart file \"c/big.txt\" is larger than the maximum file size {MAX_FILE_SIZE}"
            )
        );
    }

    #[test]
    fn non_gzip_is_refused() {
        let err = load_archive(b"hello", "c.tgz").unwrap_err().to_string();
        assert_eq!(
            err,
            "file 'c.tgz' does not appear to be a gzipped archive; got 'text/plain; charset=utf-8'"
        );
    }

    #[test]
    fn missing_chart_yaml() {
        let err = archive_err(&[("c/templates/t.yaml", b"x")]);
        assert_eq!(err, "Chart.yaml file is missing");
    }

    const CHART: &[u8] = b"apiVersion: v2\nname: c\nversion: 0.1.0\n";

    #[test]
    fn archive_with_nested_tgz_subchart_loads() {
        let sub = tgz(&[
            ("s/Chart.yaml", b"apiVersion: v2\nname: s\nversion: 1.0.0\n"),
            ("s/templates/a.yaml", b"a"),
        ]);
        let chart = load_archive(
            &tgz(&[
                ("c/Chart.yaml", CHART),
                ("c/values.yaml", b"\xEF\xBB\xBFx: 1\n"),
                ("c/charts/s-1.0.0.tgz", &sub),
                ("c/charts/s-1.0.0.tgz.prov", b"sig"),
                ("c/templates/t.yaml", b"t"),
                ("c/.helmignore", b"*.yaml\n"),
            ]),
            "c.tgz",
        )
        .unwrap();
        assert_eq!(chart.name(), "c");
        assert_eq!(chart.values_text.as_deref(), Some("x: 1\n"), "BOM dropped");
        assert_eq!(chart.dependencies.len(), 1);
        assert_eq!(chart.dependencies[0].name(), "s");
        assert_eq!(chart.dependencies[0].templates[0].name, "templates/a.yaml");
        // .helmignore does not apply to archives; it and the .prov file are .Files.
        let files: Vec<&str> = chart.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(files, ["charts/s-1.0.0.tgz.prov", ".helmignore"], "archive order");
        assert_eq!(chart.templates.len(), 1);
    }

    #[test]
    fn broken_subchart_names_parent_and_subchart() {
        let err = archive_err(&[
            ("c/Chart.yaml", CHART),
            ("c/charts/s/Chart.yaml", b"apiVersion: v2\nname: s\nversion: x\n"),
        ]);
        assert_eq!(
            err,
            "error unpacking subchart s in c: validation: chart.metadata.version \"x\" is invalid"
        );
        let err = archive_err(&[("c/Chart.yaml", CHART), ("c/charts/s.tgz", b"not gzip")]);
        assert!(err.starts_with("error unpacking subchart s.tgz in c: "), "{err}");
    }

    #[test]
    fn directory_limits_and_symlinks() {
        let root = std::env::temp_dir().join(format!("capstan-load-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("templates")).unwrap();
        std::fs::write(root.join("Chart.yaml"), CHART).unwrap();
        std::fs::write(root.join("shared.txt"), "x").unwrap();
        #[cfg(unix)]
        {
            // A symlink inside the chart is followed; a cycle is refused.
            std::os::unix::fs::symlink("../shared.txt", root.join("templates/link.yaml")).unwrap();
            let chart = load(&root).unwrap();
            assert_eq!(chart.templates[0].data, b"x");
            std::os::unix::fs::symlink("..", root.join("templates/loop")).unwrap();
            let err = load(&root).unwrap_err().to_string();
            assert_eq!(err, "symlink cycle at templates/loop");
            std::fs::remove_file(root.join("templates/loop")).unwrap();
        }
        std::fs::write(root.join("big.bin"), vec![0u8; (MAX_FILE_SIZE + 1) as usize]).unwrap();
        let err = load(&root).unwrap_err().to_string();
        assert_eq!(
            err,
            format!("chart file \"big.bin\" is larger than the maximum file size {MAX_FILE_SIZE}")
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn clean_paths() {
        assert_eq!(clean_archive_path("a/./b//c").unwrap(), "a/b/c");
        assert_eq!(clean_archive_path("a/../b").unwrap(), "b");
        assert!(matches!(
            clean_archive_path("a/../../b"),
            Err(LoadError::ParentReference)
        ));
    }
}
