//! The one Cluster API version this process speaks (issue 47): chosen by discovery at start
//! ([`ServedVersions::choose`]: `v1beta2` where it is served, `v1beta1` only where it is not),
//! followed while the process runs — a watch that the API server answers 404 or 410, and a
//! periodic look (backing off while nothing usable is served), discover again; a change of
//! the served versions switches every Cluster API request and restarts the Cluster watches on
//! the new version ([`following`]), without losing them.
//!
//! When no version capstan speaks is served (or discovery cannot be read), that is said once
//! in the log, as the `capstan_cluster_api_version{version="none"}` gauge, and as a
//! `ClusterAPINotServed` error on every resource it blocks ([`not_served`]); the watches wait
//! for it instead of failing in a loop.

use std::sync::LazyLock;
use std::time::Duration;

use futures::StreamExt;
use kube::Client;
use kube::api::{ApiResource, GroupVersionKind};
use kube::runtime::watcher;
use tokio::sync::{Notify, watch};

use capstan_stack::capi::{CapiVersion, GROUP, ServedVersions};

/// How often the served versions are looked at while a version is chosen.
pub const DISCOVERY_PERIOD: Duration = Duration::from_secs(60);

/// The reason of the condition (and the Event) on every resource that waits for a Cluster API
/// capstan speaks: ClusterStackRollouts (`Progressing`), ClusterAddons (`ClusterReady`) and
/// ClusterStackReleases (`Applied`).
pub const NOT_SERVED_REASON: &str = "ClusterAPINotServed";

/// What discovery said last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Not discovered yet (no operator running in this process, or before its start).
    Unknown,
    Chosen(CapiVersion),
    /// Nothing capstan speaks is served, or discovery failed: why.
    NotServed(String),
}

static CHOICE: LazyLock<watch::Sender<Choice>> = LazyLock::new(|| watch::channel(Choice::Unknown).0);
static REDISCOVER: LazyLock<Notify> = LazyLock::new(Notify::new);

/// The version requests use now: the chosen one; `v1beta1` before any discovery (callers
/// outside the operator's run, as before issue 47), `v1beta2` while none is served (its
/// requests fail as the missing API does).
pub fn current() -> CapiVersion {
    match &*CHOICE.borrow() {
        Choice::Chosen(version) => *version,
        Choice::Unknown => CapiVersion::V1Beta1,
        Choice::NotServed(_) => CapiVersion::V1Beta2,
    }
}

/// What discovery said last.
pub fn choice() -> Choice {
    CHOICE.borrow().clone()
}

/// Why Cluster API cannot be used, when it cannot.
pub fn not_served() -> Option<String> {
    match &*CHOICE.borrow() {
        Choice::NotServed(why) => Some(why.clone()),
        _ => None,
    }
}

/// Records `choice`; whether it changed.
pub fn set(choice: Choice) -> bool {
    CHOICE.send_if_modified(|current| {
        let changed = *current != choice;
        *current = choice;
        changed
    })
}

/// Asks the follower ([`follow`]) to discover again now.
pub fn rediscover() {
    REDISCOVER.notify_one();
}

/// An item each time a version is chosen anew (Cluster API installed after none was served,
/// or another version): the controllers whose objects wait for it look at them all again at
/// once, instead of at their next retry.
pub fn chosen_anew() -> futures::stream::BoxStream<'static, ()> {
    futures::stream::unfold(CHOICE.subscribe(), |mut changes| async move {
        loop {
            changes.changed().await.ok()?;
            if matches!(*changes.borrow_and_update(), Choice::Chosen(_)) {
                return Some(((), changes));
            }
        }
    })
    .boxed()
}

/// `cluster.x-k8s.io/<version>` `Cluster`.
pub fn cluster_resource_of(version: CapiVersion) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(GROUP, version.as_str(), "Cluster"),
        "clusters",
    )
}

/// `cluster.x-k8s.io/<version>` `kind` (its plural the lowercase kind and an `s`, as for
/// `MachineDeployment` and `MachinePool`).
pub fn resource_of(version: CapiVersion, kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(GROUP, version.as_str(), kind))
}

/// `cluster.x-k8s.io/<version>` `ClusterClass`.
pub fn cluster_class_resource_of(version: CapiVersion) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(GROUP, version.as_str(), "ClusterClass"),
        "clusterclasses",
    )
}

/// The versions of `cluster.x-k8s.io` the API server serves (none: the group is not served).
pub async fn served_versions(client: &Client) -> Result<ServedVersions, kube::Error> {
    let groups = client.list_api_groups().await?;
    let versions = groups
        .groups
        .iter()
        .find(|group| group.name == GROUP)
        .map(|group| group.versions.iter().map(|v| v.version.clone()).collect())
        .unwrap_or_default();
    Ok(ServedVersions { versions })
}

/// The choice for what discovery answered.
pub fn decide(served: Result<ServedVersions, kube::Error>) -> Choice {
    match served {
        Ok(served) => match served.choose() {
            Ok(version) => Choice::Chosen(version),
            Err(why) => Choice::NotServed(why.to_string()),
        },
        Err(error) => Choice::NotServed(format!("discovery of the API group {GROUP} failed: {error}")),
    }
}

static V1BETA1_SERVED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether `v1beta1` is served too, deprecated, beside the `v1beta2` spoken (Cluster API
/// v1.11–v1.15), as discovery said last: what a ClusterClass chart whose objects cannot be
/// converted falls back to (applied as rendered) until Cluster API stops serving it.
pub fn v1beta1_served() -> bool {
    V1BETA1_SERVED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Asks discovery, remembers whether `v1beta1` is served, and decides.
async fn look(client: &Client) -> Choice {
    let served = served_versions(client).await;
    let v1beta1 = served
        .as_ref()
        .is_ok_and(|s| s.versions.iter().any(|v| v == CapiVersion::V1Beta1.as_str()));
    V1BETA1_SERVED.store(v1beta1, std::sync::atomic::Ordering::Relaxed);
    decide(served)
}

/// Discovers once and records the choice, saying in the log what changed (only a change).
pub async fn discover(client: &Client, metrics: &crate::metrics::Metrics) -> Choice {
    let choice = look(client).await;
    let before = self::choice();
    if set(choice.clone()) {
        match (&before, &choice) {
            (_, Choice::Chosen(version)) if before == Choice::Unknown => {
                tracing::info!(%version, "speaking Cluster API {GROUP}/{version}");
            }
            (_, Choice::Chosen(version)) => {
                tracing::warn!(%version, previous = ?before, "the served Cluster API versions changed: speaking {GROUP}/{version} from now on");
            }
            (_, Choice::NotServed(why)) => {
                tracing::error!(
                    "Cluster API cannot be used: {why}; the Clusters, ClusterAddons and rollouts wait for it"
                );
            }
            (_, Choice::Unknown) => {}
        }
    }
    metrics.cluster_api(match &choice {
        Choice::Chosen(version) => Some(*version),
        _ => None,
    });
    choice
}

/// The version spoken, discovered first when no discovery ran in this process yet (a
/// webhook replica that does not lead).
pub async fn ensure_discovered(client: &Client) -> CapiVersion {
    if choice() == Choice::Unknown {
        set(look(client).await);
    }
    current()
}

/// How long to wait before the next look: `period` while a version is chosen; doubling from
/// one second up to `period` while none is (`failures` looks in a row).
pub fn next_look(choice: &Choice, failures: u32, period: Duration) -> Duration {
    match choice {
        Choice::Chosen(_) => period,
        _ => Duration::from_secs(1u64 << failures.min(16)).min(period),
    }
}

/// Follows the served versions until `stop` (after the first [`discover`]): discovers again
/// every `period` (see [`next_look`]) and whenever [`rediscover`] asks.
pub async fn follow(
    client: Client,
    metrics: std::sync::Arc<crate::metrics::Metrics>,
    period: Duration,
    stop: impl std::future::Future<Output = ()> + Send,
) {
    let mut failures = 0u32;
    let mut stop = std::pin::pin!(stop);
    loop {
        let wait = next_look(&choice(), failures.saturating_sub(1), period);
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = REDISCOVER.notified() => {}
            () = &mut stop => return,
        }
        failures = match discover(&client, &metrics).await {
            Choice::Chosen(_) => 0,
            _ => failures.saturating_add(1),
        };
    }
}

/// Discovers the version to speak, then follows it in a task of its own until `stop`.
pub async fn start(
    client: &Client,
    metrics: &std::sync::Arc<crate::metrics::Metrics>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) {
    discover(client, metrics).await;
    tokio::spawn(follow(client.clone(), metrics.clone(), DISCOVERY_PERIOD, stop));
}

/// Whether a watch error may mean the version it watches is no longer served.
pub fn is_not_served(error: &watcher::Error) -> bool {
    let code = match error {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => match e {
            kube::Error::Api(status) => status.code,
            _ => return false,
        },
        watcher::Error::WatchError(status) => status.code,
        _ => return false,
    };
    code == 404 || code == 410
}

/// A watch's events (as `crate::watch::Events`, which names this module).
type Events =
    futures::stream::BoxStream<'static, Result<watcher::Event<kube::api::DynamicObject>, watcher::Error>>;

/// A watch running on one version.
type Running = (CapiVersion, Events);

/// The events of the watch `make` starts for the version chosen, restarted on the new
/// version when the choice changes (its first list replaces what the stores hold), and
/// paused while no version is served. A watch error that may mean the version went away
/// asks for discovery at once.
pub fn following<F>(make: F) -> Events
where
    F: Fn(CapiVersion) -> Events + Send + 'static,
{
    let changes = CHOICE.subscribe();
    let state = (changes, None::<Running>, make);
    futures::stream::unfold(state, |(mut changes, mut running, make)| async move {
        loop {
            let chosen = match &*changes.borrow_and_update() {
                Choice::Chosen(version) => Some(*version),
                _ => None,
            };
            let Some(version) = chosen else {
                running = None;
                changes.changed().await.ok()?;
                continue;
            };
            match &mut running {
                Some((watched, events)) if *watched == version => {
                    tokio::select! {
                        event = events.next() => {
                            let event = event?;
                            if let Err(error) = &event
                                && is_not_served(error)
                            {
                                rediscover();
                            }
                            return Some((event, (changes, running, make)));
                        }
                        changed = changes.changed() => changed.ok()?,
                    }
                }
                _ => running = Some((version, make(version))),
            }
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_again_with_backoff_only_while_nothing_is_served() {
        let period = Duration::from_secs(60);
        let chosen = Choice::Chosen(CapiVersion::V1Beta2);
        let none = Choice::NotServed("no group".into());
        let table = [
            (&chosen, 0, 60),
            (&chosen, 5, 60),
            (&none, 0, 1),
            (&none, 1, 2),
            (&none, 3, 8),
            (&none, 6, 60),
            (&none, 40, 60),
        ];
        for (choice, failures, seconds) in table {
            assert_eq!(
                next_look(choice, failures, period),
                Duration::from_secs(seconds),
                "{choice:?} after {failures}"
            );
        }
    }

    #[test]
    fn a_missing_or_gone_version_asks_for_discovery() {
        let status = |code: u16| {
            kube::core::Status::failure("the server could not find it", "NotFound")
                .with_code(code)
                .boxed()
        };
        let table = [
            (
                watcher::Error::InitialListFailed(kube::Error::Api(status(404))),
                true,
            ),
            (watcher::Error::WatchError(status(410)), true),
            (
                watcher::Error::WatchStartFailed(kube::Error::Api(status(403))),
                false,
            ),
            (watcher::Error::WatchFailed(kube::Error::Api(status(500))), false),
        ];
        for (error, wanted) in table {
            assert_eq!(is_not_served(&error), wanted, "{error}");
        }
    }

    #[test]
    fn the_choice_follows_discovery() {
        let served = |versions: &[&str]| {
            Ok(ServedVersions {
                versions: versions.iter().map(|v| v.to_string()).collect(),
            })
        };
        assert_eq!(
            decide(served(&["v1beta1", "v1beta2"])),
            Choice::Chosen(CapiVersion::V1Beta2)
        );
        assert_eq!(decide(served(&["v1beta1"])), Choice::Chosen(CapiVersion::V1Beta1));
        assert!(matches!(decide(served(&[])), Choice::NotServed(why) if why.contains("not installed")));
    }
}
