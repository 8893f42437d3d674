//! Issue 25 §2: an error the same inputs will repeat is terminal — not retried on the backoff
//! ladder, but after a change (or a long interval) — and the error counter names its kind.
//! A ClusterStack whose `spec.source.oci.repository` is no repository fails once (its
//! `SourceReady` condition says why) and is not reconciled again and again while nothing
//! changes; before, the backoff retried it after 2, 4, 8, … seconds.

use std::time::Duration;

use crate::operator_common::eventually;
use kube::api::PostParams;
use serde_json::json;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The value of the series `name` (with its labels) in a scrape.
fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_error_is_not_retried_in_a_loop() {
    let test = "a_terminal_error_is_not_retried_in_a_loop";
    let Some(env) = crate::operator_common::start_shared(test, &[]).await else {
        return;
    };
    let metrics_addr = format!("127.0.0.1:{}", free_port());
    let operator = env.operator(0, &["--metrics-addr", &metrics_addr]);
    let stack = serde_json::from_value(json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1",
        "kind": "ClusterStack",
        "metadata": {"name": "ferrol", "namespace": env.ns},
        "spec": {
            "provider": "docker", "name": "ferrol", "kubernetesVersion": "1.27",
            "channel": "stable", "autoSubscribe": true, "noProvider": true, "versions": [],
            "source": {"oci": {"repository": "no-repository-here"}},
        }
    }))
    .expect("ClusterStack");
    env.stacks()
        .create(&PostParams::default(), &stack)
        .await
        .expect("ClusterStack created");

    // The condition says why, with the source's own words.
    let message = eventually(
        "SourceReady false",
        Duration::from_secs(30),
        &operator,
        || async {
            let stack = env.stacks().get("ferrol").await.ok()?;
            let status = stack.status?;
            let condition = status.conditions.iter().find(|c| c.type_ == "SourceReady")?;
            (condition.reason == "ListFailed").then(|| condition.message.clone())
        },
    )
    .await;
    assert!(
        message.starts_with("spec.source.oci.repository: ") && message.contains("no-repository-here"),
        "{message}"
    );

    // Long enough for the backoff ladder (2 s, 4 s, 8 s) to retry three times.
    tokio::time::sleep(Duration::from_secs(16)).await;
    let scrape = reqwest::get(format!("http://{metrics_addr}/metrics"))
        .await
        .expect("metrics answer")
        .text()
        .await
        .expect("metrics text");
    let failed = metric(
        &scrape,
        r#"capstan_reconciles_total{controller="clusterstack",result="error"}"#,
    )
    .unwrap_or(0.0);
    // The first failure, and at most one more for the status it wrote (a watch event).
    assert!(
        (1.0..=2.0).contains(&failed),
        "{failed} failed reconciles\n{scrape}"
    );
    assert_eq!(
        metric(
            &scrape,
            r#"capstan_reconcile_errors_total{controller="clusterstack",error="source_config"}"#
        ),
        Some(failed),
        "{scrape}"
    );
    drop(operator);
}

/// Issue 45 §11: a release whose ClusterClass chart is not an archive fails, and its status
/// names the release and the file in it — not the temporary copy it was read from, which is
/// gone by the time anyone reads the message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_release_names_its_file_not_a_temporary_path() {
    let test = "a_failing_release_names_its_file_not_a_temporary_path";
    let Some(env) = crate::operator_common::start_shared(test, &[]).await else {
        return;
    };
    let tag = "docker-ferrol-1-27-v1";
    let broken = tempfile::tempdir().expect("temp dir");
    let dir = broken.path().join(tag);
    std::fs::create_dir(&dir).expect("release dir");
    for entry in std::fs::read_dir(env.releases.join(tag)).expect("shared release") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), dir.join(entry.file_name())).expect("copy");
    }
    let file = "docker-ferrol-1-27-cluster-class-v1.tgz";
    std::fs::write(dir.join(file), b"not a gzip archive").expect("break the chart");
    env.github
        .add_release_dir(crate::operator_common::REPO, &dir)
        .expect("publish the broken release");
    let operator = env.operator(0, &[]);
    env.create_stack(&["v1"], "1m").await;

    let messages = eventually(
        "the release's failure in its status",
        Duration::from_secs(60),
        &operator,
        || async {
            let release = env.releases().get(tag).await.ok()?;
            let messages: Vec<String> = release
                .status?
                .conditions
                .iter()
                .filter(|c| !c.is_true())
                .map(|c| c.message.clone())
                .filter(|m| m.contains(file))
                .collect();
            (!messages.is_empty()).then_some(messages)
        },
    )
    .await;
    let temp = std::env::temp_dir().display().to_string();
    for message in &messages {
        assert!(message.contains(&format!("{tag}/{file}")), "{message}");
        assert!(!message.contains(&temp), "names a temporary path: {message}");
    }
    drop(operator);
}
