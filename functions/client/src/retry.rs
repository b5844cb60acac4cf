//! When to send a request again, and how long to wait first.
//!
//! Two questions decide a retry. *May the request be repeated?* A GET, or a POST carrying an
//! `Idempotency-Key` (the server answers a repeat with the first answer), may be sent again after
//! any retryable failure; any other request only after a 429, which refuses before doing
//! anything. *How long to wait?* The answer's `Retry-After` when it has one (the quota's next
//! minute, the store's `1`), otherwise exponential backoff. Both the attempts and the total wait
//! are bounded: a `Retry-After` longer than what is left of the budget returns the error at once
//! rather than waiting less than the server asked. Time comes from a [`Clock`], so tests run
//! the whole loop without sleeping.

use crate::error::Error;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime};

/// How many times and how long a request is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 = never retry).
    pub max_attempts: u32,
    /// Most time spent waiting between attempts, in all.
    pub max_total_wait: Duration,
    /// First backoff when the answer has no `Retry-After`; doubles each attempt.
    pub base_backoff: Duration,
    /// Largest backoff without `Retry-After`.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    /// 4 attempts, at most 60 s of waiting (a trigger-now rate limit asks for up to the next
    /// minute), backoff 0.5 s, 1 s, 2 s ... up to 8 s.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            max_total_wait: Duration::from_secs(60),
            base_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
        }
    }
}

impl RetryPolicy {
    /// Never retry.
    pub fn none() -> Self {
        RetryPolicy { max_attempts: 1, ..RetryPolicy::default() }
    }
}

/// Whether a request may be sent twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Safety {
    /// A GET, or a POST with an `Idempotency-Key` (retried with the same key).
    Repeatable,
    /// Anything else: retried only when refused before it did anything (429).
    Once,
}

/// The wait before attempt `attempts + 1`, or `None` to return `err`. `waited` is the time
/// already spent waiting for this request.
pub(crate) fn next_wait(
    policy: &RetryPolicy,
    safety: Safety,
    attempts: u32,
    waited: Duration,
    err: &Error,
) -> Option<Duration> {
    if attempts >= policy.max_attempts {
        return None;
    }
    let retryable = match safety {
        Safety::Repeatable => err.is_retryable(),
        Safety::Once => err.api().is_some_and(|e| e.refused_before_effect()),
    };
    if !retryable {
        return None;
    }
    let wait = err.api().and_then(|e| e.retry_after).unwrap_or_else(|| backoff(policy, attempts));
    (waited + wait <= policy.max_total_wait).then_some(wait)
}

/// Exponential backoff after `attempts` attempts (1 → base).
fn backoff(policy: &RetryPolicy, attempts: u32) -> Duration {
    let factor = 1u32 << attempts.saturating_sub(1).min(16);
    policy.base_backoff.saturating_mul(factor).min(policy.max_backoff)
}

/// Parses a `Retry-After` value: delay seconds (`"30"`) or an HTTP-date (`"Wed, 21 Oct 2026
/// 07:28:00 GMT"`, counted from `now`; a date in the past is no wait). Anything else is `None`.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        // More digits than a u64 holds is still "a long time".
        return Some(Duration::from_secs(v.parse().unwrap_or(u64::MAX)));
    }
    let at = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let at = SystemTime::UNIX_EPOCH + Duration::from_millis(u64::try_from(at.timestamp_millis()).ok()?);
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Where the client reads the time (request signing, HTTP-date `Retry-After`) and how it waits
/// between attempts.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Now.
    fn now(&self) -> SystemTime;
    /// A future that completes after `d`.
    fn sleep(&self, d: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// The system clock and `tokio::time::sleep`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
    fn sleep(&self, d: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(tokio::time::sleep(d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{api_error, Error};

    fn err(status: u16, code: &str, retry_after: Option<u64>) -> Error {
        let body = format!(r#"{{"error":{{"code":"{code}","message":"m","field":null}}}}"#);
        Error::Api(api_error(status, body.as_bytes(), retry_after.map(Duration::from_secs)))
    }

    fn transport() -> Error {
        Error::Transport { url: "http://x".into(), source: "connection reset".into() }
    }

    #[test]
    fn retry_after_is_seconds_or_an_http_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_119_200); // 2026-12-01T10:00:00Z
        assert_eq!(parse_retry_after("0", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after(" 17 ", now), Some(Duration::from_secs(17)));
        assert_eq!(parse_retry_after("99999999999999999999999", now), Some(Duration::from_secs(u64::MAX)));
        assert_eq!(parse_retry_after("Tue, 01 Dec 2026 10:00:42 GMT", now), Some(Duration::from_secs(42)));
        assert_eq!(parse_retry_after("Tue, 01 Dec 2026 09:00:00 GMT", now), Some(Duration::ZERO));
        for bad in ["", "-1", "1.5", "soon", "2026-12-01T10:00:42Z"] {
            assert_eq!(parse_retry_after(bad, now), None, "{bad}");
        }
    }

    #[test]
    fn repeatable_requests_retry_what_may_succeed_later_and_wait_as_told() {
        let p = RetryPolicy::default();
        let r = Safety::Repeatable;
        // Retry-After wins over backoff, for 429 and 503 alike.
        assert_eq!(
            next_wait(&p, r, 1, Duration::ZERO, &err(429, "rate_limited", Some(7))),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            next_wait(&p, r, 1, Duration::ZERO, &err(503, "unavailable", Some(1))),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            next_wait(&p, r, 1, Duration::ZERO, &err(409, "idempotency_in_progress", Some(1))),
            Some(Duration::from_secs(1))
        );
        // Without it: exponential backoff, capped.
        let waits: Vec<_> = (1..=3).map(|a| next_wait(&p, r, a, Duration::ZERO, &transport())).collect();
        assert_eq!(waits, [500, 1000, 2000].map(|ms| Some(Duration::from_millis(ms))));
        let many = RetryPolicy { max_attempts: 20, max_total_wait: Duration::from_secs(3600), ..p };
        assert_eq!(next_wait(&many, r, 10, Duration::ZERO, &transport()), Some(p.max_backoff));
        // Permanent errors are returned at once.
        for (s, c) in
            [(400, "validation_failed"), (404, "not_found"), (409, "already_exists"), (500, "internal")]
        {
            assert_eq!(next_wait(&p, r, 1, Duration::ZERO, &err(s, c, Some(1))), None, "{s} {c}");
        }
    }

    #[test]
    fn attempts_and_total_wait_are_bounded() {
        let p = RetryPolicy::default();
        let e = err(503, "unavailable", Some(1));
        assert_eq!(next_wait(&p, Safety::Repeatable, p.max_attempts, Duration::ZERO, &e), None);
        // A Retry-After past the remaining budget gives up now instead of waiting less.
        let late = err(429, "rate_limited", Some(59));
        assert_eq!(next_wait(&p, Safety::Repeatable, 1, Duration::from_secs(2), &late), None);
        assert_eq!(
            next_wait(&p, Safety::Repeatable, 1, Duration::from_secs(1), &late),
            Some(Duration::from_secs(59))
        );
        assert_eq!(next_wait(&RetryPolicy::none(), Safety::Repeatable, 1, Duration::ZERO, &e), None);
    }

    #[test]
    fn other_requests_retry_only_what_was_refused_before_taking_effect() {
        let p = RetryPolicy::default();
        let once = Safety::Once;
        assert_eq!(
            next_wait(&p, once, 1, Duration::ZERO, &err(429, "http_429", Some(2))),
            Some(Duration::from_secs(2))
        );
        // A 503 or a lost answer may come after the write: a pause or cancel is not repeated.
        assert_eq!(next_wait(&p, once, 1, Duration::ZERO, &err(503, "unavailable", Some(1))), None);
        assert_eq!(next_wait(&p, once, 1, Duration::ZERO, &transport()), None);
    }
}
