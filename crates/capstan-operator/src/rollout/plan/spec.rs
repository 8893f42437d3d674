//! What the plan reads of the spec beyond the status: its durations, parsed, and
//! `maxInFlight`.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::api::rollout::{ClusterStackRolloutSpec, Wave};

/// The durations of a spec, parsed.
pub(super) struct Durations {
    pub(super) timeout: Duration,
    pub(super) soaks: Vec<Duration>,
}

pub(super) fn durations(spec: &ClusterStackRolloutSpec) -> Result<Durations, String> {
    let timeout = spec.health.timeout().map_err(|e| e.to_string())?;
    let soaks = spec
        .waves
        .iter()
        .map(Wave::soak)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    Ok(Durations { timeout, soaks })
}

/// `maxInFlight` of a wave of `total` Clusters: a number, or a percentage rounded down; at
/// least 1 (also for 0 or a value that does not parse, which the webhook refuses).
pub fn max_in_flight(value: Option<&IntOrString>, total: usize) -> usize {
    let limit = match value {
        None => 1,
        Some(IntOrString::Int(n)) => usize::try_from(*n).unwrap_or(1),
        Some(IntOrString::String(text)) => parse_percent(text).map_or(1, |p| total * p / 100),
    };
    limit.max(1)
}

/// `"25%"` → 25.
pub fn parse_percent(text: &str) -> Option<usize> {
    text.strip_suffix('%')?.parse().ok()
}
