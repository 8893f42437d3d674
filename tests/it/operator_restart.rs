//! Restart safety of `capstan operator`: it is killed (SIGKILL) at random points while it
//! subscribes to a stack, applies two releases, picks up a third published meanwhile and
//! prunes the one no longer wanted. After the last restart it converges to the same state as
//! an uninterrupted run, and nothing recorded complete is done again: a release whose
//! `Downloaded` condition was recorded is not downloaded again, a stored render is not
//! rendered again (every release keeps revision 1), and an object recorded applied is not
//! rewritten (its resourceVersion stays).
//!
//! `CAPSTAN_OPERATOR_KILLS=N` sets the number of kills (default 5, what CI runs);
//! `scripts/fault-operator.sh` runs 20. `CAPSTAN_OPERATOR_SEED=S` repeats a run's kill points.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::operator_common::{Env, REPO, eventually, names};
use capstan_operator::api::conditions;
use capstan_operator::testing::store;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};

/// What was first seen recorded complete, to compare later observations against.
#[derive(Default)]
struct Recorded {
    /// Release → asset downloads of its files when `Downloaded` was first seen true.
    downloads: BTreeMap<String, u64>,
    /// Release → (kind/name → resourceVersion) when its apply was first seen recorded.
    applied: BTreeMap<String, BTreeMap<String, String>>,
}

fn downloads_of(env: &Env, tag: &str) -> u64 {
    let counts = env.github.counts();
    env.github
        .asset_ids(REPO, tag)
        .iter()
        .map(|id| counts.downloads_by_asset.get(id).copied().unwrap_or(0))
        .sum()
}

async fn resource_versions(
    env: &Env,
    release: &capstan_operator::api::ClusterStackRelease,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for r in &release.status.as_ref().expect("status").resources {
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(&r.group, &r.version, &r.kind));
        let api: Api<DynamicObject> = Api::namespaced_with(env.client(), &r.namespace, &resource);
        if let Ok(object) = api.get(&r.name).await {
            out.insert(
                format!("{}/{}", r.kind, r.name),
                object.metadata.resource_version.unwrap_or_default(),
            );
        }
    }
    out
}

/// Checks the invariants against what was recorded before, and records what is new.
async fn observe(env: &Env, recorded: &mut Recorded, when: &str) {
    let releases = env
        .releases()
        .list(&ListParams::default())
        .await
        .expect("list releases");
    for release in &releases.items {
        let name = release.metadata.name.clone().expect("name");
        if release.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let Some(status) = &release.status else { continue };
        if conditions::is_true(&status.conditions, "Downloaded") {
            let now = downloads_of(env, &name);
            let first = *recorded.downloads.entry(name.clone()).or_insert(now);
            assert_eq!(
                now, first,
                "{when}: {name} was downloaded again after its download was recorded complete"
            );
        }
        if status.applied_inputs.is_some() {
            let now = resource_versions(env, release).await;
            match recorded.applied.get(&name) {
                None => {
                    recorded.applied.insert(name.clone(), now);
                }
                Some(first) => {
                    for (object, version) in first {
                        if let Some(current) = now.get(object) {
                            assert_eq!(
                                current, version,
                                "{when}: {name}: {object} was written again after its apply was recorded complete"
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Every stored render revision of the namespace, as (owner uid, revision).
async fn stored_revisions(env: &Env) -> Vec<(String, String)> {
    let secrets: Api<Secret> = Api::namespaced(env.client(), &env.ns);
    let list = secrets
        .list(&ListParams::default().labels(store::OWNER_LABEL))
        .await
        .expect("list render Secrets");
    list.items
        .iter()
        .map(|s| {
            let labels = s.metadata.labels.clone().unwrap_or_default();
            (
                labels.get(store::OWNER_LABEL).cloned().unwrap_or_default(),
                labels.get(store::REVISION_LABEL).cloned().unwrap_or_default(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_points_converges_without_repeating_recorded_work() {
    let test = "sigkill_at_random_points_converges_without_repeating_recorded_work";
    let (kills, mut rng) = crate::operator_common::kill_plan(test);
    let Some(env) =
        crate::operator_common::start_shared(test, &["docker-ferrol-1-27-v1", "docker-ferrol-1-27-v2"]).await
    else {
        return;
    };
    env.create_stack(&["v1"], "1s").await;
    let mut recorded = Recorded::default();
    for kill in 0..kills {
        if kill == kills / 2 {
            env.publish("docker-ferrol-1-27-v3");
        }
        let mut operator = env.operator(kill, &[]);
        let wait = 300 + rng.below(2500);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        if let Some(exit) = operator.exited() {
            panic!("the operator died by itself: {exit}\n{}", operator.log_tail(40));
        }
        operator.kill();
        observe(&env, &mut recorded, &format!("after kill {kill} at {wait} ms")).await;
    }
    if kills < 2 {
        env.publish("docker-ferrol-1-27-v3");
    }

    // The last run converges: v3 (latest) and v1 (in spec) ready, v2 and its objects gone.
    let operator = env.operator(kills, &[]);
    let want = names(&["docker-ferrol-1-27-v1", "docker-ferrol-1-27-v3"]);
    eventually(
        "convergence after the kills",
        Duration::from_secs(120),
        &operator,
        || async {
            (env.ready_releases().await == want
                && env.release_names().await == want
                && env.class_names().await == want)
                .then_some(())
        },
    )
    .await;
    eventually(
        "the stack's status",
        Duration::from_secs(30),
        &operator,
        || async {
            let stack = env.stacks().get("ferrol").await.ok()?;
            (stack.status?.usable_versions.as_deref() == Some("v1, v3")).then_some(())
        },
    )
    .await;
    observe(&env, &mut recorded, "after convergence").await;
    for tag in &want {
        assert!(
            recorded.downloads.contains_key(tag),
            "{tag}: Downloaded never seen"
        );
        // Files identical to another release's are not downloaded again (the cache is
        // content-addressed); a download a kill cut short may be repeated, one recorded
        // complete may not (checked above).
        assert!(downloads_of(&env, tag) > 0, "{tag}: nothing downloaded");
    }
    let revisions = stored_revisions(&env).await;
    assert_eq!(
        revisions.len(),
        2,
        "one stored render per remaining release: {revisions:?}"
    );
    assert!(
        revisions.iter().all(|(_, revision)| revision == "1"),
        "a stored render was rendered again: {revisions:?}"
    );
}
