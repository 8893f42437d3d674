//! The rollout's decision: from the spec, the Clusters, the recorded status, the approve and
//! resume annotations and the time, the next status and what to switch. Pure; the controller
//! writes [`Plan::status`] before it acts on [`Plan::actions`], so a killed operator finds
//! every switch it may have made recorded (with the class and version to roll back to).
//!
//! Rules, in the order [`plan`] applies them:
//! - **Target**: the release to roll out is fixed in the status when the rollout starts and
//!   kept until the rollout is Complete; only then is a different release (a newer one with
//!   `version: latest`, or an edited `spec.version`) taken, and the rollout starts over. A
//!   resumed Halted rollout also takes the release `spec.version` names now (a fixed release
//!   replaces the broken one, failed Clusters included); when that is still the recorded
//!   target, the rollout goes on and its failed Clusters stay failed, no longer counted.
//! - **Membership**: Clusters are assigned to waves by [`assign`]; a Cluster that appears
//!   while its wave has not finished joins it, one whose wave finished waits for the next
//!   rollout. A Cluster that is deleted leaves the rollout unless it failed.
//! - **Health**: a switched Cluster that becomes healthy ([`health`]) is Healthy; past
//!   `health.timeout` from its switch it has Failed. A Cluster found on the target class
//!   without a switch counts as switched: Healthy at once when healthy.
//! - **Failure**: more failed Clusters (not acknowledged by a resume) than
//!   `failurePolicy.maxFailures` halt the rollout; with `Rollback` the failed Clusters are
//!   switched back to their recorded class and version. A halted rollout switches nothing.
//! - **Pause**: a paused rollout switches (and rolls back) nothing.
//! - **Waves**: one wave at a time, in order. A Manual wave waits for the approve annotation
//!   naming it (`<wave>` or `<wave>@<anything>`; a value counts once, and one present when
//!   the target was chosen never counts). At most `maxInFlight` Clusters of the wave are
//!   Updating at once. The wave is done when no Cluster is Pending or Updating; it soaks for
//!   `soak` from then, and the next wave starts after. A wave without Clusters is done at once.
//! - **Windows** (`windows`, a wave's own replacing the rollout's): a switch starts only while
//!   one is open; in flight Clusters go on, health timeouts run; outside, the rollout is
//!   WaitingForWindow with `status.nextWindow`, and looks again at the opening.
//! - **Pre-flight**: a Cluster whose gathered pre-flight blocks is Blocked (the evidence
//!   kept in its status until a new pre-flight passes), never switched, never a failure;
//!   `onBlocked: Halt` halts the rollout before any switch of that pass, `Skip` goes on
//!   without it. `capstan.dev/force` naming it lets it go once, recorded with who and when.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::health::health;
use super::path::Hop;
use super::waves::{ClusterInfo, StackId};
use crate::api::rollout::{
    Approval, ClusterPhase, ClusterRolloutStatus, ClusterStackRolloutSpec, ClusterStackRolloutStatus,
    OnBlocked, PreflightResult, RolloutPhase, Wave, WavePhase,
};
use clock::{add, ceil_second, elapsed, human, whole_second};
use steps::{next_step, step_target};

mod clock;
mod failures;
mod gates;
mod membership;
mod paths;
mod report;
mod spec;
mod steps;

use spec::durations;
pub use spec::{max_in_flight, parse_percent};

// A Cluster's health is judged against the target, so the target lives beside it.
pub use super::health::Target;

/// The rollout's annotations `capstan.dev/approve` and `capstan.dev/resume`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Annotations<'a> {
    pub approve: Option<&'a str>,
    pub resume: Option<&'a str>,
    /// `capstan.dev/force`: Blocked Clusters let go despite their pre-flight.
    pub force: Option<&'a str>,
}

/// Everything the decision depends on.
#[derive(Clone, Debug)]
pub struct Observed<'a> {
    pub spec: &'a ClusterStackRolloutSpec,
    /// The rollout's namespace (that of its ClusterStack and the classes).
    pub namespace: &'a str,
    /// The ClusterStack's provider, name and Kubernetes major-minor.
    pub stack: &'a StackId,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    pub annotations: Annotations<'a>,
    /// The status as recorded.
    pub status: &'a ClusterStackRolloutStatus,
    /// What `spec.version` names now (for `latest`, the newest ready release); `None` when no
    /// such release exists (yet). Used only when a new target is taken.
    pub target: Option<Target>,
    /// Every Cluster that may take part, with its health inputs.
    pub clusters: &'a [ClusterInfo],
    /// The namespace's ClusterStacks with their newest ready release: the `from` stacks and
    /// the stacks paths go through (empty without `spec.from`).
    pub stacks: &'a [Hop],
    /// Each Cluster's pre-flight for its next switch (`namespace/name`), as gathered this
    /// pass; a Blocked Cluster without one stays blocked on its recorded evidence.
    pub preflight: &'a BTreeMap<String, Vec<PreflightResult>>,
    /// Whether a switch needs its pre-flight gathered (the operator's passes): a Pending
    /// Cluster without one waits for the next pass, which gathers it. Off, it is switched when
    /// due (the simulations that give no pre-flight).
    pub preflight_required: bool,
    pub now: Time,
}

/// The decision: the status to write first, then the actions, the Events to report, and when
/// to look again at the latest (a soak's end, a health timeout).
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub status: ClusterStackRolloutStatus,
    pub actions: Vec<Action>,
    pub events: Vec<PlannedEvent>,
    pub requeue_after: Option<Duration>,
}

/// A change to one Cluster (`namespace/name`): its `spec.topology.class` and, when `version`
/// is set, its `spec.topology.version`, in one patch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Switch {
        cluster: String,
        class: String,
        version: Option<String>,
    },
    RollBack {
        cluster: String,
        class: String,
        version: Option<String>,
    },
}

impl Action {
    #[cfg(test)]
    pub fn cluster(&self) -> &str {
        match self {
            Action::Switch { cluster, .. } | Action::RollBack { cluster, .. } => cluster,
        }
    }
}

/// An Event on the rollout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedEvent {
    pub reason: String,
    pub message: String,
    pub warning: bool,
}

/// Decides the rollout's next step; see the module documentation for the rules.
pub fn plan(observed: &Observed) -> Plan {
    // The first Cluster of each key, as a scan of the list would find it.
    let mut clusters = HashMap::with_capacity(observed.clusters.len());
    for cluster in observed.clusters {
        clusters.entry(cluster.key()).or_insert(cluster);
    }
    let mut planner = Planner {
        o: observed,
        clusters,
        now: whole_second(observed.now.0),
        exact_now: observed.now.0,
        status: observed.status.clone(),
        actions: Vec::new(),
        events: Vec::new(),
        requeue: None,
        message: None,
        late: Vec::new(),
        windows: Vec::new(),
        sources: Vec::new(),
        notes: Vec::new(),
    };
    planner.run();
    planner.finish()
}

struct Planner<'o, 'a> {
    o: &'o Observed<'a>,
    /// The observed Clusters by `namespace/name`: the status' entries are matched with them
    /// on every pass, and a scan per entry is quadratic in the fleet (a million key
    /// comparisons a pass at 1,000 Clusters).
    clusters: HashMap<String, &'a ClusterInfo>,
    /// `now` to the second: what the status keeps of a time.
    now: Timestamp,
    /// `now` as observed, for deadlines: a soak measured from `now` would start up to a
    /// second before the wave was done.
    exact_now: Timestamp,
    status: ClusterStackRolloutStatus,
    actions: Vec<Action>,
    events: Vec<PlannedEvent>,
    requeue: Option<Duration>,
    /// The status message when it is not the progress summary (no target, a bad spec).
    message: Option<String>,
    /// Clusters whose wave finished before they appeared: they wait for the next rollout.
    late: Vec<String>,
    /// The maintenance windows of each wave (its own, else the rollout's).
    windows: Vec<Vec<super::windows::Window>>,
    /// The stacks `spec.from` resolves to: their Clusters take part beside the target's own.
    sources: Vec<StackId>,
    /// What the status message adds to the progress summary (`auto` finding no stack).
    notes: Vec<String>,
}

impl Planner<'_, '_> {
    fn run(&mut self) {
        if let Some(timeout) = self.decide() {
            self.requeue_for_timeouts(timeout);
        }
    }

    /// The rules in order; the health timeout when the spec's durations parse.
    fn decide(&mut self) -> Option<Duration> {
        let o = self.o;
        self.status.observed_generation = o.generation;
        let durations = match durations(o.spec) {
            Ok(d) => d,
            Err(why) => {
                self.invalid_spec(why);
                return None;
            }
        };
        if let Err(why) = self.read_windows() {
            self.invalid_spec(why);
            return None;
        }
        let resume_is_new = o
            .annotations
            .resume
            .is_some_and(|r| self.status.resume_token.as_deref() != Some(r));
        let resumed = resume_is_new && self.status.phase == RolloutPhase::Halted;
        if resume_is_new {
            self.status.resume_token = o.annotations.resume.map(str::to_string);
        }

        let Some(target) = self.choose_target(resumed) else {
            self.status.phase = RolloutPhase::Idle;
            self.message = Some(format!(
                "no ready release of {} matches version {:?} yet",
                o.stack, o.spec.version
            ));
            return None;
        };
        if resumed && self.status.phase == RolloutPhase::Halted {
            self.resume();
        }
        self.read_sources();
        self.sync_membership();
        self.place_on_paths(&target);
        self.observe_health(&target, durations.timeout);
        self.check_failures();
        if self.status.phase == RolloutPhase::Halted {
            if !o.spec.paused {
                self.roll_back();
            }
            return Some(durations.timeout);
        }
        if o.spec.paused {
            if self.status.phase != RolloutPhase::Paused {
                self.event(
                    "Paused",
                    "paused: no Cluster is switched until spec.paused is false",
                    false,
                );
            }
            self.status.phase = RolloutPhase::Paused;
            return Some(durations.timeout);
        }
        self.progress(&target, &durations.soaks);
        Some(durations.timeout)
    }

    fn invalid_spec(&mut self, why: String) {
        if self.status.message.as_deref() != Some(why.as_str()) {
            self.event("InvalidSpec", &why, true);
        }
        self.message = Some(why);
    }

    /// The target to roll out: the recorded one, or a new one when none is recorded, the
    /// rollout is Complete, or a halted rollout was just resumed. A new target starts over.
    fn choose_target(&mut self, resumed: bool) -> Option<Target> {
        let recorded = self.recorded_target();
        let wanted = self.o.target.clone();
        let start_over = match (&recorded, &wanted) {
            (None, Some(_)) => true,
            (Some(r), Some(w)) => {
                r.release != w.release && (self.status.phase == RolloutPhase::Complete || resumed)
            }
            (_, None) => false,
        };
        if !start_over {
            return recorded;
        }
        let target = wanted?;
        self.start(&target);
        Some(target)
    }

    fn recorded_target(&self) -> Option<Target> {
        Some(Target {
            release: self.status.target_release.clone()?,
            class: self.status.target_class.clone()?,
            kubernetes: self.status.target_kubernetes.clone(),
        })
    }

    fn start(&mut self, target: &Target) {
        let s = &mut self.status;
        s.target_release = Some(target.release.clone());
        s.target_class = Some(target.class.clone());
        s.target_kubernetes = target.kubernetes.clone();
        s.phase = RolloutPhase::Progressing;
        s.current_wave = None;
        s.waves.clear();
        s.clusters.clear();
        s.halted_at = None;
        s.approval_token = self.o.annotations.approve.map(str::to_string);
        let message = format!(
            "rolling out {} to the Clusters of {}",
            target.release, self.o.stack
        );
        self.event("Started", &message, false);
    }

    /// A halted rollout resumed toward the same target: its failures are acknowledged (they
    /// stay Failed, not retried, and no longer count) and it goes on.
    fn resume(&mut self) {
        let mut names = Vec::new();
        for c in &mut self.status.clusters {
            if is_failure(c) {
                c.acknowledged = true;
                names.push(c.name.clone());
            }
        }
        self.status.halted_at = None;
        self.status.phase = RolloutPhase::Progressing;
        for w in &mut self.status.waves {
            if w.phase == WavePhase::Halted {
                w.phase = WavePhase::Progressing;
            }
        }
        let message = format!(
            "resumed; failed Clusters stay as they are and no longer count: {}",
            list_or_none(&names)
        );
        self.event("Resumed", &message, false);
    }

    fn observe_health(&mut self, target: &Target, timeout: Duration) {
        let o = self.o;
        let has_checks = !o.spec.health.checks.is_empty();
        let now = self.now;
        let mut failed = Vec::new();
        let mut healthy = Vec::new();
        let mut stepped = Vec::new();
        for entry in &mut self.status.clusters {
            let Some(cluster) = self.clusters.get(&entry.name).copied() else {
                continue;
            };
            // Across stacks, each step of the path is judged on its own release.
            let target = &step_target(entry, target);
            let on_target = cluster.class.as_deref() == Some(target.class.as_str());
            match entry.phase {
                // Already on the target (or its step) without a switch: counts once healthy;
                // until then it waits for its wave like any other.
                ClusterPhase::Pending
                    if on_target && health(cluster, target, false, has_checks).is_healthy() =>
                {
                    if let Some(step) = next_step(entry) {
                        stepped.push(step);
                        continue;
                    }
                    entry.to = Some(target.class.clone());
                    entry.phase = ClusterPhase::Healthy;
                    entry.since = Some(Time(now));
                    entry.message = Some("already on the target".to_string());
                }
                ClusterPhase::Updating => {
                    let version_changed = target.kubernetes.is_some()
                        && entry.from.is_some()
                        && entry.from_version != target.kubernetes;
                    let verdict = health(cluster, target, version_changed, has_checks);
                    let since = entry.since.as_ref().map_or(now, |t| t.0);
                    let exact_now = self.exact_now;
                    if verdict.is_healthy() {
                        if let Some(step) = next_step(entry) {
                            stepped.push(step);
                            continue;
                        }
                        entry.phase = ClusterPhase::Healthy;
                        entry.since = Some(Time(now));
                        entry.message = None;
                        healthy.push(entry.name.clone());
                    } else if elapsed(since, exact_now) >= timeout {
                        let message = format!("not healthy within {}: {}", human(timeout), why(&verdict));
                        entry.phase = ClusterPhase::Failed;
                        entry.since = Some(Time(now));
                        entry.message = Some(message.clone());
                        failed.push(format!("{}: {message}", entry.name));
                    } else {
                        entry.message = Some(why(&verdict));
                    }
                }
                _ => {}
            }
        }
        for message in stepped {
            self.event("StepHealthy", &message, false);
        }
        if !healthy.is_empty() {
            let message = format!("healthy on {}: {}", target.class, healthy.join(", "));
            self.event("ClusterHealthy", &message, false);
        }
        for message in failed {
            self.event("ClusterFailed", &message, true);
        }
    }

    /// Moves the waves on: approval, switches within `maxInFlight`, soak, next wave.
    fn progress(&mut self, target: &Target, soaks: &[Duration]) {
        let o = self.o;
        let now = self.now;
        for (index, wave) in o.spec.waves.iter().enumerate() {
            if self.status.waves[index].phase == WavePhase::Complete {
                continue;
            }
            self.status.current_wave = Some(wave.name.clone());
            let members = self.members(&wave.name);
            if members.is_empty() && self.status.waves[index].started_at.is_none() {
                self.status.waves[index].phase = WavePhase::Complete;
                continue;
            }
            if wave.approval == Approval::Manual && self.status.waves[index].approved_at.is_none() {
                if !self.take_approval(&wave.name) {
                    if self.status.waves[index].phase != WavePhase::WaitingForApproval {
                        let message = format!(
                            "wave {} waits for approval (annotation capstan.dev/approve: {})",
                            wave.name, wave.name
                        );
                        self.event("WaitingForApproval", &message, false);
                    }
                    self.status.waves[index].phase = WavePhase::WaitingForApproval;
                    self.status.phase = RolloutPhase::WaitingForApproval;
                    return;
                }
                self.status.waves[index].approved_at = Some(Time(now));
                self.event("Approved", &format!("wave {} approved", wave.name), false);
            }
            if self.status.waves[index].started_at.is_none() {
                self.status.waves[index].started_at = Some(Time(now));
                let message = format!("wave {} started: {} Cluster(s)", wave.name, members.len());
                self.event("WaveStarted", &message, false);
            }
            let open = self.switch_within_limit(index, wave, members.len(), target);
            if self.halt_on_blocked(index) {
                return;
            }

            let done = self
                .status
                .clusters
                .iter()
                .filter(|c| c.wave == wave.name)
                .all(|c| !matches!(c.phase, ClusterPhase::Pending | ClusterPhase::Updating));
            let status = &mut self.status.waves[index];
            if !done {
                // A Cluster that joined a soaking wave: the soak starts again once it is done.
                status.soak_until = None;
                status.phase = WavePhase::Progressing;
                self.status.phase = if open {
                    RolloutPhase::Progressing
                } else {
                    RolloutPhase::WaitingForWindow
                };
                return;
            }
            // The soak ends a whole `soak` after the wave was seen done, rounded up to the
            // second the status can keep, and is compared with the exact time: rounded down,
            // or compared to the second, the next wave could start up to a second early.
            let soak = soaks.get(index).copied().unwrap_or_default();
            let exact_now = self.exact_now;
            let until = status
                .soak_until
                .get_or_insert_with(|| Time(ceil_second(add(exact_now, soak))))
                .0;
            if exact_now < until {
                status.phase = WavePhase::Soaking;
                self.status.phase = RolloutPhase::Soaking;
                self.requeue_in(elapsed(exact_now, until));
                return;
            }
            status.phase = WavePhase::Complete;
            self.event("WaveComplete", &format!("wave {} complete", wave.name), false);
        }
        if self.status.phase != RolloutPhase::Complete {
            let message = format!("{} rolled out", target.release);
            self.event("Complete", &message, false);
        }
        self.status.phase = RolloutPhase::Complete;
        self.status.current_wave = None;
    }

    fn members(&self, wave: &str) -> Vec<String> {
        self.status
            .clusters
            .iter()
            .filter(|c| c.wave == wave)
            .map(|c| c.name.clone())
            .collect()
    }

    /// Whether the approve annotation approves `wave` now (and records it as used).
    fn take_approval(&mut self, wave: &str) -> bool {
        let Some(value) = self.o.annotations.approve else {
            return false;
        };
        let names_wave = value.split_once('@').map_or(value, |(w, _)| w) == wave;
        if !names_wave || self.status.approval_token.as_deref() == Some(value) {
            return false;
        }
        self.status.approval_token = Some(value.to_string());
        true
    }

    /// Re-issues the switches whose patch did not take, then switches Pending Clusters of
    /// `wave` (by name) while fewer than its `maxInFlight` are Updating.
    /// Returns whether the wave's window is open (or none is configured).
    fn switch_within_limit(&mut self, index: usize, wave: &Wave, total: usize, target: &Target) -> bool {
        let limit = max_in_flight(wave.max_in_flight.as_ref(), total);
        let clusters = &self.clusters;
        let cluster_of = |key: &str| clusters.get(key).copied();
        let mut in_flight = 0;
        let mut reissue = Vec::new();
        for entry in &self.status.clusters {
            if entry.wave != wave.name || entry.phase != ClusterPhase::Updating {
                continue;
            }
            in_flight += 1;
            let step = step_target(entry, target);
            if let Some(cluster) = cluster_of(&entry.name)
                && cluster.class.as_deref() != Some(step.class.as_str())
                && entry.from.is_some()
            {
                reissue.push(switch(entry, cluster, &step));
            }
        }
        // Switches start only inside a window; those in flight go on.
        let open = self.window_open(index);
        let now = self.now;
        let mut entries = std::mem::take(&mut self.status.clusters);
        if self.o.spec.preflight.on_blocked == OnBlocked::Halt {
            // Halt: every waiting Cluster of the wave is judged before anything of this pass is
            // sent, window open or not — one blocked Cluster halts the rollout, and a halted
            // rollout sends nothing, not even a re-issued switch.
            let mut blocked = false;
            for entry in entries.iter_mut().filter(|e| e.wave == wave.name) {
                if matches!(entry.phase, ClusterPhase::Pending | ClusterPhase::Blocked) {
                    blocked |= self.without_path(entry) || self.preflight_blocks(entry, now);
                }
            }
            if blocked {
                self.status.clusters = entries;
                return open;
            }
        }
        self.actions.extend(reissue);
        if !open {
            self.status.clusters = entries;
            return false;
        }
        let mut switched: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let switched_at = ceil_second(self.exact_now);
        for entry in &mut entries {
            if in_flight >= limit {
                break;
            }
            let waiting = matches!(entry.phase, ClusterPhase::Pending | ClusterPhase::Blocked);
            if entry.wave != wave.name || !waiting {
                continue;
            }
            let Some(cluster) = self.clusters.get(&entry.name).copied() else {
                continue;
            };
            if self.without_path(entry) || self.awaits_preflight(entry) || self.preflight_blocks(entry, now) {
                continue;
            }
            in_flight += 1;
            let target = &step_target(entry, target);
            entry.to = Some(target.class.clone());
            entry.phase = ClusterPhase::Updating;
            // The health timeout counts from here: rounded up to the second the status keeps,
            // so a Cluster never fails before a whole timeout has passed since its switch.
            entry.since = Some(Time(switched_at));
            if cluster.class.as_deref() == Some(target.class.as_str()) {
                // On the target already: nothing to patch, nothing to roll back to.
                entry.message = Some("already on the target class".to_string());
                continue;
            }
            entry.from = cluster.class.clone();
            entry.from_version = cluster.version.clone();
            entry.message = Some(match entry.step {
                Some(at) if entry.path.len() > 1 => {
                    format!("switched (step {} of {})", at + 1, entry.path.len())
                }
                _ => "switched".to_string(),
            });
            self.actions.push(switch(entry, cluster, target));
            switched
                .entry(target.class.clone())
                .or_default()
                .push(entry.name.clone());
        }
        self.status.clusters = entries;
        if !switched.is_empty() {
            let message: Vec<String> = switched
                .iter()
                .map(|(class, names)| format!("{} to {class}", names.join(", ")))
                .collect();
            let message = format!("switching {}", message.join("; "));
            self.event("ClusterSwitched", &message, false);
        }
        true
    }

    fn requeue_for_timeouts(&mut self, timeout: Duration) {
        let now = self.exact_now;
        let ends: Vec<Timestamp> = self
            .status
            .clusters
            .iter()
            .filter(|c| c.phase == ClusterPhase::Updating)
            .filter_map(|c| c.since.as_ref().map(|t| add(t.0, timeout)))
            .collect();
        for end in ends {
            self.requeue_in(elapsed(now, end).max(Duration::from_secs(1)));
        }
    }

    fn requeue_in(&mut self, after: Duration) {
        self.requeue = Some(self.requeue.map_or(after, |r| r.min(after)));
    }

    fn event(&mut self, reason: &str, message: &str, warning: bool) {
        self.events.push(PlannedEvent {
            reason: reason.to_string(),
            message: message.to_string(),
            warning,
        });
    }
}

fn switch(entry: &ClusterRolloutStatus, cluster: &ClusterInfo, target: &Target) -> Action {
    Action::Switch {
        cluster: entry.name.clone(),
        class: target.class.clone(),
        version: target
            .kubernetes
            .clone()
            .filter(|v| cluster.version.as_ref() != Some(v)),
    }
}

/// A failure that counts against `maxFailures`.
fn is_failure(c: &ClusterRolloutStatus) -> bool {
    matches!(c.phase, ClusterPhase::Failed | ClusterPhase::RolledBack) && !c.acknowledged
}

fn why(verdict: &super::health::Health) -> String {
    match verdict {
        super::health::Health::Healthy => "healthy".to_string(),
        super::health::Health::Unhealthy(why) => why.clone(),
    }
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}
