//! Reading and writing the gzipped tar archives of a release, safely: entries may not be
//! absolute, climb out with `..`, or be links; sizes are capped like Helm caps charts.

use std::io::Read;
use std::path::Path;

use capstan_chart::ChartFile;
use capstan_chart::ignore::Rules;
use capstan_chart::load::{MAX_ARCHIVE_SIZE, MAX_FILE_SIZE};

/// A file of an archive: its cleaned `/`-separated path and bytes.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub path: String,
    pub data: Vec<u8>,
}

/// Reads every regular file of the `.tgz` at `path` (directories are implied by paths).
pub(crate) fn read_tgz(path: &Path) -> Result<Vec<Entry>, String> {
    let data = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    if !data.starts_with(&[0x1f, 0x8b]) {
        return Err("not a gzipped archive".to_string());
    }
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(data.as_slice()));
    let mut remaining = MAX_ARCHIVE_SIZE;
    let mut out = Vec::new();
    let entries = archive.entries().map_err(|e| format!("not a tar archive: {e}"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("corrupt archive: {e}"))?;
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let kind = entry.header().entry_type();
        if kind.is_dir() || kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
            continue;
        }
        if kind.is_symlink() || kind.is_hard_link() {
            return Err(format!(
                "entry {raw:?} is a link, which a release archive may not hold"
            ));
        }
        if !(kind.is_file() || kind == tar::EntryType::Continuous) {
            return Err(format!("entry {raw:?} is not a regular file"));
        }
        let clean = clean_path(&raw)?;
        let size = entry.header().size().map_err(|e| format!("entry {raw:?}: {e}"))?;
        if size > MAX_FILE_SIZE {
            return Err(format!("entry {raw:?} is larger than {MAX_FILE_SIZE} bytes"));
        }
        let mut buf = Vec::new();
        (&mut entry)
            .take(MAX_FILE_SIZE + 1)
            .read_to_end(&mut buf)
            .map_err(|e| format!("entry {raw:?}: {e}"))?;
        if buf.len() as u64 > MAX_FILE_SIZE {
            return Err(format!("entry {raw:?} is larger than {MAX_FILE_SIZE} bytes"));
        }
        remaining = remaining
            .checked_sub(buf.len() as u64)
            .ok_or_else(|| format!("decompressed archive is larger than {MAX_ARCHIVE_SIZE} bytes"))?;
        out.push(Entry {
            path: clean,
            data: buf,
        });
    }
    Ok(out)
}

/// `a/./b` → `a/b`; refuses absolute paths and `..`.
fn clean_path(raw: &str) -> Result<String, String> {
    if raw.starts_with('/') || raw.starts_with('\\') {
        return Err(format!("entry {raw:?} has an absolute path"));
    }
    let mut parts = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(format!("entry {raw:?} refers to a parent directory")),
            p if p.contains('\\') || p.contains(':') => {
                return Err(format!("entry {raw:?} has an illegal name"));
            }
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err(format!("entry {raw:?} has an empty path"));
    }
    Ok(parts.join("/"))
}

/// The top-level directories of an archive, in name order.
pub(crate) fn top_dirs(entries: &[Entry]) -> Vec<String> {
    let mut dirs: Vec<String> = entries
        .iter()
        .filter_map(|e| e.path.split_once('/').map(|(d, _)| d.to_string()))
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// The files below `dir/` as chart files relative to it, filtered by the directory's
/// `.helmignore` (and Helm's default rule) as loading that directory from disk would.
pub(crate) fn chart_files(entries: &[Entry], dir: &str) -> Result<Vec<ChartFile>, String> {
    let prefix = format!("{dir}/");
    let files: Vec<ChartFile> = entries
        .iter()
        .filter_map(|e| {
            e.path.strip_prefix(&prefix).map(|rel| ChartFile {
                name: rel.to_string(),
                data: e.data.clone(),
            })
        })
        .collect();
    let mut rules = match files.iter().find(|f| f.name == ".helmignore") {
        Some(f) => {
            Rules::parse(&String::from_utf8_lossy(&f.data)).map_err(|e| format!("{dir}/.helmignore: {e}"))?
        }
        None => Rules::empty(),
    };
    rules.add_defaults();
    let mut kept: Vec<ChartFile> = files
        .into_iter()
        .filter(|f| {
            let parts: Vec<&str> = f.name.split('/').collect();
            let dir_ignored = (1..parts.len()).any(|n| rules.ignore(&parts[..n].join("/"), true));
            !dir_ignored && !rules.ignore(&f.name, false)
        })
        .collect();
    // Directory loading walks in lexical order.
    kept.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(kept)
}

/// Writes `files` (`/`-separated paths) as a gzipped tar at `dest`, in the given order, with
/// fixed metadata so equal inputs give equal bytes.
pub(crate) fn write_tgz(dest: &Path, files: &[(String, Vec<u8>)]) -> std::io::Result<()> {
    let file = std::fs::File::create(dest)?;
    let gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
    let mut builder = tar::Builder::new(gz);
    for (name, data) in files {
        let mut header = tar::Header::new_ustar();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_entry_type(tar::EntryType::Regular);
        builder.append_data(&mut header, name, data.as_slice())?;
    }
    let gz = builder.into_inner()?;
    let file = gz.finish()?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleans_and_refuses_paths() {
        assert_eq!(clean_path("a/./b//c").unwrap(), "a/b/c");
        assert!(clean_path("../x").unwrap_err().contains("parent directory"));
        assert!(clean_path("a/../../x").unwrap_err().contains("parent directory"));
        assert!(clean_path("/etc/passwd").unwrap_err().contains("absolute"));
        assert!(clean_path("c:/x").unwrap_err().contains("illegal"));
    }

    #[test]
    fn round_trip_and_helmignore() {
        let dir = std::env::temp_dir().join(format!("capstan-archive-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.tgz");
        let files = vec![
            ("s/Chart.yaml".to_string(), b"name: s\n".to_vec()),
            ("s/.helmignore".to_string(), b"*.bak\nskip/\n".to_vec()),
            ("s/x.bak".to_string(), b"".to_vec()),
            ("s/skip/y".to_string(), b"".to_vec()),
            ("s/templates/.hidden".to_string(), b"".to_vec()),
            ("s/templates/t.yaml".to_string(), b"t".to_vec()),
            ("t/Chart.yaml".to_string(), b"name: t\n".to_vec()),
        ];
        write_tgz(&path, &files).unwrap();
        let entries = read_tgz(&path).unwrap();
        assert_eq!(entries.len(), files.len());
        assert_eq!(top_dirs(&entries), ["s", "t"]);
        let names: Vec<String> = chart_files(&entries, "s")
            .unwrap()
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(names, [".helmignore", "Chart.yaml", "templates/t.yaml"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
