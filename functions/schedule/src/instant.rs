//! Bounds on every instant a request carries.
//!
//! chrono represents years ±262,143, and adding a duration near those ends panics. Sundial's
//! schedules live in 1970..=2100 (the `cron` crate stops at 2100, `at()` takes the same years),
//! so every instant that comes in from outside — `schedule.start`/`end`, preview's `after`,
//! backfill's `from`/`to` — is refused outside that range at deserialisation, where the error
//! still names the field, and no later arithmetic (a day's margin, a backfill pace) can
//! overflow.

use chrono::{DateTime, TimeZone, Utc};
use serde::{Deserialize, Deserializer};

/// The earliest instant accepted: 1970-01-01T00:00:00Z.
pub const MIN_SECS: i64 = 0;
/// The latest instant accepted: 2100-12-31T23:59:59Z.
pub const MAX_SECS: i64 = 4_133_980_799;

/// The message of an out-of-range instant.
pub const RANGE_MESSAGE: &str =
    "must be an RFC 3339 instant between 1970-01-01T00:00:00Z and 2100-12-31T23:59:59Z";

/// The earliest instant accepted.
pub fn min() -> DateTime<Utc> {
    Utc.timestamp_opt(MIN_SECS, 0).single().unwrap_or_default()
}

/// The latest instant accepted.
pub fn max() -> DateTime<Utc> {
    Utc.timestamp_opt(MAX_SECS, 999_999_999).single().unwrap_or_default()
}

/// Whether `t` is inside the supported range.
pub fn in_range(t: DateTime<Utc>) -> bool {
    (MIN_SECS..=MAX_SECS).contains(&t.timestamp())
}

/// `#[serde(deserialize_with = "crate::instant::bounded")]`: an RFC 3339 instant in range.
pub fn bounded<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
    let t = DateTime::<Utc>::deserialize(d)?;
    if in_range(t) {
        Ok(t)
    } else {
        Err(serde::de::Error::custom(RANGE_MESSAGE))
    }
}

/// [`bounded`] for an optional instant (`null` or absent is `None`).
pub fn bounded_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
    match Option::<DateTime<Utc>>::deserialize(d)? {
        Some(t) if !in_range(t) => Err(serde::de::Error::custom(RANGE_MESSAGE)),
        t => Ok(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct T {
        #[serde(deserialize_with = "bounded")]
        t: DateTime<Utc>,
        #[serde(default, deserialize_with = "bounded_opt")]
        o: Option<DateTime<Utc>>,
    }

    fn parse(s: &str) -> Result<T, String> {
        serde_json::from_str(s).map_err(|e| e.to_string())
    }

    #[test]
    fn the_ends_are_inclusive_and_beyond_them_is_refused() {
        assert_eq!(min().to_rfc3339(), "1970-01-01T00:00:00+00:00");
        assert_eq!(max().timestamp(), MAX_SECS);
        assert_eq!(max().format("%Y-%m-%dT%H:%M:%S").to_string(), "2100-12-31T23:59:59");
        assert!(parse(r#"{"t":"1970-01-01T00:00:00Z"}"#).is_ok());
        assert!(parse(r#"{"t":"2100-12-31T23:59:59.999Z","o":null}"#).is_ok());
        for bad in [
            r#"{"t":"1969-12-31T23:59:59Z"}"#,
            r#"{"t":"2101-01-01T00:00:00Z"}"#,
            r#"{"t":"-262143-01-01T00:00:00Z"}"#,
            r#"{"t":"+262142-12-31T23:59:59Z"}"#,
            r#"{"t":"2026-01-01T00:00:00Z","o":"+262142-12-31T23:59:59Z"}"#,
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains("between 1970") || e.contains("invalid"), "{bad}: {e}");
        }
    }
}
