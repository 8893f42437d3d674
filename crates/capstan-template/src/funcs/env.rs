//! The sources of randomness and time that template functions use, injectable so renders
//! can be made deterministic in tests.

use std::cell::Cell;
use std::rc::Rc;

use rand_core::RngCore;

/// What Helm's `lookup apiVersion kind namespace name` asks for (an empty name lists).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LookupRequest<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

/// Answers `lookup` from a cluster: the object (or, for an empty name, the list object with
/// `items`) as JSON, `None` when it does not exist; an error fails the render.
pub type Lookup = Rc<dyn Fn(&LookupRequest<'_>) -> Result<Option<serde_json::Value>, String>>;

/// Randomness, clock and cluster access for template functions (`randAlphaNum`, `genCA`,
/// `now`, `lookup`, …).
pub struct FuncEnv {
    seed: Option<u64>,
    fixed_unix_seconds: Option<i64>,
    /// The state of the seeded generator (unused with OS randomness).
    seeded_state: Cell<u64>,
    /// `None`: offline, `lookup` finds nothing (like `helm template`).
    lookup: Option<Lookup>,
}

impl FuncEnv {
    /// OS randomness and the system clock: what a real render uses.
    pub fn system() -> FuncEnv {
        FuncEnv {
            seed: None,
            fixed_unix_seconds: None,
            seeded_state: Cell::new(0),
            lookup: None,
        }
    }

    /// A seeded generator and a fixed clock (`unix_seconds` since the epoch, UTC).
    pub fn deterministic(seed: u64, unix_seconds: i64) -> FuncEnv {
        FuncEnv {
            seed: Some(seed),
            fixed_unix_seconds: Some(unix_seconds),
            seeded_state: Cell::new(seed),
            lookup: None,
        }
    }

    /// The same environment with `lookup` answered by `lookup` (like `helm install`, which
    /// can see the cluster), instead of finding nothing.
    pub fn with_lookup(mut self, lookup: Lookup) -> FuncEnv {
        self.lookup = Some(lookup);
        self
    }

    pub fn lookup(&self) -> Option<&Lookup> {
        self.lookup.as_ref()
    }

    pub fn seed(&self) -> Option<u64> {
        self.seed
    }

    pub fn fixed_unix_seconds(&self) -> Option<i64> {
        self.fixed_unix_seconds
    }

    /// Fills `buf` with random bytes: the OS generator, or the seeded one when deterministic.
    pub fn fill_random(&self, buf: &mut [u8]) {
        if self.seed.is_none() && rand_core::OsRng.try_fill_bytes(buf).is_ok() {
            return;
        }
        if self.seed.is_none() {
            // No OS randomness (should not happen): fall back to a clock-seeded stream
            // rather than failing the render.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            self.seeded_state.set(self.seeded_state.get() ^ nanos);
        }
        for chunk in buf.chunks_mut(8) {
            let word = self.next_seeded().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }

    /// A uniformly random integer in `0..n` (`n > 0`), without modulo bias.
    pub fn random_below(&self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let mut b = [0u8; 8];
            self.fill_random(&mut b);
            let v = u64::from_le_bytes(b);
            if v < zone {
                return v % n;
            }
        }
    }

    /// SplitMix64: small, fast and good enough for reproducible test renders.
    fn next_seeded(&self) -> u64 {
        let s = self.seeded_state.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        self.seeded_state.set(s);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::FuncEnv;

    #[test]
    fn seeded_randomness_repeats() {
        let (a, b) = (FuncEnv::deterministic(7, 0), FuncEnv::deterministic(7, 0));
        let (mut x, mut y) = ([0u8; 13], [0u8; 13]);
        a.fill_random(&mut x);
        b.fill_random(&mut y);
        assert_eq!(x, y);
        assert!(a.random_below(10) < 10);
    }
}
