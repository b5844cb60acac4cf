//! A clock the test moves: [`ManualClock`] implements the core's [`Clock`], so it goes wherever
//! production code takes an `Arc<dyn Clock>` (the worker, the API). Time-based behaviour (a lease
//! running out, a policy wait) is then shown by setting or advancing it, never by sleeping.
//!
//! One caution for workers talking to the emulator: a worker compares its clock with the `Date`
//! header of every DynamoDB response and stops taking over leases when they disagree by more than
//! its tolerated skew (`execution::clock::SkewGuard`). A test that moves a worker's clock far from
//! the host's therefore tests that guard; to expire a lease instead, start the clock in the past
//! and advance it to about now.

use chrono::{DateTime, Duration, Utc};
use std::sync::Mutex;
use sundial_core::execution::clock::Clock;

/// A clock that stands still until the test sets or advances it.
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    /// A clock reading `t`.
    pub fn new(t: DateTime<Utc>) -> Self {
        ManualClock(Mutex::new(t))
    }

    /// Moves the clock to `t` (backwards too).
    pub fn set(&self, t: DateTime<Utc>) {
        *self.lock() = t;
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        *self.lock() += d;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, DateTime<Utc>> {
        // A test that panicked while holding the lock has already failed; keep reading its time.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn it_reads_what_the_test_set_and_moves_only_when_told() {
        let t = DateTime::parse_from_rfc3339("2026-12-01T10:00:00Z").map(|d| d.with_timezone(&Utc));
        let t = t.unwrap_or_else(|e| panic!("{e}"));
        let clock = Arc::new(ManualClock::new(t));
        let shared: Arc<dyn Clock> = clock.clone();
        assert_eq!(shared.now(), t);
        clock.advance(Duration::milliseconds(1_500));
        assert_eq!(shared.now_ms(), t.timestamp_millis() + 1_500);
        clock.set(t);
        assert_eq!(shared.now(), t);
    }
}
