//! `capstan operator` end to end on a real API server (CAPI v1.6.0 CRDs, and v1.14.0-rc.1's
//! serving only v1beta2) with the fake GitHub
//! serving the shared docker-ferrol-1-27 releases: a ClusterStack subscribes, its releases'
//! ClusterClasses are applied, a release published later is picked up within one interval, a
//! release no longer wanted is deleted and its objects pruned (unless a Cluster uses it), and
//! drift of an applied ClusterClass is corrected.

use std::time::Duration;

use crate::operator_common::{eventually, names};
use capstan_stack::capi::CapiVersion;
use kube::api::{Api, DeleteParams, Patch, PatchParams};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribe_apply_upgrade_prune_and_correct_drift() {
    scenario(
        "subscribe_apply_upgrade_prune_and_correct_drift",
        CapiVersion::V1Beta1,
    )
    .await;
}

/// The same on Cluster API v1.14's CRDs serving only v1beta2 (v1.16): the releases' v1beta1
/// ClusterClass charts are applied converted (issue 47), their ClusterClasses stored as
/// v1beta2 with `templateRef`s, and drift of those corrected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribe_apply_upgrade_prune_and_correct_drift_on_v1beta2() {
    scenario(
        "subscribe_apply_upgrade_prune_and_correct_drift_on_v1beta2",
        CapiVersion::V1Beta2,
    )
    .await;
}

async fn scenario(test: &str, capi: CapiVersion) {
    let Some(env) =
        crate::operator_common::start_for(test, &["docker-ferrol-1-27-v1", "docker-ferrol-1-27-v2"], capi)
            .await
    else {
        return;
    };
    let metrics_port = free_port();
    let health_port = free_port();
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    let health_addr = format!("127.0.0.1:{health_port}");
    let operator = env.operator(
        0,
        &[
            "--metrics-addr",
            &metrics_addr,
            "--health-addr",
            &health_addr,
            "--leader-elect",
            "--leader-election-namespace",
            &env.ns,
        ],
    );
    eventually(
        "/readyz answers ok",
        Duration::from_secs(30),
        &operator,
        || async {
            let answer = reqwest::get(format!("http://{health_addr}/readyz")).await.ok()?;
            (answer.status() == 200).then_some(())
        },
    )
    .await;
    env.create_stack(&["v1"], "2s").await;

    // The latest (v2) and the spec's v1 are created, applied and reported usable.
    let want = names(&["docker-ferrol-1-27-v1", "docker-ferrol-1-27-v2"]);
    eventually("v1 and v2 ready", Duration::from_secs(90), &operator, || async {
        (env.ready_releases().await == want).then_some(())
    })
    .await;
    assert_eq!(env.class_names().await, want);
    let stack = eventually(
        "the stack's status",
        Duration::from_secs(30),
        &operator,
        || async {
            let stack = env.stacks().get("ferrol").await.ok()?;
            let status = stack.status.clone()?;
            (status.usable_versions.as_deref() == Some("v1, v2")).then_some(stack)
        },
    )
    .await;
    let status = stack.status.expect("status");
    assert_eq!(status.latest_release.as_deref(), Some("docker-ferrol-1-27-v2"));
    assert_eq!(status.summary.len(), 2, "{:?}", status.summary);
    let release = env.releases().get("docker-ferrol-1-27-v2").await.expect("v2");
    let release_status = release.status.expect("release status");
    assert_eq!(release_status.kubernetes_version.as_deref(), Some("v1.27.3"));
    assert!(
        release_status
            .resources
            .iter()
            .any(|r| r.kind == "ClusterClass" && r.name == "docker-ferrol-1-27-v2" && r.status == "synced"),
        "{:?}",
        release_status.resources
    );
    assert!(release_status.resources.iter().all(|r| r.status == "synced"));
    let class = env
        .classes()
        .get("docker-ferrol-1-27-v2")
        .await
        .expect("ClusterClass");
    let stored = serde_json::to_value(&class).expect("JSON");
    assert_eq!(stored["apiVersion"], capi.api_version());
    if capi == CapiVersion::V1Beta2 {
        assert_eq!(
            stored["spec"]["controlPlane"]["templateRef"]["apiVersion"],
            "controlplane.cluster.x-k8s.io/v1beta2",
            "{stored}"
        );
        assert_eq!(
            stored["spec"]["workers"]["machineDeployments"][0]["bootstrap"]["templateRef"]["kind"],
            "KubeadmConfigTemplate",
            "{stored}"
        );
        let templates = env.dynamic_in(
            &env.ns,
            "controlplane.cluster.x-k8s.io",
            "v1beta2",
            "KubeadmControlPlaneTemplate",
        );
        let template = templates
            .list(&Default::default())
            .await
            .expect("KubeadmControlPlaneTemplates");
        assert!(
            !template.items.is_empty(),
            "the control plane templates applied as v1beta2"
        );
        let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(env.client(), &env.ns);
        let converted = events
            .list(&Default::default())
            .await
            .expect("events")
            .items
            .into_iter()
            .any(|e| e.reason.as_deref() == Some("ConvertedToV1beta2"));
        assert!(converted, "a ConvertedToV1beta2 Event");
    }

    // A Cluster on v1 keeps v1 even when the spec no longer asks for it.
    env.create_cluster("workload", "docker-ferrol-1-27-v1").await;
    env.stacks()
        .patch(
            "ferrol",
            &PatchParams::default(),
            &Patch::Merge(&serde_json::json!({"spec": {"versions": []}})),
        )
        .await
        .expect("spec.versions emptied");

    // v3 published later: picked up within the interval; v2 (neither latest, latest ready,
    // wanted nor used) goes with its ClusterClass; v1 stays for its Cluster.
    env.publish("docker-ferrol-1-27-v3");
    let want = names(&["docker-ferrol-1-27-v1", "docker-ferrol-1-27-v3"]);
    eventually(
        "v3 applied and v2 pruned",
        Duration::from_secs(90),
        &operator,
        || async {
            (env.ready_releases().await == want
                && env.release_names().await == want
                && env.class_names().await == want)
                .then_some(())
        },
    )
    .await;

    // Drift: a deleted ClusterClass comes back, an edited one is restored.
    env.classes()
        .delete("docker-ferrol-1-27-v3", &DeleteParams::default())
        .await
        .expect("ClusterClass deleted");
    eventually(
        "the deleted ClusterClass restored",
        Duration::from_secs(30),
        &operator,
        || async { env.classes().get("docker-ferrol-1-27-v3").await.ok().map(drop) },
    )
    .await;
    let reference = match capi {
        CapiVersion::V1Beta1 => "ref",
        CapiVersion::V1Beta2 => "templateRef",
    };
    let path = format!("/spec/controlPlane/{reference}/name");
    let path = path.as_str();
    let original = env.classes().get("docker-ferrol-1-27-v3").await.expect("class");
    let original_value = original
        .data
        .pointer(path)
        .cloned()
        .expect("controlPlane ref name");
    env.classes()
        .patch(
            "docker-ferrol-1-27-v3",
            &PatchParams::default(),
            &Patch::Merge(&serde_json::json!({"spec": {"controlPlane": {reference: {"name": "edited"}}}})),
        )
        .await
        .expect("ClusterClass edited");
    eventually(
        "the edited ClusterClass restored",
        Duration::from_secs(30),
        &operator,
        || async {
            let class = env.classes().get("docker-ferrol-1-27-v3").await.ok()?;
            (class.data.pointer(path) == Some(&original_value)).then_some(())
        },
    )
    .await;

    // Both corrections show in the metrics and as Events of the release.
    let metrics = eventually(
        "drift corrections in the metrics",
        Duration::from_secs(10),
        &operator,
        || async {
            let text = reqwest::get(format!("http://{metrics_addr}/metrics"))
                .await
                .ok()?
                .text()
                .await
                .ok()?;
            let corrected = metric(
                &text,
                "capstan_drift_corrections_total{controller=\"clusterstackrelease\"}",
            )?;
            (corrected >= 2.0).then_some(text)
        },
    )
    .await;
    assert!(
        metric(
            &metrics,
            "capstan_reconciles_total{controller=\"clusterstack\",result=\"success\"}"
        )
        .is_some_and(|n| n >= 1.0),
        "{metrics}"
    );
    assert!(
        metric(
            &metrics,
            "capstan_objects_total{controller=\"clusterstackrelease\",outcome=\"pruned\"}"
        )
        .is_some_and(|n| n >= 5.0),
        "{metrics}"
    );
    assert!(
        metric(&metrics, "capstan_github_requests_total{code=\"2xx\"}").is_some_and(|n| n >= 1.0),
        "{metrics}"
    );
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(env.client(), &env.ns);
    let drift_events: Vec<String> = events
        .list(&Default::default())
        .await
        .expect("list events")
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("DriftCorrected"))
        .filter_map(|e| e.note)
        .collect();
    assert!(
        drift_events.iter().any(|n| n.contains(&format!(
            "ClusterClass.cluster.x-k8s.io/{}/docker-ferrol-1-27-v3",
            env.ns
        ))),
        "{drift_events:?}"
    );

    // The Cluster goes: v1 is no longer used, so it is deleted and pruned.
    env.clusters()
        .delete("workload", &DeleteParams::default())
        .await
        .expect("Cluster deleted");
    let want = names(&["docker-ferrol-1-27-v3"]);
    eventually(
        "v1 pruned once unused",
        Duration::from_secs(60),
        &operator,
        || async { (env.release_names().await == want && env.class_names().await == want).then_some(()) },
    )
    .await;
    if let Ok(dir) = std::env::var("CAPSTAN_KEEP_LOGS") {
        let _ = std::fs::copy(
            env.logs.path().join("operator-0.log"),
            std::path::Path::new(&dir).join("operator-e2e.log"),
        );
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The value of the series `name` (with its labels, as written) in a metrics text.
fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
}
