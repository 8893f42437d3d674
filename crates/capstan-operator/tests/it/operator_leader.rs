//! Leader election on a real API server: of two contenders only one leads; a released Lease
//! passes to the other within seconds; a leader that stops renewing (a crash) is replaced once
//! its Lease expires; a leader whose Lease was taken hears it through `lost()`.

use std::time::{Duration, Instant};

use capstan_operator::settings::LeaderElection;
use capstan_operator::testing::leader::{self, Leadership};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};

const LEASE: &str = "capstan-leader-test";
const LEASE_SECONDS: u64 = 3;

/// The Lease's namespace: the kubeconfig's (`default`, or the test's on the shared server).
fn settings(client: &Client, identity: &str) -> LeaderElection {
    LeaderElection {
        namespace: client.default_namespace().into(),
        lease_name: LEASE.into(),
        identity: identity.into(),
        lease_duration: Duration::from_secs(LEASE_SECONDS),
    }
}

async fn holder(client: &Client) -> Option<String> {
    let lease = Api::<Lease>::default_namespaced(client.clone())
        .get(LEASE)
        .await
        .expect("read the Lease");
    lease.spec.and_then(|s| s.holder_identity)
}

fn contend(client: &Client, identity: &str) -> tokio::task::JoinHandle<Leadership> {
    let (client, settings) = (client.clone(), settings(client, identity));
    tokio::spawn(async move {
        leader::acquire(client, &settings)
            .await
            .expect("leader election runs")
    })
}

async fn leads_within(task: tokio::task::JoinHandle<Leadership>, limit: Duration, who: &str) -> Leadership {
    tokio::time::timeout(limit, task)
        .await
        .unwrap_or_else(|_| panic!("{who} did not lead within {limit:?}"))
        .expect("contender task")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_release_and_expiry_hand_over() {
    let test = "one_leader_release_and_expiry_hand_over";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let cluster = TestCluster::shared_or_start(&bins, "leader")
        .await
        .expect("test cluster");
    let client = cluster.client();

    // `a` leads (the Lease is created); `b` waits while `a` renews, over more than a lease.
    let a = leads_within(contend(&client, "a"), Duration::from_secs(10), "a").await;
    assert!(a.is_leading());
    let b = contend(&client, "b");
    tokio::time::sleep(Duration::from_secs(2 * LEASE_SECONDS)).await;
    assert!(!b.is_finished(), "b leads while a renews");
    assert_eq!(holder(&client).await.as_deref(), Some("a"));

    // A released Lease passes to `b` within a few seconds.
    let released = Instant::now();
    a.release().await;
    let b = leads_within(b, Duration::from_secs(LEASE_SECONDS + 3), "b after a released").await;
    eprintln!("b led {:?} after a released", released.elapsed());
    assert_eq!(holder(&client).await.as_deref(), Some("b"));

    // `b` stops renewing without releasing (a crash): the Lease stays b's until it expires,
    // then `c` takes over.
    let c = contend(&client, "c");
    tokio::time::sleep(Duration::from_secs(2 * LEASE_SECONDS)).await;
    assert!(!c.is_finished(), "c leads while b renews");
    drop(b);
    let dropped = Instant::now();
    assert_eq!(
        holder(&client).await.as_deref(),
        Some("b"),
        "a dropped leader does not release"
    );
    let mut c = leads_within(c, Duration::from_secs(3 * LEASE_SECONDS + 3), "c after b stopped").await;
    let took = dropped.elapsed();
    eprintln!("c led {took:?} after b stopped renewing");
    assert!(
        took >= Duration::from_millis(500),
        "c took over before b's lease expired ({took:?})"
    );
    assert_eq!(holder(&client).await.as_deref(), Some("c"));

    // Someone else writes the Lease (as another replica would after a partition): `c` hears
    // that it lost.
    let mut spec = Api::<Lease>::default_namespaced(client.clone())
        .get(LEASE)
        .await
        .expect("read the Lease")
        .spec
        .expect("Lease spec");
    spec.holder_identity = Some("intruder".into());
    spec.renew_time = Some(MicroTime(k8s_openapi::jiff::Timestamp::now()));
    spec.lease_duration_seconds = Some(60);
    Api::<Lease>::default_namespaced(client.clone())
        .patch(
            LEASE,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "spec": spec })),
        )
        .await
        .expect("take the Lease over");
    tokio::time::timeout(Duration::from_secs(2 * LEASE_SECONDS + 2), c.lost())
        .await
        .expect("c hears that it lost the Lease");
    assert!(!c.is_leading());
    // Releasing a Lease another holds leaves it alone.
    c.release().await;
    assert_eq!(holder(&client).await.as_deref(), Some("intruder"));
}
