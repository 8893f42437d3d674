//! The install chart's monitoring parts checked by the real Prometheus (Debian's `prometheus`
//! package, `scripts/install-test-deps.sh`): `promtool check rules` on the rendered
//! PrometheusRule, `promtool test rules` with a unit test per alert
//! (testdata/monitoring/alerts_test.yaml), and a Prometheus on loopback scraping a running
//! operator that manages a small fleet, through whose HTTP API every dashboard panel's query
//! returns data. Without Prometheus the tests print why and pass (fail under CI=true).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::operator_common::eventually;

fn repo_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// `promtool`'s and `prometheus`' paths, or `None` after printing why the test skips.
fn prometheus_or_skip(test: &str) -> Option<(PathBuf, PathBuf)> {
    let find = |name: &str| -> Option<PathBuf> {
        std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    };
    match (find("promtool"), find("prometheus")) {
        (Some(promtool), Some(prometheus)) => Some((promtool, prometheus)),
        _ => {
            capstan_testenv::skip_or_fail(
                test,
                "prometheus/promtool not installed (scripts/install-test-deps.sh installs Debian's prometheus)",
            );
            None
        }
    }
}

/// The chart's objects rendered with `--set` `values`.
fn render(values: &[&str]) -> Vec<Value> {
    let args: Vec<String> = values.iter().map(|v| format!("--set={v}")).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    crate::install_chart::render(&args)
}

fn of_kind<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

/// The dashboard's queries, with the title of their panel.
fn dashboard_queries() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo_path("deploy/capstan/dashboards/capstan-fleet.json"))
        .expect("dashboard JSON");
    let dashboard: Value = serde_json::from_str(&text).expect("dashboard is JSON");
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().expect("targets") {
            out.push((
                panel["title"].as_str().unwrap_or_default().to_string(),
                target["expr"].as_str().expect("expr").to_string(),
            ));
        }
    }
    out
}

#[test]
fn monitoring_parts_are_off_by_default_and_render_when_enabled() {
    let plain = render(&[]);
    for kind in ["ServiceMonitor", "PodMonitor", "PrometheusRule"] {
        assert!(of_kind(&plain, kind).is_empty(), "{kind} rendered by default");
    }
    assert!(
        of_kind(&plain, "ConfigMap")
            .iter()
            .all(|c| c["metadata"]["labels"]["grafana_dashboard"].is_null()),
        "dashboard ConfigMap rendered by default"
    );

    let all = render(&[
        "monitoring.serviceMonitor.enabled=true",
        "monitoring.podMonitor.enabled=true",
        "monitoring.prometheusRule.enabled=true",
        "monitoring.dashboards.enabled=true",
    ]);
    let monitor = of_kind(&all, "ServiceMonitor");
    assert_eq!(monitor.len(), 1);
    assert_eq!(monitor[0]["spec"]["endpoints"][0]["port"], "metrics");
    let metrics_service = of_kind(&all, "Service")
        .into_iter()
        .find(|s| s["metadata"]["name"] == "capstan-metrics")
        .expect("metrics Service");
    assert_eq!(
        metrics_service["spec"]["selector"],
        monitor[0]["spec"]["selector"]["matchLabels"]
    );
    // The Service's target port is a port the operator's container declares.
    let deployment = of_kind(&all, "Deployment")[0];
    let ports = &deployment["spec"]["template"]["spec"]["containers"][0]["ports"];
    assert!(
        ports
            .as_array()
            .expect("ports")
            .iter()
            .any(|p| p["name"] == "metrics"),
        "{ports}"
    );
    assert_eq!(of_kind(&all, "PodMonitor").len(), 1);
    assert_eq!(of_kind(&all, "PrometheusRule").len(), 1);
    let dashboards: Vec<&Value> = of_kind(&all, "ConfigMap")
        .into_iter()
        .filter(|c| c["metadata"]["labels"]["grafana_dashboard"] == "1")
        .collect();
    assert_eq!(dashboards.len(), 1);
    let shipped: Value = serde_json::from_str(
        dashboards[0]["data"]["capstan-fleet.json"]
            .as_str()
            .expect("dashboard data"),
    )
    .expect("the ConfigMap's dashboard is JSON");
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_path("deploy/capstan/dashboards/capstan-fleet.json")).expect("file"),
    )
    .expect("JSON");
    assert_eq!(shipped, file);
}

/// Writes the rendered rule groups into `dir/rules.yaml` (JSON is YAML) and returns the alert
/// names.
fn write_rules(dir: &Path) -> Vec<String> {
    let all = render(&["monitoring.prometheusRule.enabled=true"]);
    let rule = of_kind(&all, "PrometheusRule")[0];
    let groups = json!({"groups": rule["spec"]["groups"]});
    std::fs::write(dir.join("rules.yaml"), groups.to_string()).expect("write rules");
    rule["spec"]["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
        .filter_map(|r| r["alert"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn promtool_checks_and_unit_tests_every_alert() {
    let test = "promtool_checks_and_unit_tests_every_alert";
    let Some((promtool, _)) = prometheus_or_skip(test) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let alerts = write_rules(dir.path());
    assert_eq!(
        alerts,
        [
            "CapstanAddonNotReady",
            "CapstanNewestReleaseFailing",
            "CapstanReconcileErrorsRising",
            "CapstanWorkloadClusterUnreachable",
            "CapstanNoLeader"
        ]
    );
    let check = Command::new(&promtool)
        .args(["check", "rules", "rules.yaml"])
        .current_dir(dir.path())
        .output()
        .expect("run promtool check rules");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(check.status.success(), "promtool check rules:\n{said}");
    assert!(said.contains("SUCCESS: 5 rules found"), "{said}");

    // Every alert has a unit test.
    let tests =
        std::fs::read_to_string(repo_path("testdata/monitoring/alerts_test.yaml")).expect("unit tests");
    for alert in &alerts {
        assert!(
            tests.contains(&format!("alertname: {alert}\n")),
            "no unit test for {alert}"
        );
    }
    std::fs::write(dir.path().join("alerts_test.yaml"), tests).expect("copy unit tests");
    let run = Command::new(&promtool)
        .args(["test", "rules", "alerts_test.yaml"])
        .current_dir(dir.path())
        .output()
        .expect("run promtool test rules");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.status.success(), "promtool test rules:\n{said}");
    assert!(said.contains("SUCCESS"), "{said}");
}

/// A free TCP port on loopback.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `text` for a URL's query string (RFC 3986 unreserved characters kept).
fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The label sets of the series a query returns now (an error text when Prometheus refused it).
async fn query_series(
    http: &reqwest::Client,
    base: &str,
    expr: &str,
) -> Result<Vec<serde_json::Map<String, Value>>, String> {
    let url = format!("{base}/api/v1/query?query={}", url_encode(expr));
    let body = http
        .get(&url)
        .send()
        .await
        .map_err(|e| e.to_string())?
        .text()
        .await
        .map_err(|e| e.to_string())?;
    let answer: Value = serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
    if answer["status"] != "success" {
        return Err(answer.to_string());
    }
    Ok(answer["data"]["result"]
        .as_array()
        .map(|series| {
            series
                .iter()
                .map(|s| s["metric"].as_object().cloned().unwrap_or_default())
                .collect()
        })
        .unwrap_or_default())
}

/// How many series a query returns now.
async fn query(http: &reqwest::Client, base: &str, expr: &str) -> Result<usize, String> {
    query_series(http, base, expr).await.map(|s| s.len())
}

/// `expr` with every `capstan_` metric name misspelt.
fn misspelt(expr: &str) -> String {
    expr.replace("capstan_", "capstan_misspelt_")
}

/// The label names the operator's exposition gives the series of `family`.
fn exported_labels(exposition: &str, family: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for line in exposition.lines().filter(|l| l.starts_with(family)) {
        let Some(open) = line.find('{') else {
            continue;
        };
        let Some(close) = line.rfind('}') else {
            continue;
        };
        for pair in line[open + 1..close].split(',') {
            if let Some((name, _)) = pair.split_once('=') {
                names.insert(name.to_string());
            }
        }
    }
    names
}

/// What is wrong with a panel's series: a label-less series beside labelled ones (a phantom
/// `or vector(0)`), or a label neither the operator's metrics nor the scrape (`job`,
/// `instance`) give.
fn phantom_or_foreign(
    series: &[serde_json::Map<String, Value>],
    allowed: &std::collections::BTreeSet<String>,
) -> Option<String> {
    if series.len() > 1 && series.iter().any(serde_json::Map::is_empty) {
        return Some(format!("a series without labels beside {series:?}"));
    }
    series
        .iter()
        .flat_map(|s| s.keys())
        .find(|name| {
            !allowed.contains(*name) && !["__name__", "job", "instance", "le"].contains(&name.as_str())
        })
        .map(|name| format!("label {name:?} the operator does not export, in {series:?}"))
}

/// Counters whose label values are known only when they first count (the kind of a reconcile
/// error, the status class of an OCI response): exported from then on, which
/// `metrics::tests::encode_has_the_series_recorded` checks; this fleet has neither, and a
/// panel reading only these shows no data rather than a zero of a series without labels.
const CREATED_ON_FIRST_EVENT: [&str; 2] = ["capstan_reconcile_errors", "capstan_oci_requests"];

/// The `capstan_*` metric names a query reads (a histogram's `_bucket` and a counter's
/// `_total` named by their family).
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("capstan_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let name = &tail[..end];
        let family = name
            .strip_suffix("_bucket")
            .or_else(|| name.strip_suffix("_total"))
            .unwrap_or(name);
        names.push(family.to_string());
        rest = &tail[end..];
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_answers_every_dashboard_query_for_a_running_fleet() {
    let test = "prometheus_answers_every_dashboard_query_for_a_running_fleet";
    let Some((_, prometheus)) = prometheus_or_skip(test) else {
        return;
    };
    let Some(env) = crate::operator_common::start(test, &["docker-ferrol-1-27-v1"]).await else {
        return;
    };
    let Some(bins) = capstan_testenv::Binaries::find_or_skip(test) else {
        return;
    };
    let workload = capstan_testenv::TestCluster::start(&bins, "workload")
        .await
        .expect("workload cluster starts");
    let metrics_port = free_port();
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    let operator = env.operator(0, &["--metrics-addr", &metrics_addr]);
    env.create_stack(&["v1"], "5s").await;
    let class = "docker-ferrol-1-27-v1";
    eventually("v1 ready", Duration::from_secs(90), &operator, || async {
        (env.ready_releases().await == [class]).then_some(())
    })
    .await;
    // A fleet in three states: addons ready, waiting for a control plane, and on a workload
    // cluster that does not answer.
    env.cluster_api("ready", class, "cp.ready.example", &workload, false)
        .await;
    env.cluster_api("waiting", class, "cp.waiting.example", &workload, true)
        .await;
    env.cluster_api("gone", class, "cp.gone.example", &workload, true)
        .await;
    env.set_control_plane_ready("gone").await;
    let gone = capstan_testenv::TestCluster::start(&bins, "gone")
        .await
        .expect("a cluster to lose");
    env.write_kubeconfig("gone", &gone).await;
    drop(gone);
    env.wait_applied("ready", class, &operator, Duration::from_secs(90))
        .await;

    // The same fleet as `capstan get` shows it (the README's "Watching a fleet").
    let kubeconfig = env.cluster.kubeconfig_path().display().to_string();
    let get = Command::new(env!("CARGO_BIN_EXE_capstan"))
        .args([
            "get",
            "addons",
            "-n",
            crate::operator_common::NS,
            "--kubeconfig",
            &kubeconfig,
        ])
        .env("NO_COLOR", "1")
        .output()
        .expect("capstan get addons");
    let table = String::from_utf8_lossy(&get.stdout).into_owned();
    eprintln!("$ capstan get addons\n{table}");
    let ready = table
        .lines()
        .find(|l| l.starts_with("ready "))
        .expect("the ready Cluster's row");
    assert!(ready.contains(" True "), "{table}");
    let waiting = table
        .lines()
        .find(|l| l.starts_with("waiting "))
        .expect("the waiting Cluster's row");
    assert!(
        waiting.contains("status.controlPlaneReady is not true"),
        "{table}"
    );

    // Prometheus on loopback, scraping the operator every second.
    let dir = tempfile::tempdir().expect("temp dir");
    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: capstan\n    static_configs:\n      - targets: ['{metrics_addr}']\n"
    );
    std::fs::write(dir.path().join("prometheus.yml"), config).expect("write config");
    let web_port = free_port();
    let args: Vec<String> = vec![
        format!("--config.file={}", dir.path().join("prometheus.yml").display()),
        format!("--storage.tsdb.path={}", dir.path().join("data").display()),
        format!("--web.listen-address=127.0.0.1:{web_port}"),
    ];
    let _prometheus = capstan_testenv::ChildGuard::spawn_with_env(
        "prometheus",
        &prometheus,
        &args,
        &[],
        &dir.path().join("prometheus.log"),
    )
    .expect("prometheus starts");
    let base = format!("http://127.0.0.1:{web_port}");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("HTTP client");

    // No panel reads a metric the operator does not export.
    let exported = http
        .get(format!("http://{metrics_addr}/metrics"))
        .send()
        .await
        .expect("scrape the operator")
        .text()
        .await
        .expect("metrics text");
    let queries = dashboard_queries();
    for (panel, expr) in &queries {
        for name in metric_names(expr) {
            assert!(
                exported.contains(&format!("# TYPE {name} "))
                    || CREATED_ON_FIRST_EVENT.contains(&name.as_str()),
                "panel {panel:?} reads {name}, which the operator does not export:\n{exported}"
            );
        }
    }

    // Every query returns data once a few scrapes are in (rates need two samples), but one
    // reading only counters not counted yet. Each panel's series carry the operator's labels
    // (the ones it groups by): no phantom series without labels beside them.
    let mut missing: Vec<String> = Vec::new();
    for _ in 0..90 {
        missing.clear();
        // Read again each time: a counter's labels appear when it first counts.
        let exported = http
            .get(format!("http://{metrics_addr}/metrics"))
            .send()
            .await
            .expect("scrape the operator")
            .text()
            .await
            .expect("metrics text");
        for (panel, expr) in &queries {
            let names = metric_names(expr);
            let optional = names.iter().all(|n| CREATED_ON_FIRST_EVENT.contains(&n.as_str()));
            let allowed = names.iter().flat_map(|n| exported_labels(&exported, n)).collect();
            match query_series(&http, &base, expr).await {
                Ok(series) if series.is_empty() && !optional => {
                    missing.push(format!("{panel}: {expr} (no data)"))
                }
                Ok(series) => {
                    if let Some(wrong) = phantom_or_foreign(&series, &allowed) {
                        missing.push(format!("{panel}: {expr}: {wrong}"));
                    }
                }
                Err(e) => missing.push(format!("{panel}: {expr}: {e}")),
            }
        }
        if missing.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert!(
        missing.is_empty(),
        "queries without data or with foreign series:\n{}",
        missing.join("\n")
    );
    // A query of metrics the operator does not export answers nothing, not a zero.
    for (panel, expr) in &queries {
        let wrong = misspelt(expr);
        assert_eq!(
            query(&http, &base, &wrong).await,
            Ok(0),
            "panel {panel:?} answers a misspelt query: {wrong}"
        );
    }
    assert_eq!(
        query(
            &http,
            &base,
            "capstan_cluster_addon_workload_reachable{cluster=\"gone\"} == 0"
        )
        .await,
        Ok(1),
        "the lost workload cluster is reported unreachable"
    );
    assert_eq!(
        query(
            &http,
            &base,
            "capstan_cluster_addon_ready{cluster=\"ready\"} == 1"
        )
        .await,
        Ok(1)
    );
}

#[test]
fn metric_names_are_read_from_queries() {
    assert_eq!(
        metric_names(
            "histogram_quantile(0.5, sum by (le) (rate(capstan_reconcile_duration_seconds_bucket[5m]))) + capstan_leader"
        ),
        ["capstan_reconcile_duration_seconds", "capstan_leader"]
    );
    assert_eq!(
        misspelt("sum(capstan_a) or on (x) capstan_b"),
        "sum(capstan_misspelt_a) or on (x) capstan_misspelt_b"
    );
    let allowed = ["controller".to_string()].into_iter().collect();
    let labelled = |pairs: &[(&str, &str)]| -> serde_json::Map<String, Value> {
        pairs.iter().map(|(k, v)| (k.to_string(), json!(v))).collect()
    };
    let real = labelled(&[("controller", "clusteraddon")]);
    assert_eq!(phantom_or_foreign(std::slice::from_ref(&real), &allowed), None);
    assert_eq!(phantom_or_foreign(&[labelled(&[])], &allowed), None);
    assert!(phantom_or_foreign(&[real.clone(), labelled(&[])], &allowed).is_some());
    assert!(phantom_or_foreign(&[labelled(&[("pod", "x")])], &allowed).is_some());
    assert_eq!(
        exported_labels(
            "capstan_reconciles_total{controller=\"a\",result=\"success\"} 1\ncapstan_leader 1\n",
            "capstan_reconciles"
        ),
        ["controller".to_string(), "result".to_string()]
            .into_iter()
            .collect()
    );
    assert_eq!(url_encode("a b{c=\"d\"}"), "a%20b%7Bc%3D%22d%22%7D");
}
