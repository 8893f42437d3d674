//! Pre-flight checks before each step of a Cluster's path, as pure verdicts over evidence the
//! controller (or `capstan preflight`) gathered from the workload cluster:
//! - **Removed APIs** ([`removed_apis`]): the API server's own record of deprecated requests
//!   (`apiserver_requested_deprecated_apis{removed_release}` on its `/metrics`, parsed by
//!   [`requested_deprecated_apis`]) and the apiVersion/kind of objects in use (stored Helm
//!   releases' manifests, the ClusterAddon inventory, the target release rendered for the
//!   Cluster) against [`REMOVED_APIS`], the APIs each minor no longer serves. The API
//!   server's record starts at its last restart ([`COUNTER_NOTE`]).
//! - **Version skew** ([`version_skew`]): the control plane at the step's source minor, and no
//!   MachineDeployment or MachinePool further behind the step's minor than the kubelet skew
//!   Kubernetes supports — neither its spec's version nor one its machines still run
//!   ([`workers_of`]).
//! - The render of the target release and the user's CEL checks are verdicts computed
//!   elsewhere and passed in as [`PreflightResult`]s.
//!
//! A step is blocked when any result is not ok.

use std::sync::OnceLock;

use capstan_stack::name::KubernetesVersion;

pub use crate::api::rollout::PreflightResult;

/// The check names of the results this module makes.
pub const REMOVED_APIS_CHECK: &str = "RemovedAPIs";
pub const VERSION_SKEW_CHECK: &str = "VersionSkew";

/// What `preflight` output says about the API server's record.
pub const COUNTER_NOTE: &str = "the API server's record of deprecated requests starts at its last restart: an API used only before it is not seen";

/// The table of removed APIs, kept as data with its source.
const REMOVED_APIS_TABLE: &str = include_str!("../../data/removed-apis.txt");

/// An API version a Kubernetes minor no longer serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemovedApi {
    pub removed_in: KubernetesVersion,
    pub api_version: String,
    pub kind: String,
    /// The apiVersion to use instead (`None`: removed without a replacement).
    pub replacement: Option<String>,
}

/// The rows of `data/removed-apis.txt`.
pub fn removed_api_table() -> &'static [RemovedApi] {
    static TABLE: OnceLock<Vec<RemovedApi>> = OnceLock::new();
    // The file is part of the binary and a test reads every line of it: rows that do not
    // parse cannot ship, so keeping those that do is only a belt.
    TABLE.get_or_init(|| {
        parse_table(REMOVED_APIS_TABLE)
            .into_iter()
            .filter_map(Result::ok)
            .collect()
    })
}

/// Every non-comment line of the table, parsed or why not (with its line number).
fn parse_table(text: &str) -> Vec<Result<RemovedApi, String>> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty() && !line.trim_start().starts_with('#'))
        .map(|(i, line)| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [removed_in, api_version, kind, replacement] = fields.as_slice() else {
                return Err(format!("line {}: {} fields, 4 expected", i + 1, fields.len()));
            };
            let removed_in =
                KubernetesVersion::parse(removed_in).map_err(|e| format!("line {}: {e}", i + 1))?;
            Ok(RemovedApi {
                removed_in,
                api_version: api_version.to_string(),
                kind: kind.to_string(),
                replacement: (*replacement != "-").then(|| replacement.to_string()),
            })
        })
        .collect()
}

/// An object kind in use on the workload cluster, and where it was seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiInUse {
    pub api_version: String,
    pub kind: String,
    /// `Helm release kube-system/ingress-nginx`, `ClusterAddon inventory`, `rendered release`.
    pub seen_in: String,
}

/// One series of `apiserver_requested_deprecated_apis`: a deprecated API requested since the
/// API server started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeprecatedRequest {
    pub group: String,
    pub version: String,
    pub resource: String,
    /// `1.22`; `None` when no removal is planned.
    pub removed_release: Option<KubernetesVersion>,
}

impl DeprecatedRequest {
    fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// The series of `apiserver_requested_deprecated_apis` in a Prometheus text exposition (what
/// the API server's `/metrics` returns); other metrics and comments are skipped. A series set
/// to 0 is not a request.
pub fn requested_deprecated_apis(metrics: &str) -> Vec<DeprecatedRequest> {
    let mut found = Vec::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix("apiserver_requested_deprecated_apis{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once('}') else {
            continue;
        };
        let value: f64 = value
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        if value == 0.0 {
            continue;
        }
        let label = |name: &str| label_value(labels, name).unwrap_or_default();
        found.push(DeprecatedRequest {
            group: label("group"),
            version: label("version"),
            resource: label("resource"),
            removed_release: KubernetesVersion::parse(&label("removed_release")).ok(),
        });
    }
    found
}

/// The value of `name` in a Prometheus label set `a="x",b="y"` (with `\"` and `\\` escapes).
fn label_value(labels: &str, name: &str) -> Option<String> {
    let mut rest = labels;
    while !rest.is_empty() {
        let (key, after) = rest.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, other)) => value.push(other),
                    None => {}
                },
                '"' => {
                    end = i + 1;
                    break;
                }
                other => value.push(other),
            }
        }
        if key.trim_start_matches(',').trim() == name {
            return Some(value);
        }
        rest = after[end..].trim_start_matches(',');
    }
    None
}

/// The removed-APIs verdict of a step to `to`: blocked by every API the API server saw
/// requested whose `removed_release` is `to` or earlier, and every object in use of an
/// apiVersion/kind [`removed_api_table`] says `to` (or an earlier minor) no longer serves.
pub fn removed_apis(
    to: KubernetesVersion,
    requested: &[DeprecatedRequest],
    in_use: &[ApiInUse],
) -> PreflightResult {
    let mut reasons = Vec::new();
    for request in requested {
        if let Some(removed) = request.removed_release
            && removed.major == to.major
            && removed.minor <= to.minor
        {
            reasons.push(format!(
                "{} {} requested since the API server started (removed in {removed})",
                request.api_version(),
                request.resource
            ));
        }
    }
    for used in in_use {
        let removed = removed_api_table().iter().find(|r| {
            r.api_version == used.api_version
                && r.kind == used.kind
                && r.removed_in.major == to.major
                && r.removed_in.minor <= to.minor
        });
        if let Some(r) = removed {
            let instead = r
                .replacement
                .as_deref()
                .map_or_else(|| "no replacement".to_string(), |a| format!("use {a}"));
            reasons.push(format!(
                "{} {} in {} (removed in {}; {instead})",
                used.api_version, used.kind, used.seen_in, r.removed_in
            ));
        }
    }
    reasons.sort();
    reasons.dedup();
    PreflightResult {
        check: REMOVED_APIS_CHECK.to_string(),
        ok: reasons.is_empty(),
        reason: if reasons.is_empty() {
            format!("no API removed by {to} in use ({COUNTER_NOTE})")
        } else {
            format!(
                "uses APIs Kubernetes {to} no longer serves: {}",
                reasons.join("; ")
            )
        },
    }
}

/// How many minors a kubelet may be older than the API server at `server` (Kubernetes'
/// version skew policy: three from 1.28, two before).
pub fn kubelet_skew(server: KubernetesVersion) -> u64 {
    if server.major == 1 && server.minor < 28 {
        2
    } else {
        3
    }
}

/// A MachineDeployment or MachinePool and the Kubernetes version it runs (`spec.template.spec.
/// version` / `spec.template.spec.version` of a pool).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workers {
    /// `MachineDeployment md-0`.
    pub name: String,
    pub version: Option<String>,
}

/// The versions a MachineDeployment or MachinePool holds its machines at, as the skew check
/// reads them: the one its spec names (`None`: the topology's), and each other one its
/// machines still run (`status.versions`, Cluster API v1.14) — an upgrade under way leaves
/// machines on a version the spec no longer names.
pub fn workers_of(fields: &capstan_stack::capi::WorkersFields) -> Vec<Workers> {
    let name = format!("{} {}", fields.kind, fields.name);
    let running = fields
        .running
        .iter()
        .filter(|r| fields.kubernetes_version.as_ref() != Some(&r.version))
        .map(|r| Workers {
            name: match r.replicas {
                Some(1) => format!("{name} (1 machine)"),
                Some(n) => format!("{name} ({n} machines)"),
                None => format!("{name} (some machines)"),
            },
            version: Some(r.version.clone()),
        });
    std::iter::once(Workers {
        name: name.clone(),
        version: fields.kubernetes_version.clone(),
    })
    .chain(running)
    .collect()
}

/// The version-skew verdict of a step from `from` to `to`: the control plane runs `from`'s
/// minor (`control_plane`: its `status.version`, `v1.27.3`), and no workers are newer than
/// `to` or more minors behind it than [`kubelet_skew`] allows.
pub fn version_skew(
    from: KubernetesVersion,
    to: KubernetesVersion,
    control_plane: Option<&str>,
    workers: &[Workers],
) -> PreflightResult {
    let mut reasons = Vec::new();
    match control_plane.map(KubernetesVersion::parse_release) {
        None => reasons.push("the control plane reports no version".to_string()),
        Some(Err(e)) => reasons.push(format!("the control plane's version: {e}")),
        Some(Ok(v)) if v != from => {
            reasons.push(format!("the control plane runs {v}, the step starts from {from}"));
        }
        Some(Ok(_)) => {}
    }
    let allowed = kubelet_skew(to);
    for w in workers {
        let Some(text) = &w.version else {
            continue; // no version of its own: it follows the topology's
        };
        match KubernetesVersion::parse_release(text) {
            Err(e) => reasons.push(format!("{}: {e}", w.name)),
            Ok(v) if v.major != to.major || v.minor > to.minor => {
                reasons.push(format!("{} runs {v}, newer than {to}", w.name));
            }
            Ok(v) if to.minor - v.minor > allowed => reasons.push(format!(
                "{} runs {v}, {} minors behind {to} (at most {allowed})",
                w.name,
                to.minor - v.minor
            )),
            Ok(_) => {}
        }
    }
    PreflightResult {
        check: VERSION_SKEW_CHECK.to_string(),
        ok: reasons.is_empty(),
        reason: reasons.join("; "),
    }
}

/// Whether a step with these results is blocked.
pub fn blocks(results: &[PreflightResult]) -> bool {
    results.iter().any(|r| !r.ok)
}

/// The reasons of the failed results, for a Cluster's message.
pub fn summary(results: &[PreflightResult]) -> String {
    results
        .iter()
        .filter(|r| !r.ok)
        .map(|r| format!("{}: {}", r.check, r.reason))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k8s(text: &str) -> KubernetesVersion {
        KubernetesVersion::parse(text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_table_parses_every_line_and_holds_the_guides_removals() {
        let rows = parse_table(REMOVED_APIS_TABLE);
        let errors: Vec<&String> = rows.iter().filter_map(|r| r.as_ref().err()).collect();
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(removed_api_table().len(), rows.len());
        let removed_in = |api_version: &str, kind: &str| {
            removed_api_table()
                .iter()
                .find(|r| r.api_version == api_version && r.kind == kind)
                .map(|r| r.removed_in.to_string())
        };
        assert_eq!(
            removed_in("extensions/v1beta1", "Ingress").as_deref(),
            Some("1.22")
        );
        assert_eq!(
            removed_in("policy/v1beta1", "PodSecurityPolicy").as_deref(),
            Some("1.25")
        );
        assert_eq!(removed_in("batch/v1beta1", "CronJob").as_deref(), Some("1.25"));
        assert_eq!(
            removed_in("storage.k8s.io/v1beta1", "CSIStorageCapacity").as_deref(),
            Some("1.27")
        );
        assert_eq!(
            removed_in("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema").as_deref(),
            Some("1.32")
        );
        assert_eq!(removed_in("networking.k8s.io/v1", "Ingress"), None);
        assert_eq!(
            parse_table("1.22 a/v1 Kind\n# comment\n\nx.y a/v1 K b/v1"),
            vec![
                Err("line 1: 3 fields, 4 expected".to_string()),
                Err(
                    "line 4: invalid Kubernetes version \"x.y\": major version \"x\" is not a number"
                        .to_string()
                ),
            ]
        );
    }

    /// The metric text a v1.20 API server serves after an `extensions/v1beta1` Ingress request.
    const METRICS: &str = r#"# HELP apiserver_requested_deprecated_apis [STABLE] Gauge of deprecated APIs that have been requested, broken out by API group, version, resource, subresource, and removed_release.
# TYPE apiserver_requested_deprecated_apis gauge
apiserver_requested_deprecated_apis{group="extensions",removed_release="1.22",resource="ingresses",subresource="",version="v1beta1"} 1
apiserver_requested_deprecated_apis{group="policy",removed_release="1.25",resource="podsecuritypolicies",subresource="",version="v1beta1"} 1
apiserver_requested_deprecated_apis{group="example.com",removed_release="",resource="widgets",subresource="",version="v1alpha1"} 1
apiserver_requested_deprecated_apis{group="batch",removed_release="1.25",resource="cronjobs",subresource="",version="v1beta1"} 0
apiserver_request_total{code="200",verb="GET"} 7
"#;

    #[test]
    fn the_api_servers_record_is_read_from_its_metrics() {
        let requested = requested_deprecated_apis(METRICS);
        let seen: Vec<(String, String, Option<String>)> = requested
            .iter()
            .map(|r| {
                (
                    r.api_version(),
                    r.resource.clone(),
                    r.removed_release.map(|v| v.to_string()),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (
                    "extensions/v1beta1".to_string(),
                    "ingresses".to_string(),
                    Some("1.22".to_string())
                ),
                (
                    "policy/v1beta1".to_string(),
                    "podsecuritypolicies".to_string(),
                    Some("1.25".to_string())
                ),
                ("example.com/v1alpha1".to_string(), "widgets".to_string(), None),
            ]
        );
        assert_eq!(label_value(r#"a="x\"y",b="z""#, "b").as_deref(), Some("z"));
        assert_eq!(label_value(r#"a="x\"y",b="z""#, "a").as_deref(), Some("x\"y"));
    }

    /// One row: the step's minor, what was seen, whether it blocks and the start of the reason.
    #[test]
    fn removed_apis_block_a_step_to_the_minor_that_removed_them_or_later() {
        let requested = requested_deprecated_apis(METRICS);
        let helm = |api_version: &str, kind: &str| ApiInUse {
            api_version: api_version.into(),
            kind: kind.into(),
            seen_in: "Helm release kube-system/legacy".into(),
        };
        type Row = (
            &'static str,
            Vec<DeprecatedRequest>,
            Vec<ApiInUse>,
            bool,
            &'static str,
        );
        let rows: Vec<Row> = vec![
            (
                "1.21",
                requested.clone(),
                vec![],
                true,
                "no API removed by 1.21 in use",
            ),
            (
                "1.22",
                requested.clone(),
                vec![],
                false,
                "uses APIs Kubernetes 1.22 no longer serves: extensions/v1beta1 ingresses requested since the API server started (removed in 1.22)",
            ),
            (
                "1.25",
                requested.clone(),
                vec![],
                false,
                "uses APIs Kubernetes 1.25 no longer serves: extensions/v1beta1 ingresses requested since the API server started (removed in 1.22); policy/v1beta1 podsecuritypolicies",
            ),
            (
                "1.29",
                vec![],
                vec![helm("networking.k8s.io/v1", "Ingress")],
                true,
                "no API removed",
            ),
            (
                "1.29",
                vec![],
                vec![helm("flowcontrol.apiserver.k8s.io/v1beta2", "FlowSchema")],
                false,
                "uses APIs Kubernetes 1.29 no longer serves: flowcontrol.apiserver.k8s.io/v1beta2 FlowSchema in Helm release kube-system/legacy (removed in 1.29; use flowcontrol.apiserver.k8s.io/v1)",
            ),
            (
                "1.28",
                vec![],
                vec![helm("flowcontrol.apiserver.k8s.io/v1beta2", "FlowSchema")],
                true,
                "no API",
            ),
            (
                "1.25",
                vec![],
                vec![helm("policy/v1beta1", "PodSecurityPolicy")],
                false,
                "uses APIs Kubernetes 1.25 no longer serves: policy/v1beta1 PodSecurityPolicy in Helm release kube-system/legacy (removed in 1.25; no replacement)",
            ),
        ];
        for (to, requested, in_use, ok, reason) in rows {
            let verdict = removed_apis(k8s(to), &requested, &in_use);
            assert_eq!(verdict.check, REMOVED_APIS_CHECK);
            assert_eq!(verdict.ok, ok, "to {to}: {}", verdict.reason);
            assert!(verdict.reason.starts_with(reason), "to {to}: {}", verdict.reason);
        }
    }

    #[test]
    fn workers_are_read_at_their_spec_and_running_versions() {
        use capstan_stack::capi::{CapiVersion, StatusVersion, WorkersFields};
        let fields = |version: Option<&str>, running: &[(&str, Option<i64>)]| WorkersFields {
            version: CapiVersion::V1Beta2,
            kind: "MachineDeployment".into(),
            name: "md-0".into(),
            kubernetes_version: version.map(str::to_string),
            running: running
                .iter()
                .map(|(v, replicas)| StatusVersion {
                    version: v.to_string(),
                    replicas: *replicas,
                })
                .collect(),
        };
        let w = |name: &str, version: Option<&str>| Workers {
            name: name.into(),
            version: version.map(str::to_string),
        };
        let rows = [
            (
                fields(Some("v1.27.3"), &[]),
                vec![w("MachineDeployment md-0", Some("v1.27.3"))],
            ),
            // Its machines on the spec's version add nothing.
            (
                fields(Some("v1.27.3"), &[("v1.27.3", Some(3))]),
                vec![w("MachineDeployment md-0", Some("v1.27.3"))],
            ),
            // An upgrade under way: the machines still on older versions count too.
            (
                fields(
                    Some("v1.27.3"),
                    &[("v1.24.9", Some(2)), ("v1.25.0", Some(1)), ("v1.27.3", Some(1))],
                ),
                vec![
                    w("MachineDeployment md-0", Some("v1.27.3")),
                    w("MachineDeployment md-0 (2 machines)", Some("v1.24.9")),
                    w("MachineDeployment md-0 (1 machine)", Some("v1.25.0")),
                ],
            ),
            (
                fields(None, &[("v1.26.1", None)]),
                vec![
                    w("MachineDeployment md-0", None),
                    w("MachineDeployment md-0 (some machines)", Some("v1.26.1")),
                ],
            ),
        ];
        for (fields, want) in rows {
            assert_eq!(workers_of(&fields), want, "{fields:?}");
        }
        // The spec at the target, two machines three minors behind it: blocked for them.
        let verdict = version_skew(
            k8s("1.26"),
            k8s("1.27"),
            Some("v1.26.4"),
            &workers_of(&fields(Some("v1.27.3"), &[("v1.24.9", Some(2))])),
        );
        assert_eq!(
            verdict.reason,
            "MachineDeployment md-0 (2 machines) runs 1.24, 3 minors behind 1.27 (at most 2)"
        );
    }

    /// One row: the step, the control plane, the workers, and the reason ("" when ok).
    #[test]
    fn version_skew_rules() {
        let md = |version: Option<&str>| Workers {
            name: "MachineDeployment md-0".into(),
            version: version.map(str::to_string),
        };
        type Row = (
            &'static str,
            &'static str,
            Option<&'static str>,
            Vec<Workers>,
            &'static str,
        );
        let rows: Vec<Row> = vec![
            ("1.28", "1.29", Some("v1.28.4"), vec![md(Some("v1.28.4"))], ""),
            ("1.28", "1.29", Some("v1.28.4"), vec![md(Some("v1.26.1"))], ""),
            ("1.28", "1.29", Some("v1.28.4"), vec![md(None)], ""),
            (
                "1.28",
                "1.29",
                Some("v1.28.4"),
                vec![md(Some("v1.25.0"))],
                "MachineDeployment md-0 runs 1.25, 4 minors behind 1.29 (at most 3)",
            ),
            // Before 1.28 the kubelet may be two minors behind.
            (
                "1.26",
                "1.27",
                Some("v1.26.4"),
                vec![md(Some("v1.24.0"))],
                "MachineDeployment md-0 runs 1.24, 3 minors behind 1.27 (at most 2)",
            ),
            (
                "1.28",
                "1.29",
                Some("v1.27.9"),
                vec![],
                "the control plane runs 1.27, the step starts from 1.28",
            ),
            (
                "1.28",
                "1.29",
                None,
                vec![],
                "the control plane reports no version",
            ),
            (
                "1.28",
                "1.29",
                Some("v1.28.4"),
                vec![md(Some("v1.30.0"))],
                "MachineDeployment md-0 runs 1.30, newer than 1.29",
            ),
        ];
        for (from, to, control_plane, workers, reason) in rows {
            let verdict = version_skew(k8s(from), k8s(to), control_plane, &workers);
            assert_eq!(verdict.ok, reason.is_empty(), "{from}->{to}: {}", verdict.reason);
            assert_eq!(verdict.reason, reason, "{from}->{to}");
        }
    }

    #[test]
    fn a_step_is_blocked_by_any_failed_result() {
        let ok = PreflightResult {
            check: "A".into(),
            ok: true,
            reason: String::new(),
        };
        let bad = PreflightResult {
            check: "B".into(),
            ok: false,
            reason: "no".into(),
        };
        assert!(!blocks(std::slice::from_ref(&ok)));
        assert!(blocks(&[ok.clone(), bad.clone()]));
        assert_eq!(summary(&[ok, bad]), "B: no");
    }
}
