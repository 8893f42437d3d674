//! capstan's own deployment chart (`deploy/capstan/`), embedded in the binary so that
//! `capstan install` works without a checkout. A test keeps the list below equal to the
//! directory's files (less what its `.helmignore` leaves out).

use anyhow::Context;

use capstan_chart::{Chart, ChartFile, load};

/// Each file of the chart: its path in the chart, its bytes.
const FILES: &[(&str, &[u8])] = &[
    ("Chart.yaml", include_bytes!("../../deploy/capstan/Chart.yaml")),
    ("values.yaml", include_bytes!("../../deploy/capstan/values.yaml")),
    (
        "crds/clusterstack.x-k8s.io.yaml",
        include_bytes!("../../deploy/capstan/crds/clusterstack.x-k8s.io.yaml"),
    ),
    (
        "crds/rollouts.capstan.dev.yaml",
        include_bytes!("../../deploy/capstan/crds/rollouts.capstan.dev.yaml"),
    ),
    (
        "templates/_helpers.tpl",
        include_bytes!("../../deploy/capstan/templates/_helpers.tpl"),
    ),
    (
        "templates/deployment.yaml",
        include_bytes!("../../deploy/capstan/templates/deployment.yaml"),
    ),
    (
        "templates/rbac.yaml",
        include_bytes!("../../deploy/capstan/templates/rbac.yaml"),
    ),
    (
        "templates/service.yaml",
        include_bytes!("../../deploy/capstan/templates/service.yaml"),
    ),
    (
        "templates/serviceaccount.yaml",
        include_bytes!("../../deploy/capstan/templates/serviceaccount.yaml"),
    ),
    (
        "templates/webhook.yaml",
        include_bytes!("../../deploy/capstan/templates/webhook.yaml"),
    ),
];

/// The embedded chart, loaded through the chart loader like any other.
pub fn load() -> anyhow::Result<Chart> {
    let files = FILES
        .iter()
        .map(|(name, data)| ChartFile {
            name: (*name).to_string(),
            data: data.to_vec(),
        })
        .collect();
    load::load_files_in_memory(files, "capstan (embedded deploy/capstan)")
        .context("loading the embedded deployment chart")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use super::*;

    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).expect("read chart dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).expect("below root");
                out.insert(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }

    #[test]
    fn embeds_every_file_of_the_chart_directory() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/capstan");
        let mut on_disk = BTreeSet::new();
        walk(&root, &root, &mut on_disk);
        // Not part of the chart (its .helmignore).
        on_disk.remove(".helmignore");
        on_disk.remove("README.md");
        let embedded: BTreeSet<String> = FILES.iter().map(|(n, _)| n.to_string()).collect();
        assert_eq!(
            embedded, on_disk,
            "src/cli/deploy_chart.rs FILES must list every file of deploy/capstan"
        );
        let chart = load().expect("embedded chart loads");
        assert_eq!(chart.name(), "capstan");
    }
}
