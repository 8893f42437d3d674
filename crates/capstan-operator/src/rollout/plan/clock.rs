//! Times as the rollout's status keeps them (whole seconds) and durations as its spec writes
//! them.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

pub(super) fn whole_second(t: Timestamp) -> Timestamp {
    Timestamp::from_second(t.as_second()).unwrap_or(t)
}

/// `t` rounded up to the second.
pub(super) fn ceil_second(t: Timestamp) -> Timestamp {
    let floor = whole_second(t);
    if floor == t {
        return t;
    }
    Timestamp::from_second(floor.as_second().saturating_add(1)).unwrap_or(t)
}

pub(super) fn add(t: Timestamp, d: Duration) -> Timestamp {
    let millis = i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 2);
    Timestamp::from_millisecond(t.as_millisecond().saturating_add(millis)).unwrap_or(Timestamp::MAX)
}

/// From `from` to `to`; zero when `to` is earlier.
pub(super) fn elapsed(from: Timestamp, to: Timestamp) -> Duration {
    let millis = to.as_millisecond() - from.as_millisecond();
    Duration::from_millis(u64::try_from(millis).unwrap_or(0))
}

/// `30m`, `1h30m`, `45s`: a duration as the spec writes it.
pub(super) fn human(d: Duration) -> String {
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || out.is_empty() {
        out.push_str(&format!("{s}s"));
    }
    out
}
