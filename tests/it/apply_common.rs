//! Helpers of the applier tests (`tests/apply_*.rs`): rendering charts with the `capstan`
//! binary (the real `capstan render` pipeline), building objects, reading results.
#![allow(dead_code)] // each test binary uses its own subset

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use capstan_apply::{
    Action, ApplyOptions, ApplyReport, DesiredObject, InventoryRef, ObjectResult, SyncStatus, parse_stream,
};

/// The `capstan` binary of this build.
pub fn capstan() -> Command {
    Command::new(env!("CARGO_BIN_EXE_capstan"))
}

/// `capstan render RELEASE CHART -n NS EXTRA…`: the manifest stream.
pub fn render(release: &str, chart: &Path, namespace: &str, extra: &[&str]) -> String {
    let out = capstan()
        .arg("render")
        .arg(release)
        .arg(chart)
        .args(["-n", namespace])
        .args(extra)
        .output()
        .expect("run capstan render");
    assert!(
        out.status.success(),
        "capstan render {}: {}",
        chart.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 manifests")
}

/// Parses a manifest stream (panics with the parse error).
pub fn objects(text: &str) -> Vec<DesiredObject> {
    parse_stream(text, "test").unwrap_or_else(|e| panic!("{e}"))
}

/// A Namespace object.
pub fn namespace(name: &str) -> DesiredObject {
    objects(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n"
    ))
    .remove(0)
}

/// The chart `.tgz` of a shared stack release: `which` is `cluster-class` or `cluster-addon`.
pub fn release_chart(version: &str, which: &str) -> Option<PathBuf> {
    let rel = format!(
        "cluster-stack-releases/docker-ferrol-1-27-{version}/docker-ferrol-1-27-{which}-{version}.tgz"
    );
    shared_path(&rel)
}

fn shared_path(rel: &str) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CAPSTAN_SHARED") {
        let p = PathBuf::from(dir).join(rel);
        return p.exists().then_some(p);
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .skip(1)
        .map(|dir| dir.join("shared").join(rel))
        .find(|p| p.exists())
}

/// Apply options for `namespace`, with an inventory of that name when given.
pub fn options(namespace: &str, inventory: Option<&str>) -> ApplyOptions {
    ApplyOptions {
        namespace: namespace.into(),
        inventory: inventory.map(|name| InventoryRef {
            namespace: namespace.into(),
            name: name.into(),
        }),
        ..ApplyOptions::default()
    }
}

/// `Kind/name → (status, action)` of a report (names are unique within these tests' kinds).
pub fn outcome(report: &ApplyReport) -> BTreeMap<String, (SyncStatus, Action)> {
    report
        .results
        .iter()
        .map(|r| (format!("{}/{}", r.key.kind, r.key.name), (r.status, r.action)))
        .collect()
}

/// Every result's line, for assertion messages.
pub fn lines(report: &ApplyReport) -> String {
    report
        .results
        .iter()
        .map(ObjectResult::line)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Asserts that every result is Synced.
pub fn assert_all_synced(report: &ApplyReport, what: &str) {
    assert!(
        report.results.iter().all(|r| r.status == SyncStatus::Synced) && report.inventory_error.is_none(),
        "{what}: not all Synced:\n{}\ninventory: {:?}",
        lines(report),
        report.inventory_error
    );
}
