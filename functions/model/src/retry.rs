//! Retry classification, backoff and budgets: pure functions of their inputs (and `now`).
//!
//! docs/execution.md §4: a business error is never retried, because retrying a bug or an
//! unmet precondition only copies bad data; network, throttling and node failures are retried a
//! bounded number of times. The wait is `min(max, base·2^n)·rand(0.5, 1.5)`, and
//! three budgets stop the retries: attempts, age since the scheduled instant, and total run time.
//!
//! The jitter is not drawn from a global RNG but hashed from (execution id, attempt): it spreads a
//! thundering herd just as well (every execution gets its own factor), it needs no dependency,
//! and a test or an incident review can recompute the exact delay a retry got.

use crate::{JobDefinition, RetryPolicy};
use serde::{Deserialize, Serialize};
use std::fmt;

pub use crate::codes;

/// Whether an error is worth another attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ErrorClass {
    /// Network, throttling, 5xx, timeouts, crashed workers: retried within the budget.
    Retryable,
    /// Business or configuration errors: never retried (FAILED after one attempt).
    Permanent,
}

/// Why an attempt failed: a class that decides retrying, a stable code, and a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct RunError {
    /// Retryable or permanent.
    pub class: ErrorClass,
    /// A stable, short code (`Http503`, `Timeout`, `NonRetryable.Validation`).
    pub code: String,
    /// Human-readable detail (truncated when stored).
    pub message: String,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let class = match self.class {
            ErrorClass::Retryable => "retryable",
            ErrorClass::Permanent => "permanent",
        };
        write!(f, "{} ({class}): {}", self.code, self.message)
    }
}

impl RunError {
    /// The error a handler returns when it stopped because of its cancellation token.
    pub fn cancelled() -> RunError {
        RunError::retryable(codes::CANCELED, "stopped at a safe point after cancellation")
    }
    /// A retryable error.
    pub fn retryable(code: impl Into<String>, message: impl Into<String>) -> Self {
        RunError { class: ErrorClass::Retryable, code: code.into(), message: message.into() }
    }

    /// A permanent (business) error.
    pub fn permanent(code: impl Into<String>, message: impl Into<String>) -> Self {
        RunError { class: ErrorClass::Permanent, code: code.into(), message: message.into() }
    }

    /// Whether another attempt may succeed.
    pub fn is_retryable(&self) -> bool {
        self.class == ErrorClass::Retryable
    }
}

/// The three budgets of docs/execution.md §4, resolved for one execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Attempts in all (1 = no retry).
    pub max_attempts: u32,
    /// No attempt starts, and no retry is scheduled, this long after the scheduled instant (ms).
    pub max_age_ms: i64,
    /// Total run time over all attempts (ms).
    pub max_total_run_ms: i64,
}

impl Budget {
    /// The budget of a job definition. `RetryPolicy` has no total-run field, so the run budget
    /// is the worker's `max_total_run_ms` if set, else `maxAttempts × timeoutSecs` (every attempt
    /// may use its whole timeout, and no more).
    pub fn of(def: &JobDefinition, max_total_run_ms: Option<i64>) -> Self {
        let p = &def.retry;
        Budget {
            max_attempts: p.max_attempts.max(1),
            max_age_ms: i64::from(p.max_age_secs) * 1000,
            max_total_run_ms: max_total_run_ms
                .unwrap_or_else(|| i64::from(p.max_attempts.max(1)) * i64::from(def.timeout_secs) * 1000),
        }
    }

    /// Whether a claimed attempt may start: `None`, or the code of the budget it would break.
    /// Checked after every claim, because a takeover counts the crashed attempt too.
    pub fn may_start(
        &self,
        attempt: u32,
        scheduled_ms: i64,
        total_run_ms: i64,
        now_ms: i64,
    ) -> Option<&'static str> {
        if attempt > self.max_attempts {
            Some(codes::ATTEMPTS_EXHAUSTED)
        } else if now_ms - scheduled_ms > self.max_age_ms {
            Some(codes::MAX_AGE_EXCEEDED)
        } else if total_run_ms >= self.max_total_run_ms {
            Some(codes::RUN_BUDGET_EXHAUSTED)
        } else {
            None
        }
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// RETRY_WAIT until `available_at` (ms).
    Retry {
        /// When the execution may be claimed again (ms).
        available_at: i64,
        /// The backoff that produced it (ms).
        delay_ms: i64,
    },
    /// FAILED: a permanent error, never retried.
    Fail,
    /// DEAD: a retryable error with its budget used up; `reason` names the budget.
    Dead {
        /// Which budget ran out.
        reason: &'static str,
    },
}

/// Where an execution stands when an attempt fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// The attempt that failed (1-based).
    pub attempt: u32,
    /// The scheduled instant (ms).
    pub scheduled_ms: i64,
    /// Run time of all attempts so far, the failed one included (ms).
    pub total_run_ms: i64,
}

/// Decides RETRY_WAIT, FAILED or DEAD after an attempt failed with `err`; `unit` is the jitter
/// draw in `[0, 1)`.
pub fn after_failure(
    err: &RunError,
    at: &Progress,
    policy: &RetryPolicy,
    budget: &Budget,
    unit: f64,
    now_ms: i64,
) -> Verdict {
    let Progress { attempt, scheduled_ms, total_run_ms } = *at;
    if !err.is_retryable() {
        return Verdict::Fail;
    }
    if attempt >= budget.max_attempts {
        return Verdict::Dead { reason: codes::ATTEMPTS_EXHAUSTED };
    }
    if total_run_ms >= budget.max_total_run_ms {
        return Verdict::Dead { reason: codes::RUN_BUDGET_EXHAUSTED };
    }
    let delay_ms = backoff_ms(policy, attempt.saturating_sub(1), unit);
    let available_at = now_ms + delay_ms;
    if available_at - scheduled_ms > budget.max_age_ms {
        return Verdict::Dead { reason: codes::MAX_AGE_EXCEEDED };
    }
    Verdict::Retry { available_at, delay_ms }
}

/// The backoff before retry number `n` (0 for the first retry):
/// `min(max, base·2^n) · (0.5 + unit)`, so within `[0.5, 1.5)` of the capped exponential.
pub fn backoff_ms(policy: &RetryPolicy, n: u32, unit: f64) -> i64 {
    let base = f64::from(policy.base_delay_secs) * 1000.0;
    let cap = f64::from(policy.max_delay_secs) * 1000.0;
    let exp = base * 2f64.powi(n.min(62) as i32);
    let factor = 0.5 + unit.clamp(0.0, 0.999_999);
    (exp.min(cap) * factor).round() as i64
}

/// The bounds [`backoff_ms`] stays within for retry `n`: `(low, high)` in ms, inclusive.
pub fn backoff_bounds_ms(policy: &RetryPolicy, n: u32) -> (i64, i64) {
    let base = f64::from(policy.base_delay_secs) * 1000.0;
    let cap = f64::from(policy.max_delay_secs) * 1000.0;
    let capped = (base * 2f64.powi(n.min(62) as i32)).min(cap);
    ((capped * 0.5).round() as i64, (capped * 1.5).round() as i64)
}

/// A jitter draw in `[0, 1)` hashed from the execution id and attempt (splitmix64 of FNV-1a).
pub fn jitter_unit(execution_id: &str, attempt: u32) -> f64 {
    let h = sundial_hash::fnv1a(execution_id.as_bytes());
    let z = sundial_hash::mix64(h ^ u64::from(attempt).wrapping_mul(sundial_hash::GOLDEN_GAMMA));
    (z >> 11) as f64 / (1u64 << 53) as f64
}

impl From<crate::outbound::Refusal> for RunError {
    /// Always permanent: the same definition is refused on every attempt.
    fn from(r: crate::outbound::Refusal) -> Self {
        RunError::permanent(r.code, r.error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_draws_are_pinned() {
        // Every process must draw the same retry delay for the same attempt.
        assert_eq!(jitter_unit("acme:job-1@1764469800000", 1), 0.3798498662354741);
        assert_eq!(jitter_unit("acme:job-1@1764469800000", 2), 0.4259563403549629);
    }
    use proptest::prelude::*;

    fn policy(max_attempts: u32, base: u32, max: u32, age: u32) -> RetryPolicy {
        RetryPolicy { max_attempts, base_delay_secs: base, max_delay_secs: max, max_age_secs: age }
    }
    fn pr(attempt: u32, scheduled_ms: i64, total_run_ms: i64) -> Progress {
        Progress { attempt, scheduled_ms, total_run_ms }
    }
    fn budget(p: &RetryPolicy, run_ms: i64) -> Budget {
        Budget {
            max_attempts: p.max_attempts,
            max_age_ms: i64::from(p.max_age_secs) * 1000,
            max_total_run_ms: run_ms,
        }
    }

    #[test]
    fn a_business_error_is_never_retried_even_with_budget_left() {
        // GIVEN a generous budget WHEN the first attempt fails permanently
        let p = policy(10, 1, 60, 86_400);
        let v = after_failure(
            &RunError::permanent("Http400", "bad"),
            &pr(1, 0, 10),
            &p,
            &budget(&p, 1 << 40),
            0.5,
            1_000,
        );
        // THEN it fails at once
        assert_eq!(v, Verdict::Fail);
    }

    #[test]
    fn retryable_errors_retry_until_attempts_run_out() {
        let p = policy(3, 2, 300, 86_400);
        let b = budget(&p, 1 << 40);
        let e = RunError::retryable("Http503", "busy");
        // GIVEN attempts 1 and 2 fail WHEN deciding THEN both retry, with growing waits
        let Verdict::Retry { delay_ms: d1, .. } = after_failure(&e, &pr(1, 0, 1), &p, &b, 0.5, 0) else {
            panic!()
        };
        let Verdict::Retry { delay_ms: d2, .. } = after_failure(&e, &pr(2, 0, 1), &p, &b, 0.5, 0) else {
            panic!()
        };
        assert_eq!((d1, d2), (2_000, 4_000));
        // AND the third failure is DEAD
        assert_eq!(
            after_failure(&e, &pr(3, 0, 1), &p, &b, 0.5, 0),
            Verdict::Dead { reason: codes::ATTEMPTS_EXHAUSTED }
        );
    }

    #[test]
    fn age_and_run_time_budgets_end_retries() {
        let p = policy(10, 10, 10, 60);
        let e = RunError::retryable("Timeout", "slow");
        // GIVEN a retry that would start 65 s after the scheduled instant THEN DEAD (age)
        let v = after_failure(&e, &pr(1, 0, 1), &p, &budget(&p, 1 << 40), 0.5, 55_000);
        assert_eq!(v, Verdict::Dead { reason: codes::MAX_AGE_EXCEEDED });
        // GIVEN 30 s of run time against a 30 s budget THEN DEAD (run time)
        let v = after_failure(&e, &pr(1, 0, 30_000), &p, &budget(&p, 30_000), 0.5, 1_000);
        assert_eq!(v, Verdict::Dead { reason: codes::RUN_BUDGET_EXHAUSTED });
    }

    #[test]
    fn a_takeover_past_the_attempt_budget_may_not_start() {
        let p = policy(2, 1, 1, 3_600);
        let b = budget(&p, 100_000);
        assert_eq!(b.may_start(2, 0, 0, 10), None);
        assert_eq!(b.may_start(3, 0, 0, 10), Some(codes::ATTEMPTS_EXHAUSTED));
        assert_eq!(b.may_start(1, 0, 0, 3_600_001), Some(codes::MAX_AGE_EXCEEDED));
        assert_eq!(b.may_start(1, 0, 100_000, 10), Some(codes::RUN_BUDGET_EXHAUSTED));
    }

    #[test]
    fn the_default_run_budget_is_attempts_times_timeout() {
        let def: JobDefinition = serde_json::from_value(serde_json::json!({
            "schedule": {"expression": "rate(1 minute)", "timezone": "UTC"}, "target": {"type": "http", "url": "https://x"},
            "timeoutSecs": 10, "retry": {"maxAttempts": 4}
        }))
        .unwrap_or_else(|e| panic!("definition: {e}"));
        assert_eq!(Budget::of(&def, None).max_total_run_ms, 40_000);
        assert_eq!(Budget::of(&def, Some(5)).max_total_run_ms, 5);
    }

    #[test]
    fn jitter_is_spread_and_reproducible() {
        assert_eq!(jitter_unit("j@1", 1), jitter_unit("j@1", 1));
        let draws: Vec<f64> = (0..2000).map(|i| jitter_unit(&format!("job@{i}"), 1)).collect();
        assert!(draws.iter().all(|u| (0.0..1.0).contains(u)));
        let low = draws.iter().filter(|u| **u < 0.5).count();
        assert!((900..1100).contains(&low), "{low} of 2000 below 0.5");
    }

    proptest! {
        #[test]
        fn backoff_stays_within_its_bounds(base in 1u32..120, max in 1u32..3_600, n in 0u32..80, unit in 0.0f64..1.0) {
            let p = policy(5, base, max, 86_400);
            let d = backoff_ms(&p, n, unit);
            let (lo, hi) = backoff_bounds_ms(&p, n);
            prop_assert!(d >= lo && d <= hi, "{d} not in [{lo}, {hi}]");
            prop_assert!(hi <= i64::from(max) * 1500);
            prop_assert!(lo >= 500.min(i64::from(max) * 500));
        }

        #[test]
        fn a_retry_never_waits_past_the_cap_times_one_and_a_half(attempt in 1u32..20, unit in 0.0f64..1.0) {
            let p = policy(100, 2, 30, 86_400);
            let e = RunError::retryable("x", "y");
            if let Verdict::Retry { delay_ms, available_at } = after_failure(&e, &pr(attempt, 0, 0), &p, &budget(&p, 1 << 40), unit, 7) {
                prop_assert!((1_000..=45_000).contains(&delay_ms));
                prop_assert_eq!(available_at, 7 + delay_ms);
            }
        }
    }
}
