//! `capstan get` and `capstan describe` against a real API server: fixture ClusterStacks,
//! ClusterStackReleases and ClusterAddons in every state (ready, waiting on a stage condition,
//! failed, drifting, on an unreachable cluster) are created with their status written through
//! the status subresource, as the operator writes it; the binary's tables are compared cell by
//! cell with the expected ones (ages, which depend on the clock, only checked to be ages).

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use base64::Engine;
use capstan_operator::api::{self, ClusterAddon, ClusterStack, ClusterStackRelease};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::core::v1::{ConfigMap, Event, Secret};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const NS: &str = "fleet";

/// `capstan ARGS --kubeconfig` of `cluster`, printed (also used by `get_cli_forms`).
pub(crate) fn capstan(cluster: &TestCluster, args: &[&str]) -> Output {
    let kubeconfig = cluster.kubeconfig_path().to_str().expect("utf-8 path");
    run(&[args, &["--kubeconfig", kubeconfig]].concat())
}

/// `capstan ARGS` without colour, its output printed.
pub(crate) fn run(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_capstan"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run capstan");
    eprintln!(
        "$ capstan {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A table's cells (columns are at least two spaces apart; no cell holds two spaces), the
/// cells of the `aged` columns replaced by `<age>` when they read as an age.
fn cells(table: &str, aged: &[&str]) -> Vec<Vec<String>> {
    let split = |line: &str| -> Vec<String> {
        line.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut lines = table.lines();
    let header = split(lines.next().unwrap_or_default());
    let masked: Vec<usize> = header
        .iter()
        .enumerate()
        .filter(|(_, h)| aged.contains(&h.as_str()))
        .map(|(i, _)| i)
        .collect();
    let is_age = |c: &str| {
        !c.is_empty()
            && c.chars().next().is_some_and(|ch| ch.is_ascii_digit())
            && c.chars().all(|ch| ch.is_ascii_digit() || "smhdy".contains(ch))
    };
    let mut rows = vec![header];
    for line in lines {
        let mut row = split(line);
        for i in &masked {
            if let Some(c) = row.get_mut(*i)
                && is_age(c)
            {
                *c = "<age>".into();
            }
        }
        rows.push(row);
    }
    rows
}

fn grid(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| r.iter().map(|c| c.to_string()).collect())
        .collect()
}

/// Creates `object` and writes its `status` through the status subresource.
pub(crate) async fn create<K>(api: &Api<K>, object: Value, status: Value)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let object: K = serde_json::from_value(object).expect("fixture object");
    let created = api
        .create(&PostParams::default(), &object)
        .await
        .expect("created");
    let name = kube::ResourceExt::name_any(&created);
    api.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(&json!({ "status": status })),
    )
    .await
    .expect("status written");
}

fn ready_condition(status: &str, reason: &str, message: &str) -> Value {
    let mut condition = json!({"type": "Ready", "status": status, "reason": reason,
                               "lastTransitionTime": "2026-01-01T00:00:00Z"});
    if !message.is_empty() {
        condition["message"] = json!(message);
    }
    json!([condition])
}

fn resource(kind: &str, name: &str, synced: bool, error: &str) -> Value {
    let mut r = json!({"version": "v1", "kind": kind, "namespace": NS, "name": name,
                       "status": if synced { "synced" } else { "not-synced" }});
    if !error.is_empty() {
        r["error"] = json!(error);
    }
    r
}

fn addon(cluster: &str, wanted: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterAddon",
        "metadata": {"name": format!("cluster-addon-{cluster}"), "namespace": NS, "labels": labels},
        "spec": {"clusterStack": wanted, "clusterRef": {"kind": "Cluster", "name": cluster, "namespace": NS}}
    })
}

async fn kubeconfig_secret(client: &kube::Client, cluster: &str, kubeconfig: &str) {
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": format!("{cluster}-kubeconfig"), "namespace": NS,
                     "labels": {"cluster.x-k8s.io/cluster-name": cluster}},
        "data": {"value": base64::engine::general_purpose::STANDARD.encode(kubeconfig)},
    }))
    .expect("Secret");
    Api::<Secret>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &secret)
        .await
        .expect("kubeconfig Secret created");
}

/// The fleet: one stack, two releases (v1 ready, v2 failing), five addons.
async fn fixtures(cluster: &TestCluster) {
    let client = cluster.client();
    cluster.create_namespace(NS).await.expect("namespace created");
    let stacks: Api<ClusterStack> = Api::namespaced(client.clone(), NS);
    create(
        &stacks,
        json!({"apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterStack",
               "metadata": {"name": "ferrol", "namespace": NS},
               "spec": {"provider": "docker", "name": "ferrol", "kubernetesVersion": "1.27",
                        "versions": ["v1"], "addonValues": "cni:\n  mtu: 1400\n",
                        "source": {"github": {"owner": "example", "repo": "stacks"}}}}),
        json!({"latestRelease": "docker-ferrol-1-27-v2", "usableVersions": "v1",
               "conditions": ready_condition("False", "ReleasesNotReady",
                   "release docker-ferrol-1-27-v2: downloading: GET https://github.example/x: 503")}),
    )
    .await;
    let releases: Api<ClusterStackRelease> = Api::namespaced(client.clone(), NS);
    create(
        &releases,
        json!({"apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterStackRelease",
               "metadata": {"name": "docker-ferrol-1-27-v1", "namespace": NS}, "spec": {}}),
        json!({"ready": true, "kubernetesVersion": "v1.27.3",
               "resources": [resource("ConfigMap", "class", true, "")],
               "conditions": ready_condition("True", "Succeeded", "")}),
    )
    .await;
    create(
        &releases,
        json!({"apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterStackRelease",
               "metadata": {"name": "docker-ferrol-1-27-v2", "namespace": NS}, "spec": {}}),
        json!({"ready": false,
               "conditions": ready_condition("False", "DownloadFailed",
                   "downloading: GET https://github.example/x: 503")}),
    )
    .await;

    let addons: Api<ClusterAddon> = Api::namespaced(client.clone(), NS);
    let v1 = "docker-ferrol-1-27-v1";
    let synced = json!([
        resource("ConfigMap", "present", true, ""),
        resource("ConfigMap", "absent", true, "")
    ]);
    create(
        &addons,
        addon("c-ready", v1, json!({"state": "ready"})),
        json!({"ready": true, "appliedClusterStack": v1, "resources": synced,
               "lastReconciled": "2026-01-01T00:00:00Z",
               "conditions": ready_condition("True", "Succeeded", "")}),
    )
    .await;
    create(
        &addons,
        addon("c-staged", "docker-ferrol-1-27-v2", json!({})),
        json!({"ready": false, "appliedClusterStack": v1,
               "resources": [resource("ConfigMap", "crds", true, "")],
               "stages": [{"name": "crds", "action": "apply", "phase": "done"},
                          {"name": "cni", "action": "apply", "phase": "waitingForPostCondition"}],
               "stagesFor": "BeforeClusterUpgrade docker-ferrol-1-27-v2",
               "conditions": ready_condition("False", "StageWaiting",
                   "stage cni: waiting for its post-condition")}),
    )
    .await;
    create(
        &addons,
        addon("c-failed", v1, json!({})),
        json!({"ready": false, "appliedClusterStack": v1,
               "resources": [resource("ConfigMap", "good", true, ""),
                             resource("ConfigMap", "bad", false, "admission webhook denied the request")],
               "conditions": ready_condition("False", "ApplyFailed",
                   "1 of 2 object(s) failed: v1/ConfigMap/fleet/bad: admission webhook denied the request")}),
    )
    .await;
    create(
        &addons,
        addon("c-drift", v1, json!({"state": "ready"})),
        json!({"ready": true, "appliedClusterStack": v1, "resources": synced,
               "conditions": ready_condition("True", "Succeeded", "")}),
    )
    .await;
    create(
        &addons,
        addon("c-unreachable", v1, json!({})),
        json!({"ready": false, "appliedClusterStack": v1, "resources": synced,
               "conditions": ready_condition("False", "ClusterNotReady",
                   "the workload API server https://127.0.0.1:1 is not ready")}),
    )
    .await;

    // The drifting addon's correction, as the operator reports it.
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let event: Event = serde_json::from_value(json!({
        "metadata": {"name": "cluster-addon-c-drift.drift", "namespace": NS},
        "involvedObject": {"apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterAddon",
                           "name": "cluster-addon-c-drift", "namespace": NS},
        "reason": "DriftCorrected", "type": "Normal",
        "message": "restored 1 drifted object(s): v1/ConfigMap/fleet/present",
        "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        "source": {"component": "capstan"}
    }))
    .expect("Event");
    Api::<Event>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &event)
        .await
        .expect("Event created");

    // c-ready's workload cluster is this API server: `present` exists, `absent` does not.
    let kubeconfig = std::fs::read_to_string(cluster.kubeconfig_path()).expect("kubeconfig");
    kubeconfig_secret(&client, "c-ready", &kubeconfig).await;
    kubeconfig_secret(
        &client,
        "c-unreachable",
        &kubeconfig.replace(cluster.server_url(), "https://127.0.0.1:1"),
    )
    .await;
    let present: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "present", "namespace": NS}})).expect("ConfigMap");
    Api::<ConfigMap>::namespaced(client, NS)
        .create(&PostParams::default(), &present)
        .await
        .expect("ConfigMap created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_shows_a_fleet_in_every_state() {
    let test = "get_shows_a_fleet_in_every_state";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let cluster = TestCluster::start(&bins, "get-cli")
        .await
        .expect("cluster starts");
    let crds = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        crds.path().join("capstan.yaml"),
        api::crds_yaml().expect("CRD YAML"),
    )
    .expect("write CRDs");
    capstan_testenv::install_crds(&cluster.client(), crds.path())
        .await
        .expect("capstan CRDs install");
    fixtures(&cluster).await;

    // Addons: one line per Cluster, sorted by Cluster.
    let out = capstan(&cluster, &["get", "addons", "-n", NS]);
    assert!(out.status.success());
    assert_eq!(
        cells(&stdout(&out), &["DRIFT", "AGE"]),
        grid(&[
            &[
                "CLUSTER", "STACK", "RELEASE", "STAGE", "READY", "OBJECTS", "DRIFT", "AGE", "MESSAGE"
            ],
            &[
                "c-drift",
                "docker-ferrol-1-27",
                "v1",
                "-",
                "True",
                "2/2",
                "<age>",
                "<age>",
                "Succeeded"
            ],
            &[
                "c-failed",
                "docker-ferrol-1-27",
                "v1",
                "-",
                "False",
                "1/2",
                "-",
                "<age>",
                "1 of 2 object(s) failed: v1/ConfigMap/fleet/bad: admission webhook denied the r…"
            ],
            &[
                "c-ready",
                "docker-ferrol-1-27",
                "v1",
                "-",
                "True",
                "2/2",
                "-",
                "<age>",
                "Succeeded"
            ],
            &[
                "c-staged",
                "docker-ferrol-1-27",
                "v1→v2",
                "2/2:cni:waitingForPostCondition",
                "False",
                "1/1",
                "-",
                "<age>",
                "stage cni: waiting for its post-condition"
            ],
            &[
                "c-unreachable",
                "docker-ferrol-1-27",
                "v1",
                "-",
                "False",
                "2/2",
                "-",
                "<age>",
                "the workload API server https://127.0.0.1:1 is not ready"
            ],
        ])
    );
    // The columns line up: every row's cells start where the header's do.
    let text = stdout(&out);
    let header = text.lines().next().unwrap_or_default();
    let at = header.find("READY").expect("READY column");
    for line in text.lines().skip(1) {
        let cell = &line[line.char_indices().nth(at).map_or(0, |(i, _)| i)..];
        assert!(
            cell.starts_with("True") || cell.starts_with("False"),
            "READY misaligned in {line:?}"
        );
    }

    // -o json: the documented fields, all namespaces.
    let out = capstan(&cluster, &["get", "addons", "-A", "-o", "json"]);
    assert!(out.status.success());
    let json: Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    assert_eq!(json["kind"], "AddonList");
    let items = json["items"].as_array().expect("items");
    assert_eq!(items.len(), 5);
    let staged = items
        .iter()
        .find(|i| i["cluster"] == "c-staged")
        .expect("c-staged");
    assert_eq!(
        staged["release"],
        json!({"applied": "docker-ferrol-1-27-v1", "wanted": "docker-ferrol-1-27-v2"})
    );
    assert_eq!(staged["stage"]["phase"], "waitingForPostCondition");
    assert_eq!(staged["ready"]["reason"], "StageWaiting");
    let drift = items.iter().find(|i| i["cluster"] == "c-drift").expect("c-drift");
    assert!(drift["lastDriftCorrection"].is_string(), "{drift}");

    // --fail-not-ready: non-zero while anything listed is not ready; a selector narrows.
    let out = capstan(&cluster, &["get", "addons", "-n", NS, "--fail-not-ready"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("3 of 5 ClusterAddons not ready"));
    let out = capstan(
        &cluster,
        &["get", "addons", "-n", NS, "-l", "state=ready", "--fail-not-ready"],
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out).lines().count(), 3, "header and two ready addons");

    // Stacks and releases.
    let out = capstan(&cluster, &["get", "stacks", "-n", NS]);
    assert_eq!(
        cells(&stdout(&out), &["AGE"]),
        grid(&[
            &[
                "NAME", "STACK", "CHANNEL", "LATEST", "USABLE", "SOURCE", "READY", "AGE", "MESSAGE"
            ],
            &[
                "ferrol",
                "docker-ferrol-1-27",
                "stable",
                "v2",
                "v1",
                "github:example/stacks",
                "False",
                "<age>",
                "release docker-ferrol-1-27-v2: downloading: GET https://github.example/x: 503"
            ],
        ])
    );
    let out = capstan(&cluster, &["get", "releases", "-n", NS]);
    assert_eq!(
        cells(&stdout(&out), &["AGE"]),
        grid(&[
            &["NAME", "K8S", "READY", "OBJECTS", "CLUSTERS", "AGE", "MESSAGE"],
            &[
                "docker-ferrol-1-27-v1",
                "v1.27.3",
                "True",
                "1/1",
                "5",
                "<age>",
                "Succeeded"
            ],
            &[
                "docker-ferrol-1-27-v2",
                "-",
                "False",
                "0/0",
                "0",
                "<age>",
                "downloading: GET https://github.example/x: 503"
            ],
        ])
    );

    // One addon in full: health from its workload cluster (this API server).
    let out = capstan(&cluster, &["get", "addon", "c-ready", "-n", NS]);
    assert!(out.status.success());
    let text = stdout(&out);
    let objects = text
        .split("Objects:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .expect("objects table");
    assert_eq!(
        cells(objects, &[]),
        grid(&[
            &["GROUP", "KIND", "NAMESPACE", "NAME", "SYNC", "HEALTH", "MESSAGE"],
            &["-", "ConfigMap", "fleet", "present", "Synced", "Healthy", "-"],
            &["-", "ConfigMap", "fleet", "absent", "Synced", "Missing", "-"],
        ])
    );
    assert!(
        text.contains("  Values:      the release's, then (later wins):\n    1. ClusterStack fleet/ferrol spec.addonValues\n"),
        "{text}"
    );

    // describe: the unreachable cluster's objects are of unknown health, and why.
    let out = capstan(&cluster, &["describe", "addon", "c-unreachable", "-n", NS]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(
        text.contains("Objects:\n  health unknown: the workload API server https://127.0.0.1:1 is not ready"),
        "{text}"
    );
    assert!(text.contains("present   Synced   Unknown"), "{text}");
    // describe: stages and the drift Event.
    let text = stdout(&capstan(&cluster, &["describe", "addon", "c-staged", "-n", NS]));
    assert!(
        text.contains("Stages (BeforeClusterUpgrade docker-ferrol-1-27-v2):"),
        "{text}"
    );
    assert!(
        text.contains("2   cni     apply    waitingForPostCondition"),
        "{text}"
    );
    let text = stdout(&capstan(&cluster, &["describe", "addon", "c-drift", "-n", NS]));
    assert!(
        text.contains(
            "Normal   DriftCorrected   1       restored 1 drifted object(s): v1/ConfigMap/fleet/present"
        ),
        "{text}"
    );
    let out = capstan(&cluster, &["describe", "addon", "nope", "-n", NS]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no ClusterAddon for Cluster nope in namespace fleet")
    );

    // kubectl alone: the API server's table of ClusterAddons (what `kubectl get caddon`
    // prints) has the printer columns, with the applied release.
    let request = http::Request::get(format!(
        "/apis/clusterstack.x-k8s.io/v1alpha1/namespaces/{NS}/clusteraddons"
    ))
    .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
    .body(Vec::new())
    .expect("request");
    let table: Value = cluster.client().request(request).await.expect("Table");
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter(|c| c["priority"].as_i64().unwrap_or(0) == 0)
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        columns,
        [
            "Name",
            "Cluster",
            "ClusterStack",
            "Applied",
            "Ready",
            "Age",
            "Reason",
            "Message"
        ]
    );
    let staged = table["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["cells"][0] == "cluster-addon-c-staged")
        .expect("c-staged row");
    assert_eq!(staged["cells"][2], "docker-ferrol-1-27-v2");
    assert_eq!(staged["cells"][3], "docker-ferrol-1-27-v1");

    // -w: a status change prints the addon's row again.
    let kubeconfig = cluster
        .kubeconfig_path()
        .to_str()
        .expect("utf-8 path")
        .to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_capstan"))
        .args(["get", "addons", "-n", NS, "-w", "--kubeconfig", &kubeconfig])
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .spawn()
        .expect("capstan get -w");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in lines.by_ref().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // The initial table (header and five rows) first.
    for _ in 0..6 {
        rx.recv_timeout(Duration::from_secs(30)).expect("initial table");
    }
    let addons: Api<ClusterAddon> = Api::namespaced(cluster.client(), NS);
    addons
        .patch_status(
            "cluster-addon-c-failed",
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"ready": true,
                "resources": [resource("ConfigMap", "good", true, ""), resource("ConfigMap", "bad", true, "")],
                "conditions": ready_condition("True", "Succeeded", "")}})),
        )
        .await
        .expect("status patched");
    let changed = loop {
        let line = rx.recv_timeout(Duration::from_secs(30)).expect("a watched row");
        if line.starts_with("c-failed") && line.contains("True") {
            break line;
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(changed.contains(" 2/2 "), "{changed}");
}

/// Issue 45 §6: the operator labels each ClusterAddon with its Cluster's name (one made before
/// it did gets the label too), and `get addons -l` selects by the Cluster's labels or that one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_addons_selects_by_the_clusters_labels() {
    let test = "get_addons_selects_by_the_clusters_labels";
    let Some(env) = crate::operator_common::start_shared(test, &[]).await else {
        return;
    };
    let class = "docker-ferrol-1-27-v1";
    let ns = env.ns.clone();
    // A ClusterAddon from before the label, for `old`.
    let addons: Api<ClusterAddon> = Api::namespaced(env.client(), &ns);
    let old: ClusterAddon = serde_json::from_value(json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterAddon",
        "metadata": {"name": "cluster-addon-old", "namespace": ns},
        "spec": {"clusterStack": class, "clusterRef": {"kind": "Cluster", "name": "old", "namespace": ns}}
    }))
    .expect("ClusterAddon");
    addons
        .create(&PostParams::default(), &old)
        .await
        .expect("old ClusterAddon created");
    for (name, labels) in [
        ("canary", json!({"ring": "canary"})),
        ("main", json!({"ring": "main"})),
        ("old", json!({})),
    ] {
        let cluster: kube::api::DynamicObject = serde_json::from_value(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"topology": {"class": class, "version": "v1.27.3"}},
        }))
        .expect("Cluster");
        env.clusters()
            .create(&PostParams::default(), &cluster)
            .await
            .expect("Cluster created");
    }
    let operator = env.operator(0, &[]);
    crate::operator_common::eventually(
        "every ClusterAddon labelled with its Cluster's name",
        Duration::from_secs(60),
        &operator,
        || async {
            let list = addons.list(&Default::default()).await.ok()?;
            let mut labelled: Vec<(String, String)> = list
                .items
                .iter()
                .filter_map(|a| {
                    let label = kube::ResourceExt::labels(a).get("cluster.x-k8s.io/cluster-name")?;
                    Some((kube::ResourceExt::name_any(a), label.clone()))
                })
                .collect();
            labelled.sort();
            (labelled
                == [
                    ("cluster-addon-canary".to_string(), "canary".to_string()),
                    ("cluster-addon-main".to_string(), "main".to_string()),
                    ("cluster-addon-old".to_string(), "old".to_string()),
                ])
            .then_some(())
        },
    )
    .await;
    drop(operator);

    let clusters_of = |selector: &str| {
        let out = capstan(
            &env.cluster,
            &["get", "addons", "-n", &ns, "-l", selector, "-o", "json"],
        );
        assert!(out.status.success(), "-l {selector}");
        let list: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let mut clusters: Vec<String> = list["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|i| i["cluster"].as_str().unwrap_or_default().to_string())
            .collect();
        clusters.sort();
        clusters
    };
    assert_eq!(clusters_of("ring=canary"), ["canary"]);
    assert_eq!(clusters_of("ring in (canary,main)"), ["canary", "main"]);
    assert_eq!(clusters_of("ring!=canary"), ["main", "old"]);
    assert_eq!(clusters_of("cluster.x-k8s.io/cluster-name=main"), ["main"]);
    assert_eq!(clusters_of("cluster.x-k8s.io/cluster-name=old"), ["old"]);
    assert_eq!(
        clusters_of("cluster.x-k8s.io/cluster-name in (old,canary),ring"),
        ["canary"]
    );
    assert!(clusters_of("ring=none").is_empty());
    // A selector that is not one is refused with its requirement named.
    let out = capstan(&env.cluster, &["get", "addons", "-n", &ns, "-l", "ring in (a"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unbalanced parentheses"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
