//! The gates before a switch starts: the wave's maintenance window and the Cluster's
//! pre-flight (with a force approval to let a Blocked Cluster go).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::Planner;
use crate::api::rollout::{
    ClusterPhase, ClusterRolloutStatus, ClusterStackRolloutSpec, ForceApproval, OnBlocked, RolloutPhase,
    Wave, WavePhase,
};
use crate::rollout::preflight::{blocks, summary};
use crate::rollout::windows::{self, Window, WindowState};

/// A Cluster's pre-flight as the plan decides on it.
enum Gate {
    /// No pre-flight blocks it (or none was gathered): it may be switched.
    Go,
    /// Its pre-flight blocks it and nobody let it go.
    Blocked,
}

/// The parsed windows of each wave: its own, else the rollout's.
fn wave_windows(spec: &ClusterStackRolloutSpec) -> Result<Vec<Vec<Window>>, String> {
    let rollout = windows::parse_all(&spec.windows, "spec.windows").map_err(first)?;
    spec.waves
        .iter()
        .enumerate()
        .map(|(i, wave): (usize, &Wave)| {
            if wave.windows.is_empty() {
                Ok(rollout.clone())
            } else {
                windows::parse_all(&wave.windows, &format!("spec.waves[{i}].windows")).map_err(first)
            }
        })
        .collect()
}

fn first(errors: Vec<windows::WindowError>) -> String {
    errors.first().map(ToString::to_string).unwrap_or_default()
}

/// `capstan.dev/force`: `ns/name[@who]` entries, comma-separated; who is `unknown` when unnamed.
fn forced_by<'a>(annotation: Option<&'a str>, cluster: &str) -> Option<&'a str> {
    annotation?.split(',').map(str::trim).find_map(|item| {
        let (name, who) = item.split_once('@').unwrap_or((item, "unknown"));
        (name == cluster).then_some(who)
    })
}

impl Planner<'_, '_> {
    /// Reads the windows of every wave (its own, else the rollout's), or why they are invalid.
    pub(super) fn read_windows(&mut self) -> Result<(), String> {
        self.windows = wave_windows(self.o.spec)?;
        Ok(())
    }

    /// Whether Pending `entry` waits for its pre-flight: the pass gathered none for it because
    /// it became due in this very pass (its wave started, or its path's previous step turned
    /// healthy). It is never switched unchecked: the next pass, asked for at once, gathers it.
    /// Not Blocked (`onBlocked: Halt` must not halt on it).
    pub(super) fn awaits_preflight(&mut self, entry: &mut ClusterRolloutStatus) -> bool {
        if !self.o.preflight_required
            || entry.phase != ClusterPhase::Pending
            || self.o.preflight.contains_key(&entry.name)
        {
            return false;
        }
        entry.message = Some("waiting for its pre-flight".to_string());
        self.requeue_in(std::time::Duration::from_secs(1));
        true
    }

    /// Whether `entry`'s pre-flight blocks it now (see [`Planner::preflight_gate`]). A Blocked
    /// Cluster its gate lets go (evidence cleared, or forced) waits as Pending again: left
    /// Blocked, `onBlocked: Halt` would halt on it after this pass switched others.
    pub(super) fn preflight_blocks(&mut self, entry: &mut ClusterRolloutStatus, now: Timestamp) -> bool {
        match self.preflight_gate(entry, now) {
            Gate::Blocked => true,
            Gate::Go => {
                if entry.phase == ClusterPhase::Blocked {
                    entry.phase = ClusterPhase::Pending;
                    entry.since = None;
                    entry.message = Some(match &entry.forced {
                        Some(f) => format!("let go by {} despite its pre-flight", f.by),
                        None => "its pre-flight passes now".to_string(),
                    });
                }
                false
            }
        }
    }

    /// Whether the wave at `index` may start switches now; records the next opening and
    /// reports a window closing or opening.
    pub(super) fn window_open(&mut self, index: usize) -> bool {
        let Some(windows) = self.windows.get(index) else {
            return true;
        };
        match windows::state(windows, self.exact_now) {
            WindowState::Always | WindowState::Open { .. } => {
                if self.status.phase == RolloutPhase::WaitingForWindow {
                    self.event(
                        "WindowOpened",
                        "a maintenance window opened: switches go on",
                        false,
                    );
                }
                self.status.next_window = None;
                true
            }
            WindowState::Closed { opens } => {
                self.status.next_window = opens.map(Time);
                if self.status.phase != RolloutPhase::WaitingForWindow {
                    let next = opens.map_or_else(|| "never".to_string(), |t| t.to_string());
                    let message = format!("outside every maintenance window: no switch starts before {next}");
                    self.event("WindowClosed", &message, false);
                }
                if let Some(at) = opens {
                    self.requeue_in(
                        super::clock::elapsed(self.exact_now, at).max(std::time::Duration::from_secs(1)),
                    );
                }
                false
            }
        }
    }

    /// The pre-flight gate of one Pending or Blocked Cluster: blocks it (recording the
    /// evidence) or lets it go (recording a force approval when one let it).
    fn preflight_gate(&mut self, entry: &mut ClusterRolloutStatus, now: Timestamp) -> Gate {
        let step = entry.step.unwrap_or(0);
        let Some(results) = self.o.preflight.get(&entry.name) else {
            // Not gathered this time: a Blocked Cluster stays blocked on its recorded evidence.
            return if entry.phase == ClusterPhase::Blocked {
                self.still_blocked(entry, now, step)
            } else {
                Gate::Go
            };
        };
        entry.preflight = results.clone();
        if !blocks(results) {
            return Gate::Go;
        }
        self.still_blocked(entry, now, step)
    }

    fn still_blocked(&mut self, entry: &mut ClusterRolloutStatus, now: Timestamp, step: u32) -> Gate {
        if entry.forced.as_ref().is_some_and(|f| f.step == step) {
            return Gate::Go;
        }
        if let Some(by) = forced_by(self.o.annotations.force, &entry.name) {
            entry.forced = Some(ForceApproval {
                by: by.to_string(),
                at: Time(now),
                step,
            });
            let message = format!(
                "{} let go by {by} despite its pre-flight: {}",
                entry.name,
                summary(&entry.preflight)
            );
            self.event("PreflightForced", &message, true);
            return Gate::Go;
        }
        let why = summary(&entry.preflight);
        if entry.phase != ClusterPhase::Blocked {
            entry.phase = ClusterPhase::Blocked;
            entry.since = Some(Time(now));
            self.event(
                "PreflightBlocked",
                &format!("{} blocked: {why}", entry.name),
                true,
            );
        }
        entry.message = Some(format!("blocked by its pre-flight: {why}"));
        Gate::Blocked
    }

    /// `onBlocked: Halt` and a Cluster of the current wave is Blocked: the rollout halts.
    pub(super) fn halt_on_blocked(&mut self, index: usize) -> bool {
        if self.o.spec.preflight.on_blocked != OnBlocked::Halt {
            return false;
        }
        let wave = &self.o.spec.waves[index].name;
        let blocked: Vec<String> = self
            .status
            .clusters
            .iter()
            .filter(|c| &c.wave == wave && c.phase == ClusterPhase::Blocked)
            .map(|c| c.name.clone())
            .collect();
        if blocked.is_empty() {
            return false;
        }
        self.status.phase = RolloutPhase::Halted;
        self.status.halted_at = Some(Time(self.now));
        self.status.waves[index].phase = WavePhase::Halted;
        let message = format!(
            "halted: Cluster(s) blocked by their pre-flight or without a path (onBlocked: Halt): {}",
            blocked.join(", ")
        );
        self.status.message = Some(message.clone());
        self.message = Some(message.clone());
        self.event("Halted", &message, true);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::forced_by;

    #[test]
    fn the_force_annotation_names_clusters_and_who() {
        let value = Some("tenant-a/prod-1@alice, tenant-a/prod-2");
        assert_eq!(forced_by(value, "tenant-a/prod-1"), Some("alice"));
        assert_eq!(forced_by(value, "tenant-a/prod-2"), Some("unknown"));
        assert_eq!(forced_by(value, "tenant-a/prod-3"), None);
        assert_eq!(forced_by(None, "tenant-a/prod-1"), None);
    }
}
