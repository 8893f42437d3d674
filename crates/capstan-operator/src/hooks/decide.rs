//! The hooks' answers as pure functions of the ClusterAddon, the Cluster's target class and
//! the time: no I/O and no memory between calls. What must outlive a call (when a wait began,
//! for which class, whether it was released) is returned as a [`StatusChange`] for the
//! caller to write to the ClusterAddon's status.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value as Json, json};

use super::protocol::{Hook, HookResponse};
use crate::api::{ClusterAddon, ClusterAddonStatus};
use crate::clusters::release_name_of_class;

/// Bounds of `retryAfterSeconds` while blocking: often enough to notice the addons soon,
/// rarely enough to keep Cluster API's reconciles cheap.
const RETRY_MIN: u64 = 5;
const RETRY_MAX: u64 = 10;

/// The hook's part of a ClusterAddon's status, as it should be after the call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatusChange {
    pub upgrade_hook_since: Option<Time>,
    pub upgrade_hook_target: Option<String>,
    pub upgrade_hook_released: Option<String>,
    /// This call released the upgrade on timeout: the caller reports it (an Event).
    pub timed_out: bool,
}

impl StatusChange {
    /// The merge patch of the status subresource that writes this change (`null` deletes).
    pub fn merge_patch(&self) -> Json {
        json!({
            "status": {
                "upgradeHookSince": self.upgrade_hook_since,
                "upgradeHookTarget": self.upgrade_hook_target,
                "upgradeHookReleased": self.upgrade_hook_released,
            }
        })
    }

    fn differs_from(&self, status: &ClusterAddonStatus) -> bool {
        self.upgrade_hook_since != status.upgrade_hook_since
            || self.upgrade_hook_target != status.upgrade_hook_target
            || self.upgrade_hook_released != status.upgrade_hook_released
    }
}

/// Answers `BeforeClusterUpgrade` for the Cluster whose ClusterAddon is `addon` (`None`: the
/// Cluster does not use a stack class) and whose topology moves to `cluster_class`.
///
/// Blocks while the addons applied in full are not those of `cluster_class` or are not
/// ready; never longer than `timeout` from the wait's start recorded in the status. Then it
/// lets the upgrade proceed and records why (`upgradeHookReleased`): CSO's hook can wait for
/// ever here. A wait recorded for another class is stale and starts over.
pub fn before_cluster_upgrade(
    addon: Option<&ClusterAddon>,
    cluster_class: &str,
    now: Timestamp,
    timeout: Duration,
) -> (HookResponse, Option<StatusChange>) {
    let hook = Hook::BeforeClusterUpgrade;
    let proceed = |message: String| HookResponse::success(hook, message, Some(0));
    let Some(addon) = addon else {
        return (proceed(String::new()), None);
    };
    let status = addon.status.clone().unwrap_or_default();
    let target = release_name_of_class(cluster_class);
    let applied = status.applied_cluster_stack.as_deref().map(release_name_of_class);
    let change_from = |change: StatusChange| change.differs_from(&status).then_some(change);

    if applied.as_deref() == Some(target.as_str()) && status.ready {
        // Done waiting: forget the wait, so the next upgrade's counts from its own start.
        return (proceed(String::new()), change_from(StatusChange::default()));
    }
    let waiting = format!(
        "waiting for the addons of {cluster_class} to be applied (applied: {}, ready: {})",
        status.applied_cluster_stack.as_deref().unwrap_or("none"),
        status.ready
    );
    let recorded_for_target = status
        .upgrade_hook_target
        .as_deref()
        .map(release_name_of_class)
        .is_some_and(|t| t == target);
    let since = match (&status.upgrade_hook_since, recorded_for_target) {
        (Some(since), true) => since.0,
        _ => {
            // A new wait: counted from now, to the second (what the status keeps).
            let start = Timestamp::from_second(now.as_second()).unwrap_or(now);
            let change = StatusChange {
                upgrade_hook_since: Some(Time(start)),
                upgrade_hook_target: Some(cluster_class.to_string()),
                upgrade_hook_released: None,
                timed_out: false,
            };
            let retry = retry_after(timeout.as_millis());
            return (HookResponse::success(hook, waiting, Some(retry)), Some(change));
        }
    };
    if let Some(released) = &status.upgrade_hook_released {
        // Released before; Cluster API may call again (another extension blocked).
        return (proceed(released.clone()), None);
    }
    let elapsed = u128::try_from(now.as_millisecond() - since.as_millisecond()).unwrap_or(0);
    if elapsed < timeout.as_millis() {
        let retry = retry_after(timeout.as_millis() - elapsed);
        return (HookResponse::success(hook, waiting, Some(retry)), None);
    }
    let released = format!(
        "BeforeClusterUpgrade to {cluster_class} let through after its timeout of {}s: the \
         addons of {cluster_class} are not applied (applied: {}, ready: {})",
        timeout.as_secs(),
        status.applied_cluster_stack.as_deref().unwrap_or("none"),
        status.ready
    );
    let change = StatusChange {
        upgrade_hook_since: status.upgrade_hook_since.clone(),
        upgrade_hook_target: status.upgrade_hook_target.clone(),
        upgrade_hook_released: Some(released.clone()),
        timed_out: true,
    };
    (proceed(released), Some(change))
}

/// Seconds until Cluster API should ask again, `remaining_ms` before the timeout.
fn retry_after(remaining_ms: u128) -> i32 {
    let secs = u64::try_from(remaining_ms.div_ceil(1000)).unwrap_or(RETRY_MAX);
    // The bounds are small constants: the conversion cannot fail.
    i32::try_from(secs.clamp(RETRY_MIN, RETRY_MAX)).unwrap_or(RETRY_MAX as i32)
}

/// Answers `AfterControlPlaneInitialized`: always Success. The ClusterAddon controller
/// applies the addons once the control plane is ready; the hook only records the call.
pub fn after_control_plane_initialized() -> HookResponse {
    HookResponse::success(Hook::AfterControlPlaneInitialized, String::new(), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ClusterAddonSpec;

    const TIMEOUT: Duration = Duration::from_secs(60);

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).expect("valid time")
    }

    fn addon(status: ClusterAddonStatus) -> ClusterAddon {
        let mut addon = ClusterAddon::new("cluster-addon-c1", ClusterAddonSpec::default());
        addon.status = Some(status);
        addon
    }

    fn applied(class: &str, ready: bool) -> ClusterAddonStatus {
        ClusterAddonStatus {
            applied_cluster_stack: Some(class.into()),
            ready,
            ..Default::default()
        }
    }

    /// Writes `change` into `addon`'s status, as the server's patch does.
    fn write(addon: &mut ClusterAddon, change: &StatusChange) {
        let status = addon.status.get_or_insert_with(Default::default);
        status.upgrade_hook_since = change.upgrade_hook_since.clone();
        status.upgrade_hook_target = change.upgrade_hook_target.clone();
        status.upgrade_hook_released = change.upgrade_hook_released.clone();
    }

    #[test]
    fn a_cluster_without_cluster_addon_proceeds_at_once() {
        let (response, change) = before_cluster_upgrade(None, "any-class", at(0), TIMEOUT);
        assert!(response.proceeds());
        assert_eq!(response.retry_after_seconds, Some(0));
        assert_eq!(change, None);
    }

    #[test]
    fn blocks_until_the_target_class_is_applied_and_ready_then_forgets_the_wait() {
        let mut addon = addon(applied("docker-ferrol-1-27-v1", true));
        let (response, change) =
            before_cluster_upgrade(Some(&addon), "docker-ferrol-1-27-v2", at(0), TIMEOUT);
        assert!(!response.proceeds());
        assert_eq!(response.retry_after_seconds, Some(10));
        assert_eq!(
            response.message,
            "waiting for the addons of docker-ferrol-1-27-v2 to be applied \
             (applied: docker-ferrol-1-27-v1, ready: true)"
        );
        let change = change.expect("the wait's start is recorded");
        assert_eq!(change.upgrade_hook_since, Some(Time(at(0))));
        assert_eq!(
            change.upgrade_hook_target.as_deref(),
            Some("docker-ferrol-1-27-v2")
        );
        write(&mut addon, &change);

        // Later calls keep blocking and change nothing.
        let (response, change) =
            before_cluster_upgrade(Some(&addon), "docker-ferrol-1-27-v2", at(30), TIMEOUT);
        assert!(!response.proceeds());
        assert_eq!(change, None);

        // Applied but not ready yet: still blocks.
        addon.status.as_mut().expect("status").applied_cluster_stack = Some("docker-ferrol-1-27-v2".into());
        addon.status.as_mut().expect("status").ready = false;
        let (response, _) = before_cluster_upgrade(Some(&addon), "docker-ferrol-1-27-v2", at(31), TIMEOUT);
        assert!(!response.proceeds());

        addon.status.as_mut().expect("status").ready = true;
        let (response, change) =
            before_cluster_upgrade(Some(&addon), "docker-ferrol-1-27-v2", at(32), TIMEOUT);
        assert!(response.proceeds());
        assert_eq!(change, Some(StatusChange::default()), "the wait is cleared");
    }

    #[test]
    fn dot_and_dash_forms_of_a_class_are_the_same_release() {
        let addon = addon(applied("docker-ferrol-1-27-v0-sha.abc1234", true));
        let (response, change) =
            before_cluster_upgrade(Some(&addon), "docker-ferrol-1-27-v0-sha-abc1234", at(0), TIMEOUT);
        assert!(response.proceeds(), "{response:?}");
        assert_eq!(change, None);
    }

    #[test]
    fn the_timeout_releases_the_upgrade_once_and_reports_it() {
        let mut addon = addon(applied("docker-ferrol-1-27-v1", true));
        let (_, change) = before_cluster_upgrade(Some(&addon), "docker-ferrol-1-27-v2", at(0), TIMEOUT);
        write(&mut addon, &change.expect("recorded"));

        // Near the end, the retry is not shorter than the minimum.
        let (response, _) = before_cluster_upgrade(Some(&addon), "docker-ferrol-1-27-v2", at(58), TIMEOUT);
        assert_eq!(response.retry_after_seconds, Some(5));

        let (response, change) =
            before_cluster_upgrade(Some(&addon), "docker-ferrol-1-27-v2", at(60), TIMEOUT);
        assert!(response.proceeds());
        let change = change.expect("the release is recorded");
        assert!(change.timed_out);
        assert_eq!(change.upgrade_hook_since, Some(Time(at(0))), "start kept");
        let released = change.upgrade_hook_released.clone().expect("message");
        assert_eq!(
            released,
            "BeforeClusterUpgrade to docker-ferrol-1-27-v2 let through after its timeout of 60s: \
             the addons of docker-ferrol-1-27-v2 are not applied (applied: docker-ferrol-1-27-v1, \
             ready: true)"
        );
        assert_eq!(response.message, released);
        write(&mut addon, &change);

        // Called again for the same upgrade: proceeds, reports nothing new.
        let (response, change) =
            before_cluster_upgrade(Some(&addon), "docker-ferrol-1-27-v2", at(61), TIMEOUT);
        assert!(response.proceeds());
        assert_eq!(change, None);

        // The next upgrade, to another class, waits again from its own start.
        let (response, change) =
            before_cluster_upgrade(Some(&addon), "docker-ferrol-1-27-v3", at(500), TIMEOUT);
        assert!(!response.proceeds());
        let change = change.expect("a new wait");
        assert_eq!(change.upgrade_hook_since, Some(Time(at(500))));
        assert_eq!(
            change.upgrade_hook_target.as_deref(),
            Some("docker-ferrol-1-27-v3")
        );
        assert_eq!(change.upgrade_hook_released, None);
        assert!(!change.timed_out);
    }

    #[test]
    fn merge_patch_deletes_cleared_fields() {
        assert_eq!(
            StatusChange::default().merge_patch(),
            json!({"status": {"upgradeHookSince": null, "upgradeHookTarget": null,
                              "upgradeHookReleased": null}})
        );
        // The fields the ClusterAddon controller leaves to the hooks are those they write.
        let patch = StatusChange::default().merge_patch();
        let mut written: Vec<&str> = patch["status"]
            .as_object()
            .map(|fields| fields.keys().map(String::as_str).collect())
            .unwrap_or_default();
        written.sort_unstable();
        let mut owned = crate::api::ClusterAddonStatus::HOOK_FIELDS.to_vec();
        owned.sort_unstable();
        assert_eq!(written, owned);
        let change = StatusChange {
            upgrade_hook_since: Some(Time(at(0))),
            upgrade_hook_target: Some("x".into()),
            upgrade_hook_released: None,
            timed_out: false,
        };
        assert_eq!(
            change.merge_patch()["status"]["upgradeHookSince"],
            json!("2023-11-14T22:13:20Z")
        );
    }

    #[test]
    fn after_control_plane_initialized_always_succeeds() {
        let response = after_control_plane_initialized();
        assert!(response.proceeds());
        assert_eq!(response.kind, "AfterControlPlaneInitializedResponse");
    }
}
