//! One controller's record of its objects' failed reconciles: how many failed in a row (the
//! backoff climbs with it) and the last error text reported (a Warning event only when it
//! changes). Each controller keeps its own; keys are `Kind/namespace/name`.

use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Default)]
pub struct Failures {
    /// Failed reconciles in a row per object.
    in_a_row: Mutex<HashMap<String, u32>>,
    /// Last error text per object.
    last_errors: Mutex<HashMap<String, String>>,
}

impl Failures {
    /// Counts a failure of `key` and returns how many happened in a row.
    pub fn failed(&self, key: &str) -> u32 {
        let mut failures = lock(&self.in_a_row);
        let count = failures.entry(key.to_string()).or_insert(0);
        *count = count.saturating_add(1);
        *count
    }

    /// Forgets the failures of `key` after a success.
    pub fn succeeded(&self, key: &str) {
        lock(&self.in_a_row).remove(key);
    }

    /// Records `error` as the last one of `key` (`None` clears it, so the next error is
    /// reported again); whether it is to be reported (not the one reported last).
    pub fn is_new_error(&self, key: &str, error: Option<&str>) -> bool {
        let mut last = lock(&self.last_errors);
        match error {
            None => {
                last.remove(key);
                false
            }
            Some(text) => last.insert(key.to_string(), text.to_string()).as_deref() != Some(text),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_count_in_a_row_and_errors_are_reported_when_they_change() {
        let failures = Failures::default();
        assert_eq!(failures.failed("a"), 1);
        assert_eq!(failures.failed("a"), 2);
        assert_eq!(failures.failed("b"), 1);
        failures.succeeded("a");
        assert_eq!(failures.failed("a"), 1);

        assert!(failures.is_new_error("a", Some("boom")));
        assert!(!failures.is_new_error("a", Some("boom")), "the same error again");
        assert!(failures.is_new_error("b", Some("boom")), "another object");
        assert!(failures.is_new_error("a", Some("bang")));
        assert!(!failures.is_new_error("a", None));
        assert!(
            failures.is_new_error("a", Some("bang")),
            "reported again after a success"
        );
    }
}
