//! Jittered requeue delays: drift passes and error retries of many objects that started
//! together (an operator restart, a fleet created at once) spread out instead of hitting the
//! API servers in the same second every interval.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// How far a requeue delay may move either way: ±10 %.
pub const JITTER: f64 = 0.1;

/// `base` moved by up to `fraction` of itself either way; `unit` (in `[0, 1)`, clamped) picks
/// where in that range: 0 is the shortest, 0.5 `base` itself, towards 1 the longest.
pub fn jittered(base: Duration, fraction: f64, unit: f64) -> Duration {
    let fraction = fraction.clamp(0.0, 1.0);
    let unit = if unit.is_finite() {
        unit.clamp(0.0, 1.0)
    } else {
        0.5
    };
    let factor = 1.0 - fraction + 2.0 * fraction * unit;
    base.mul_f64(factor)
}

/// [`jittered`] by [`JITTER`] at a random point.
pub fn jitter(base: Duration) -> Duration {
    jittered(base, JITTER, random_unit())
}

/// A random number in `[0, 1)`: the standard library's per-process random hash keys, advanced
/// on every call; plenty for spreading requeues, no generator crate needed.
pub(crate) fn random_unit() -> f64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0);
    // The top 53 bits fill an f64's mantissa exactly.
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delay_moves_within_its_fraction() {
        let ten_minutes = Duration::from_secs(600);
        #[rustfmt::skip]
        let table: &[(Duration, f64, f64, Duration)] = &[
            (ten_minutes, 0.1, 0.0, Duration::from_secs(540)),
            (ten_minutes, 0.1, 0.25, Duration::from_secs(570)),
            (ten_minutes, 0.1, 0.5, ten_minutes),
            (ten_minutes, 0.1, 1.0, Duration::from_secs(660)),
            // Out of range and not a number: clamped, or the middle.
            (ten_minutes, 0.1, -3.0, Duration::from_secs(540)),
            (ten_minutes, 0.1, 7.0, Duration::from_secs(660)),
            (ten_minutes, 0.1, f64::NAN, ten_minutes),
            (ten_minutes, 2.0, 0.0, Duration::ZERO),
            (ten_minutes, 0.0, 0.9, ten_minutes),
            (Duration::ZERO, 0.1, 0.9, Duration::ZERO),
            (Duration::from_secs(2), 0.1, 0.0, Duration::from_millis(1800)),
        ];
        for (i, &(base, fraction, unit, want)) in table.iter().enumerate() {
            let got = jittered(base, fraction, unit);
            let off = got.abs_diff(want);
            assert!(off < Duration::from_micros(1), "row {i}: {got:?} != {want:?}");
        }
    }

    #[test]
    fn random_delays_stay_in_range_and_spread() {
        let base = Duration::from_secs(100);
        let delays: Vec<Duration> = (0..200).map(|_| jitter(base)).collect();
        assert!(
            delays
                .iter()
                .all(|d| *d >= Duration::from_secs(90) && *d <= Duration::from_secs(110))
        );
        let below = delays.iter().filter(|d| **d < base).count();
        assert!((40..=160).contains(&below), "{below} of 200 below the base");
    }
}
