//! A maintenance window that closes mid-wave, on the real API server: the window opens every
//! minute (`* * * * *`, UTC) for 20 seconds and a simulated upgrade takes 25, so the Cluster
//! switched inside one window is still upgrading when it closes. It finishes (in-flight
//! Clusters are never stopped); the next Cluster waits — the rollout `WaitingForWindow` with
//! `status.nextWindow` at the next opening and a `WindowClosed` Event — and is switched only
//! once the window opens again (`WindowOpened`). The wave lets one Cluster at a time. The
//! test takes one to two minutes of wall time (windows are whole cron minutes), mostly asleep.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::operator_common::{NS, eventually};
use crate::operator_rollout::{ROLLOUT, create_rollout, fleet, rollouts, simulate};
use capstan_operator::api::rollout::{ClusterPhase, RolloutPhase};
use serde_json::json;

/// How long each window stays open, and how long the simulated upgrade takes (longer).
const OPEN: u64 = 20;
const UPGRADE: Duration = Duration::from_secs(25);
/// Between a switch's patch and the simulator seeing it.
const SEEN_WITHIN: f64 = 2.0;

/// Seconds since the epoch of `at`, an instant of this process, with `(wall, instant)` taken
/// together as the reference.
fn wall(at: Instant, reference: (f64, Instant)) -> f64 {
    reference.0 + at.saturating_duration_since(reference.1).as_secs_f64()
        - reference.1.saturating_duration_since(at).as_secs_f64()
}

fn now_wall() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after the epoch")
        .as_secs_f64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_that_closes_mid_wave_lets_the_switch_in_flight_finish_and_starts_none_until_it_opens() {
    let test =
        "a_window_that_closes_mid_wave_lets_the_switch_in_flight_finish_and_starts_none_until_it_opens";
    let Some((env, operator)) = fleet(test, &[("first", "all"), ("second", "all")]).await else {
        return;
    };
    let reference = (now_wall(), Instant::now());
    let sim = simulate(&env, UPGRADE, &[]);
    create_rollout(
        &env,
        json!({"clusterStack": "ferrol", "version": "v2",
               "windows": [{"schedule": "* * * * *", "duration": format!("{OPEN}s"), "timeZone": "UTC"}],
               "waves": [{"name": "all", "maxInFlight": 1}],
               "health": {"timeout": "2m"}}),
    )
    .await;

    // One Cluster switched inside a window; its upgrade outlasts the window.
    let (first, first_at) = eventually("a first switch", Duration::from_secs(90), &operator, || async {
        sim.snapshot(|r| {
            r.switches
                .first()
                .map(|s| (s.cluster.clone(), wall(s.at, reference)))
        })
    })
    .await;
    let second = if first == "first" { "second" } else { "first" };
    let opening = (first_at / 60.0).floor() * 60.0;
    assert!(
        first_at - opening < OPEN as f64 + SEEN_WITHIN,
        "{first} switched {:.1}s after the window opened",
        first_at - opening
    );

    // The window closes while it upgrades: it finishes, the other waits for the next opening.
    let next = opening + 60.0;
    let status = eventually(
        "the rollout WaitingForWindow after the first Cluster is healthy",
        Duration::from_secs(60),
        &operator,
        || async {
            let status = rollouts(&env).get(ROLLOUT).await.ok()?.status?;
            let healthy = status
                .clusters
                .iter()
                .any(|c| c.name == format!("{NS}/{first}") && c.phase == ClusterPhase::Healthy);
            (healthy && status.phase == RolloutPhase::WaitingForWindow).then_some(status)
        },
    )
    .await;
    let healthy_at = sim.snapshot(|r| r.healthy_at.get(&first).map(|at| wall(*at, reference)));
    let healthy_at = healthy_at.unwrap_or_else(|| panic!("{first} healthy in the simulator"));
    assert!(
        healthy_at > opening + OPEN as f64,
        "{first} finished {:.1}s after its window opened: not after it closed",
        healthy_at - opening
    );
    let next_window = status
        .next_window
        .as_ref()
        .unwrap_or_else(|| panic!("status.nextWindow in {status:?}"));
    assert_eq!(
        next_window.0.as_second() as f64,
        next,
        "the next opening is the next minute: {status:?}"
    );
    assert!(
        sim.snapshot(|r| r.switches_of(second).is_empty()),
        "{second} switched outside every window"
    );
    let reasons = |events: Vec<k8s_openapi::api::events::v1::Event>| -> Vec<String> {
        events.into_iter().filter_map(|e| e.reason).collect()
    };
    let events = crate::operator_common::events_about(env.client(), NS, "ClusterStackRollout", ROLLOUT).await;
    assert!(
        reasons(events).iter().any(|r| r == "WindowClosed"),
        "a WindowClosed Event"
    );

    // The window opens again: the other Cluster is switched then, not before.
    let second_at = eventually(
        "the second switch",
        Duration::from_secs(75),
        &operator,
        || async { sim.snapshot(|r| r.switches_of(second).first().map(|s| wall(s.at, reference))) },
    )
    .await;
    assert!(
        second_at >= next && second_at - next < OPEN as f64 + SEEN_WITHIN,
        "{second} switched {:.1}s after the next opening",
        second_at - next
    );
    eventually(
        "a WindowOpened Event",
        Duration::from_secs(20),
        &operator,
        || async {
            let events =
                crate::operator_common::events_about(env.client(), NS, "ClusterStackRollout", ROLLOUT).await;
            reasons(events).iter().any(|r| r == "WindowOpened").then_some(())
        },
    )
    .await;
    sim.snapshot(|r| assert!(r.double_switches().is_empty(), "{:?}", r.double_switches()));
}
