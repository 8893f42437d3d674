//! `capstan render --kubeconfig`: the chart's `lookup` answers from that cluster (a real API
//! server), as `helm install` would; without the flag it finds nothing, as `helm template`.

use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};

const TEMPLATE: &str = r#"{{- $existing := lookup "v1" "ConfigMap" .Release.Namespace "settings" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: echo
data:
  found: {{ if $existing }}{{ $existing.data.color | quote }}{{ else }}"none"{{ end }}
"#;

fn render(chart: &std::path::Path, extra: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_capstan"))
        .args(["render", "demo"])
        .arg(chart)
        .args(extra)
        .output()
        .expect("capstan runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookup_answers_from_the_given_cluster_only() {
    let test = "lookup_answers_from_the_given_cluster_only";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let cluster = TestCluster::shared_or_start(&bins, "lookup")
        .await
        .expect("cluster starts");
    let namespace = cluster.namespace().to_string();
    let settings: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "settings", "namespace": namespace},
        "data": {"color": "blue"}
    }))
    .expect("ConfigMap");
    Api::<ConfigMap>::namespaced(cluster.client(), &namespace)
        .create(&PostParams::default(), &settings)
        .await
        .expect("ConfigMap created");
    let chart = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        chart.path().join("Chart.yaml"),
        "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
    )
    .expect("Chart.yaml");
    std::fs::create_dir(chart.path().join("templates")).expect("templates");
    std::fs::write(chart.path().join("templates/cm.yaml"), TEMPLATE).expect("template");

    let kubeconfig = cluster.kubeconfig_path().display().to_string();
    let path = chart.path().to_path_buf();
    let (offline, online) = tokio::task::spawn_blocking(move || {
        (
            render(&path, &["-n", &namespace]),
            render(&path, &["--kubeconfig", &kubeconfig, "-n", &namespace]),
        )
    })
    .await
    .expect("renders");
    assert!(offline.contains("found: \"none\""), "{offline}");
    assert!(online.contains("found: \"blue\""), "{online}");
}
