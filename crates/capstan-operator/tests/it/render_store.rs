//! The render-once store on a real API server: a process keeps the newest revision it read or
//! saved; without it, a pass reads the newest from the watch cache (cheap in a namespace of
//! many Secrets, possibly a moment late), so a save whose inputs the newest revision already
//! has must hand that revision back instead of adding one; a save that knows the newest
//! revision lists nothing, and one whose memory is behind finds the newer revision and adds
//! above it.

use capstan_operator::testing::store::{Owner, RenderStore};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

fn owner(namespace: &str) -> Owner {
    owner_with_uid(namespace, "3f1c0d6e-0000-4000-8000-000000000001")
}

fn owner_with_uid(namespace: &str, uid: &str) -> Owner {
    Owner {
        namespace: namespace.into(),
        short_kind: "caddon",
        name: "cluster-addon-stored".into(),
        reference: OwnerReference {
            api_version: "clusterstack.x-k8s.io/v1alpha1".into(),
            kind: "ClusterAddon".into(),
            name: "cluster-addon-stored".into(),
            uid: uid.into(),
            ..OwnerReference::default()
        },
    }
}

fn parts(text: &str) -> Vec<(String, String)> {
    vec![(
        "cluster-addon".into(),
        format!("---\nkind: ConfigMap\nmetadata:\n  name: {text}\n"),
    )]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_of_stored_inputs_returns_the_stored_revision() {
    let test = "a_save_of_stored_inputs_returns_the_stored_revision";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let cluster = TestCluster::shared_or_start(&bins, "render-store")
        .await
        .expect("test cluster");
    let store = RenderStore::new(cluster.client());
    let owner = owner(cluster.namespace());

    let first = store.save(&owner, "inputs-a", parts("a")).await.expect("saved");
    assert_eq!(first.revision, 1);
    // The same inputs again (a pass whose cached read had not seen revision 1 yet).
    let again = store.save(&owner, "inputs-a", parts("a")).await.expect("saved");
    assert_eq!(again, first, "a second revision for the same inputs");
    let second = store.save(&owner, "inputs-b", parts("b")).await.expect("saved");
    assert_eq!(second.revision, 2);

    assert_eq!(store.latest(&owner).await.expect("read"), Some(second.clone()));

    // Another process (no memory) reads it from the watch cache, which catches up within
    // moments.
    let other = RenderStore::new(cluster.client());
    let mut latest = None;
    for _ in 0..50 {
        latest = other.latest(&owner).await.expect("read");
        if latest.as_ref().is_some_and(|l| l.revision == 2) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(latest, Some(second));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_save_whose_memory_is_behind_adds_above_the_newest_and_keeps_three() {
    let test = "a_save_whose_memory_is_behind_adds_above_the_newest_and_keeps_three";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let audit = capstan_testenv::audit::AuditLog::new().expect("audit log");
    let cluster = TestCluster::start_with_args(&bins, "render-store-audited", &audit.apiserver_args())
        .await
        .expect("test cluster");
    let owner = owner_with_uid(cluster.namespace(), "3f1c0d6e-0000-4000-8000-000000000002");
    let secret_lists = || {
        audit
            .requests()
            .iter()
            .filter(|r| r.starts_with("list ") && r.contains("/secrets"))
            .count()
    };
    let (one, other) = (
        RenderStore::new(cluster.client()),
        RenderStore::new(cluster.client()),
    );
    assert_eq!(
        one.save(&owner, "a", parts("a")).await.expect("saved").revision,
        1
    );
    // Another process stores revision 2; the first still remembers 1 as the newest.
    assert_eq!(
        other.save(&owner, "b", parts("b")).await.expect("saved").revision,
        2
    );
    let third = one.save(&owner, "c", parts("c")).await.expect("saved");
    assert_eq!(
        third.revision, 3,
        "revision 2 taken: the save lists and adds above it"
    );
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let lists_before = secret_lists();
    assert!(lists_before > 0, "the audit log shows the listing saves");
    for (inputs, revision) in [("d", 4), ("e", 5)] {
        let saved = one.save(&owner, inputs, parts(inputs)).await.expect("saved");
        assert_eq!(saved.revision, revision);
    }
    // Knowing the newest revision, a save creates the next and deletes the oldest by name.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert_eq!(
        secret_lists(),
        lists_before,
        "a save that knew the newest revision listed"
    );
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(cluster.client(), cluster.namespace());
    let selector = format!(
        "{}={}",
        capstan_operator::testing::store::OWNER_LABEL,
        owner.reference.uid
    );
    let mut stored: Vec<String> = secrets
        .list(&kube::api::ListParams::default().labels(&selector))
        .await
        .expect("listed")
        .items
        .into_iter()
        .filter_map(|s| s.metadata.name)
        .collect();
    stored.sort();
    assert_eq!(
        stored,
        ["v3", "v4", "v5"].map(|v| format!("capstan.caddon.cluster-addon-stored.{v}")),
        "the newest three revisions are kept"
    );
    assert_eq!(
        one.latest(&owner).await.expect("read").map(|r| r.inputs),
        Some("e".to_string())
    );
}

/// A fleet's creation: every new ClusterAddon reads its render (none yet) and saves its first.
/// Knowing from that read that there is none, the save creates revision 1 without the quorum
/// list (which reads every Secret of the namespace from etcd: work growing with the square of
/// a fleet's Clusters); a revision stored meanwhile by another writer is still found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_save_after_a_read_that_found_none_lists_no_more() {
    let test = "a_first_save_after_a_read_that_found_none_lists_no_more";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let audit = capstan_testenv::audit::AuditLog::new().expect("audit log");
    let cluster = TestCluster::start_with_args(&bins, "render-store-first", &audit.apiserver_args())
        .await
        .expect("test cluster");
    let secret_lists = || async {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        audit
            .requests()
            .into_iter()
            .filter(|r| r.starts_with("list ") && r.contains("/secrets"))
            .collect::<Vec<_>>()
    };

    let store = RenderStore::new(cluster.client());
    let fresh = owner_with_uid(cluster.namespace(), "3f1c0d6e-0000-4000-8000-000000000003");
    assert_eq!(store.latest(&fresh).await.expect("read"), None);
    let first = store.save(&fresh, "a", parts("a")).await.expect("saved");
    assert_eq!(first.revision, 1);
    let lists = secret_lists().await;
    assert_eq!(lists.len(), 1, "the read's list only: {lists:?}");
    assert!(
        lists[0].contains("resourceVersion=0"),
        "the read lists from the watch cache: {lists:?}"
    );

    // Two processes read an owner's renders (none); one saves, then the other saves the same
    // inputs: it finds that revision instead of adding one; other inputs go above it.
    let mut raced = owner_with_uid(cluster.namespace(), "3f1c0d6e-0000-4000-8000-000000000004");
    raced.name = "cluster-addon-raced".into();
    let (one, other) = (
        RenderStore::new(cluster.client()),
        RenderStore::new(cluster.client()),
    );
    assert_eq!(one.latest(&raced).await.expect("read"), None);
    assert_eq!(other.latest(&raced).await.expect("read"), None);
    let stored = other.save(&raced, "b", parts("b")).await.expect("saved");
    assert_eq!(stored.revision, 1);
    assert_eq!(one.save(&raced, "b", parts("b")).await.expect("saved"), stored);
    assert_eq!(
        one.save(&raced, "c", parts("c")).await.expect("saved").revision,
        2
    );
}
