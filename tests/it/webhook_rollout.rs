//! The ClusterStackRollout webhook through the real API server: the operator's webhook server
//! runs in the test process (`webhook::serve_with`, a generated CA), a
//! ValidatingWebhookConfiguration points the API server at it, and rollouts are created with
//! `kubectl`'s request. Each rule of issue 33 refuses what cannot work, with the webhook's
//! reason in the API server's answer (empty waves: the CRD's schema already refuses them);
//! a good rollout passes; a `from` that finds no stack to move from passes with a warning.

use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::operator_common::NS;
use capstan_operator::api::ClusterStack;
use capstan_operator::api::rollout::ClusterStackRollout;
use capstan_operator::testing::webhook::admission::Hook;

fn rollout(name: &str, spec: serde_json::Value) -> ClusterStackRollout {
    serde_json::from_value(json!({
        "apiVersion": "capstan.dev/v1alpha1", "kind": "ClusterStackRollout",
        "metadata": {"name": name, "namespace": NS},
        "spec": spec,
    }))
    .expect("ClusterStackRollout")
}

/// What the API server answers to creating `rollout`: `Ok` or the refusal's message.
async fn create(api: &Api<ClusterStackRollout>, rollout: &ClusterStackRollout) -> Result<(), String> {
    match api.create(&PostParams::default(), rollout).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) => Err(status.message),
        Err(e) => panic!("creating a rollout: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_server_refuses_rollouts_that_cannot_work_through_the_webhook() {
    let test = "the_api_server_refuses_rollouts_that_cannot_work_through_the_webhook";
    let Some(env) = crate::operator_common::start(test, &[]).await else {
        return;
    };
    let client = env.client();

    // The webhook server, and the API server told to ask it about rollouts.
    let cert = capstan_operator::testing::webhook::generate(&[]).expect("webhook certificate");
    let ca = base64::engine::general_purpose::STANDARD.encode(&cert.ca_pem);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("webhook port");
    let port = listener.local_addr().expect("address").port();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(capstan_operator::testing::webhook::serve_with(
        listener,
        capstan_operator::testing::webhook::Certificate::Generated(cert),
        client.clone(),
        async move {
            let _ = stopped.await;
        },
    ));
    let configuration: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": "capstan-rollouts"},
        "webhooks": [{
            "name": "clusterstackrollout.capstan.dev",
            "clientConfig": {"url": format!("https://127.0.0.1:{port}{}", Hook::ClusterStackRollout.path()),
                             "caBundle": ca},
            "rules": [{"apiGroups": ["capstan.dev"], "apiVersions": ["v1alpha1"],
                       "resources": ["clusterstackrollouts"], "operations": ["CREATE", "UPDATE"]}],
            "failurePolicy": "Fail", "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "timeoutSeconds": 10,
        }],
    }))
    .expect("ValidatingWebhookConfiguration");
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .create(&PostParams::default(), &configuration)
        .await
        .expect("webhook configured");

    // The stack: v1 wanted in its spec (no operator runs, so no release exists).
    let stack: ClusterStack = serde_json::from_value(json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterStack",
        "metadata": {"name": "ferrol", "namespace": NS},
        "spec": {"provider": "docker", "name": "ferrol", "kubernetesVersion": "1.27",
                 "channel": "stable", "autoSubscribe": false, "versions": ["v1"]},
    }))
    .expect("ClusterStack");
    Api::<ClusterStack>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &stack)
        .await
        .expect("ClusterStack created");

    let api: Api<ClusterStackRollout> = Api::namespaced(client.clone(), NS);
    let wave = json!([{"name": "all"}]);
    // The API server picks the configuration up within a moment: until the webhook answers,
    // an unknown stack is let through (and deleted again).
    let probe = rollout("probe", json!({"clusterStack": "nope", "waves": wave}));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match create(&api, &probe).await {
            Err(message) if message.contains("denied the request") => break,
            Err(message) => panic!("refused, but not by the webhook: {message}"),
            Ok(()) => {
                api.delete("probe", &Default::default())
                    .await
                    .expect("probe deleted");
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "the webhook was never asked"
                );
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }

    let cases = [
        (
            "unknown stack",
            json!({"clusterStack": "nope", "waves": wave}),
            format!("spec.clusterStack: ClusterStack {NS}/nope does not exist"),
        ),
        (
            "a version that does not exist",
            json!({"clusterStack": "ferrol", "version": "v9", "waves": wave}),
            "spec.version: ".to_string(),
        ),
        (
            "maxInFlight 0",
            json!({"clusterStack": "ferrol", "waves": [{"name": "all", "maxInFlight": 0}]}),
            "spec.waves[0].maxInFlight: ".to_string(),
        ),
        (
            "maxInFlight 0%",
            json!({"clusterStack": "ferrol", "waves": [{"name": "all", "maxInFlight": "0%"}]}),
            "spec.waves[0].maxInFlight: ".to_string(),
        ),
        (
            "a bad CEL condition",
            json!({"clusterStack": "ferrol", "waves": wave,
                   "health": {"checks": [{"conditions": "marker.data.state =="}]}}),
            "spec.health.checks[0].conditions: ".to_string(),
        ),
    ];
    for (what, spec, reason) in &cases {
        let message = create(&api, &rollout("bad", spec.clone())).await.expect_err(what);
        assert!(
            message.contains("denied the request") && message.contains(reason.as_str()),
            "{what}: {message}"
        );
    }

    // A `from` that finds no ClusterStack to move from is admitted with a warning (kubectl
    // prints it): `auto` finds none below 1.27 here, and a named stack does not exist (yet).
    for (from, warning) in [
        (
            json!("auto"),
            "spec.from: auto finds no ClusterStack of provider docker, name ferrol below Kubernetes 1.27 in the namespace",
        ),
        (
            json!(["ferrol-1-26"]),
            "spec.from: no ClusterStack ferrol-1-26 in the namespace",
        ),
    ] {
        let across = rollout(
            "across",
            json!({"clusterStack": "ferrol", "from": from, "waves": wave}),
        );
        let request = http::Request::post(format!(
            "/apis/capstan.dev/v1alpha1/namespaces/{NS}/clusterstackrollouts"
        ))
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&across).expect("JSON"))
        .expect("request");
        let response = client
            .send(request.map(Into::into))
            .await
            .expect("the API server answers");
        assert!(response.status().is_success(), "{from}: {}", response.status());
        let warnings: Vec<String> = response
            .headers()
            .get_all("warning")
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).to_string())
            .collect();
        assert!(
            warnings.iter().any(|w| w.contains(warning)),
            "{from}: {warnings:?}"
        );
        api.delete("across", &Default::default()).await.expect("deleted");
    }

    // A rollout that can work passes; a second one for the same Clusters does not.
    let good = json!({"clusterStack": "ferrol", "version": "v1", "waves": wave});
    create(&api, &rollout("good", good.clone()))
        .await
        .expect("a good rollout is admitted");
    let message = create(&api, &rollout("second", good))
        .await
        .expect_err("a second rollout of the stack");
    assert!(
        message.contains(&format!("ClusterStackRollout {NS}/good already rolls out ferrol")),
        "{message}"
    );

    // No waves: the CRD's schema (`minItems: 1`) refuses before the webhook is asked.
    let message = create(
        &api,
        &rollout("bad", json!({"clusterStack": "ferrol", "waves": []})),
    )
    .await
    .expect_err("empty waves");
    assert!(
        message.contains("spec.waves") && message.contains("at least 1 items"),
        "{message}"
    );

    let _ = stop.send(());
    let _ = server.await;
}
