//! The sources of randomness and time that template functions use, injectable so renders
//! can be made deterministic in tests.

/// Randomness and clock for template functions (`randAlphaNum`, `genCA`, `now`, …).
pub struct FuncEnv {
    seed: Option<u64>,
    fixed_unix_seconds: Option<i64>,
}

impl FuncEnv {
    /// OS randomness and the system clock: what a real render uses.
    pub fn system() -> FuncEnv {
        FuncEnv {
            seed: None,
            fixed_unix_seconds: None,
        }
    }

    /// A seeded generator and a fixed clock (`unix_seconds` since the epoch, UTC).
    pub fn deterministic(seed: u64, unix_seconds: i64) -> FuncEnv {
        FuncEnv {
            seed: Some(seed),
            fixed_unix_seconds: Some(unix_seconds),
        }
    }

    pub fn seed(&self) -> Option<u64> {
        self.seed
    }

    pub fn fixed_unix_seconds(&self) -> Option<i64> {
        self.fixed_unix_seconds
    }
}
