//! One ClusterStack a row (`capstan get stacks`).

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use serde::Serialize;

use capstan_operator::api::conditions;
use capstan_operator::api::{ClusterStack, StackSource};

use super::super::table::Table;
use super::{Layout, Readiness, age_cell, frame, push_row, release_tag, rfc3339};

/// One ClusterStack, as `capstan get stacks` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StackRow {
    pub namespace: String,
    pub name: String,
    /// `<provider>-<name>-<major>-<minor>`.
    pub stack: String,
    pub channel: String,
    pub auto_subscribe: bool,
    /// Versions asked for besides the newest (`spec.versions`).
    pub versions: Vec<String>,
    /// Versions ready to use (`status.usableVersions`).
    pub usable: Vec<String>,
    /// The newest release of the source (`status.latestRelease`).
    pub latest: Option<String>,
    /// Where the releases come from: `github:OWNER/REPO`, `oci://HOST/REPO`, `git+URL#REF:PATH`,
    /// `local:PATH`, or `default` (the operator's default source).
    pub source: String,
    /// The `SourceReady` condition's status: the last listing of the source succeeded.
    pub source_ready: String,
    pub ready: Readiness,
    pub created: Option<String>,
}

/// A stack's source in one word.
pub fn source_text(source: Option<&StackSource>) -> String {
    match source {
        None => "default".into(),
        Some(StackSource::Github(g)) => format!("github:{}/{}", g.owner, g.repo),
        Some(StackSource::Oci(o)) => {
            let repo = o.repository.trim_start_matches("oci://");
            format!("oci://{repo}")
        }
        Some(StackSource::Git(g)) => {
            let mut text = format!("git+{}", g.url);
            if let Some(r) = &g.ref_ {
                text.push('#');
                text.push_str(r);
            }
            if let Some(p) = &g.path {
                text.push_str(if g.ref_.is_some() { ":" } else { "#:" });
                text.push_str(p);
            }
            text
        }
        Some(StackSource::Local(l)) => format!("local:{}", l.path),
    }
}

impl StackRow {
    pub fn of(stack: &ClusterStack) -> StackRow {
        let status = stack.status.clone().unwrap_or_default();
        let spec = &stack.spec;
        StackRow {
            namespace: stack.namespace().unwrap_or_default(),
            name: stack.name_any(),
            stack: format!(
                "{}-{}-{}",
                spec.provider,
                spec.name,
                spec.kubernetes_version.replace('.', "-")
            ),
            channel: spec.channel.to_string(),
            auto_subscribe: spec.auto_subscribe,
            versions: spec.versions.clone(),
            usable: status
                .usable_versions
                .as_deref()
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
                .collect(),
            latest: status.latest_release.clone(),
            source: source_text(spec.source.as_ref()),
            source_ready: conditions::find(&status.conditions, "SourceReady")
                .map_or("Unknown", |c| c.status.as_str())
                .into(),
            ready: Readiness::of(&status.conditions, false),
            created: rfc3339(&stack.metadata.creation_timestamp),
        }
    }
}

/// The table of `capstan get stacks`.
pub fn stacks_table(rows: &[StackRow], layout: Layout, now: Timestamp) -> Table {
    let mut table = frame(
        layout,
        &[
            "NAME", "STACK", "CHANNEL", "LATEST", "USABLE", "SOURCE", "READY", "AGE",
        ],
        &["VERSIONS", "AUTO", "SOURCE READY", "REASON"],
    );
    for row in rows {
        let latest = row
            .latest
            .as_deref()
            .map(|l| release_tag(l).map_or_else(|| l.to_string(), |t| t.version().to_string()));
        let main = [
            row.name.clone(),
            row.stack.clone(),
            row.channel.clone(),
            latest.unwrap_or_default(),
            row.usable.join(","),
            row.source.clone(),
            row.ready.status.clone(),
            age_cell(now, row.created.as_deref()),
        ];
        let wide = || {
            vec![
                row.versions.join(","),
                row.auto_subscribe.to_string(),
                row.source_ready.clone(),
                row.ready.reason.clone(),
            ]
        };
        push_row(&mut table, layout, &row.namespace, main, wide, row.ready.text());
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_in_one_word() {
        use capstan_operator::api::{GitHubSource, GitSource, LocalSource, OciSource};
        for (source, want) in [
            (None, "default"),
            (
                Some(StackSource::Github(GitHubSource {
                    owner: "o".into(),
                    repo: "r".into(),
                    ..Default::default()
                })),
                "github:o/r",
            ),
            (
                Some(StackSource::Oci(OciSource {
                    repository: "oci://reg/x".into(),
                    ..Default::default()
                })),
                "oci://reg/x",
            ),
            (
                Some(StackSource::Git(GitSource {
                    url: "https://h/s.git".into(),
                    ref_: Some("main".into()),
                    path: Some("p".into()),
                    ..Default::default()
                })),
                "git+https://h/s.git#main:p",
            ),
            (
                Some(StackSource::Local(LocalSource { path: "/s".into() })),
                "local:/s",
            ),
        ] {
            assert_eq!(source_text(source.as_ref()), want);
        }
    }
}
