//! The render-once store on a real API server: a pass reads the newest revision from the
//! watch cache (cheap in a namespace of many Secrets, possibly a moment late), so a save whose
//! inputs the newest revision already has must hand that revision back instead of adding one.

use capstan_operator::store::{Owner, RenderStore};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

fn owner(namespace: &str) -> Owner {
    Owner {
        namespace: namespace.into(),
        short_kind: "caddon",
        name: "cluster-addon-stored".into(),
        reference: OwnerReference {
            api_version: "clusterstack.x-k8s.io/v1alpha1".into(),
            kind: "ClusterAddon".into(),
            name: "cluster-addon-stored".into(),
            uid: "3f1c0d6e-0000-4000-8000-000000000001".into(),
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

    // The cached read catches up within moments.
    let mut latest = None;
    for _ in 0..50 {
        latest = store.latest(&owner).await.expect("read");
        if latest.as_ref().is_some_and(|l| l.revision == 2) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(latest, Some(second));
}
