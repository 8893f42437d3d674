//! capstan's Event recorder on a real API server: an Event with another message is another
//! Event (a ClusterAddon's "applied (14 objects)" after "applied (15 objects)" is not counted
//! as a repeat of it), and a repeat of the same message is a series of the first.

use capstan_operator::testing::events::{Event, EventType, Recorder, Reporter};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use k8s_openapi::api::events::v1::Event as KubeEvent;
use kube::Api;
use kube::api::{ListParams, PostParams};
use kube::{Resource, ResourceExt};
use serde_json::json;

fn ready(note: &str) -> Event {
    Event {
        type_: EventType::Normal,
        reason: "Ready".into(),
        note: Some(note.into()),
        action: "Apply".into(),
        secondary: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_with_other_messages_are_other_events() {
    let test = "events_with_other_messages_are_other_events";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let cluster = TestCluster::shared_or_start(&bins, "events")
        .await
        .expect("cluster starts");
    let client = cluster.client();
    let ns = cluster.namespace().to_string();
    let objects: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let mut refs: Vec<ObjectReference> = Vec::new();
    for name in ["cluster-addon-c1", "cluster-addon-c2"] {
        let object: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": name}})).expect("ConfigMap");
        let made = objects
            .create(&PostParams::default(), &object)
            .await
            .expect("create the regarded object");
        refs.push(made.object_ref(&()));
    }
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "capstan".into(),
            instance: None,
        },
    );
    for (object, note) in [
        (&refs[0], "2 addons of docker-ferrol-1-27-v1 applied (15 objects)"),
        (&refs[0], "2 addons of docker-ferrol-1-27-v2 applied (14 objects)"),
        (&refs[0], "2 addons of docker-ferrol-1-27-v2 applied (14 objects)"),
        (&refs[1], "2 addons of docker-ferrol-1-27-v2 applied (14 objects)"),
    ] {
        recorder
            .publish(&ready(note), object)
            .await
            .unwrap_or_else(|e| panic!("publishing {note:?}: {e}"));
    }

    let events: Api<KubeEvent> = Api::namespaced(client.clone(), &ns);
    let mut seen: Vec<(String, String, Option<i32>)> = events
        .list(&ListParams::default())
        .await
        .expect("list Events")
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some("Ready"))
        .map(|e| {
            (
                e.regarding
                    .as_ref()
                    .and_then(|r| r.name.clone())
                    .unwrap_or_default(),
                e.note.clone().unwrap_or_default(),
                e.series.as_ref().map(|s| s.count),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            (
                "cluster-addon-c1".to_string(),
                "2 addons of docker-ferrol-1-27-v1 applied (15 objects)".to_string(),
                None
            ),
            (
                "cluster-addon-c1".to_string(),
                "2 addons of docker-ferrol-1-27-v2 applied (14 objects)".to_string(),
                Some(2)
            ),
            (
                "cluster-addon-c2".to_string(),
                "2 addons of docker-ferrol-1-27-v2 applied (14 objects)".to_string(),
                None
            ),
        ],
        "Events: {:?}",
        events.list(&ListParams::default()).await.map(|l| l
            .items
            .iter()
            .map(|e| e.name_any())
            .collect::<Vec<_>>())
    );
}
