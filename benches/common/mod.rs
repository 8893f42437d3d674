//! Helpers shared by the benchmarks.

use std::path::PathBuf;

/// The shared directory beside the checkout that holds `marker` (`helm-corpus`,
/// `cluster-stack-releases`): `$CAPSTAN_SHARED`, `$CAPSTAN_SHARED_DIR`, `../shared` or
/// `../../shared`. `None` when there is none; benchmarks then skip what needs it.
pub fn shared_dir(marker: &str) -> Option<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    ["CAPSTAN_SHARED", "CAPSTAN_SHARED_DIR"]
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from)
        .chain([manifest.join("../shared"), manifest.join("../../shared")])
        .find(|p| p.join(marker).is_dir())
}
