//! Dispatch jitter, like EventBridge Scheduler's flexible time window: the fire scheduled at
//! `scheduled_at` is dispatched at `scheduled_at + offset` with `0 <= offset < window`, so that
//! thousands of jobs on the same minute do not hit their targets in the same millisecond.
//!
//! The offset is a pure function of `(job_id, scheduled_at)`: a repeated tick, a retry or
//! another process computes the same instant. It uses FNV-1a with a SplitMix64 finaliser
//! (`sundial-hash`), because `std`'s `RandomState` is seeded per process and `DefaultHasher`'s
//! algorithm is not guaranteed to stay the same across Rust releases.

use chrono::{DateTime, Duration, Utc};

use sundial_hash::{mix64 as mix, Fnv1a};

/// The stable 64-bit hash of `(job_id, scheduled_at)`.
pub(crate) fn stable_hash(job_id: &str, scheduled_at: DateTime<Utc>) -> u64 {
    let h = Fnv1a::new()
        .write(job_id.as_bytes())
        // A separator so ("a", t) and ("a\0..", t') cannot share a byte stream.
        .write(&[0xff])
        .write(&scheduled_at.timestamp().to_be_bytes())
        .write(&scheduled_at.timestamp_subsec_nanos().to_be_bytes());
    mix(h.finish())
}

/// The dispatch delay of the fire of `job_id` scheduled at `scheduled_at`, in whole
/// milliseconds, uniform over `[0, window_secs)`. Zero when `window_secs` is 0.
pub fn jitter_offset(job_id: &str, scheduled_at: DateTime<Utc>, window_secs: u32) -> Duration {
    if window_secs == 0 {
        return Duration::zero();
    }
    let window_ms = u64::from(window_secs) * 1000;
    // Bias of the modulo: window_ms / 2^64 < 1e-11, negligible.
    Duration::milliseconds((stable_hash(job_id, scheduled_at) % window_ms) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_values_never_change() {
        // Stored executions depend on these staying put across releases.
        let t = DateTime::from_timestamp(1_780_000_000, 0).unwrap();
        let a = jitter_offset("job-1", t, 300);
        assert_eq!(a, jitter_offset("job-1", t, 300));
        assert_eq!(a, Duration::milliseconds(PINNED_JOB1_300));
        assert!(a >= Duration::zero() && a < Duration::seconds(300));
        assert_eq!(stable_hash("", DateTime::from_timestamp(0, 0).unwrap()), PINNED_EMPTY);
    }

    const PINNED_JOB1_300: i64 = 283_300;
    const PINNED_EMPTY: u64 = 5_207_844_122_444_827_249;
}
