//! The `rate(N unit)` and `at(local time)` forms of an expression.

use chrono::NaiveDateTime;

use crate::error::ScheduleError;

/// Longest `rate()` interval: ten years of days.
pub const MAX_RATE_SECS: i64 = 3650 * 86_400;

pub(super) fn parse_rate(s: &str) -> Result<i64, ScheduleError> {
    let err = |m: &str| ScheduleError::Expression(format!("'{s}': {m}"));
    let inner = s
        .get(4..)
        .map(str::trim_start)
        .and_then(|r| r.strip_prefix('('))
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| err("expected rate(N seconds|minutes|hours|days)"))?;
    let mut parts = inner.split_whitespace();
    let (Some(n), Some(unit), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(err("expected rate(N unit), e.g. rate(10 minutes)"));
    };
    let n: i64 = if n.bytes().all(|b| b.is_ascii_digit()) && n.len() <= 12 {
        n.parse().map_err(|_| err("the interval is not a whole number"))?
    } else {
        return Err(err(&format!("the interval '{n}' is not a whole number")));
    };
    if n == 0 {
        return Err(err("the interval must be at least 1"));
    }
    let unit_secs = match unit.to_ascii_lowercase().as_str() {
        "second" | "seconds" => 1,
        "minute" | "minutes" => 60,
        "hour" | "hours" => 3600,
        "day" | "days" => 86_400,
        other => return Err(err(&format!("unknown unit '{other}'; use seconds, minutes, hours or days"))),
    };
    let total = n.saturating_mul(unit_secs);
    if total > MAX_RATE_SECS {
        return Err(err("the interval is longer than 3650 days"));
    }
    Ok(total)
}

pub(super) fn parse_at(s: &str) -> Result<NaiveDateTime, ScheduleError> {
    let err = |m: &str| ScheduleError::Expression(format!("'{s}': {m}"));
    let inner = s
        .get(2..)
        .map(str::trim_start)
        .and_then(|r| r.strip_prefix('('))
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| err("expected at(YYYY-MM-DDTHH:MM:SS)"))?
        .trim();
    let b = inner.as_bytes();
    if b.len() > 19 && (inner.ends_with('Z') || inner.ends_with('z') || b[19] == b'+' || b[19] == b'-') {
        return Err(err(
            "at() takes a local time in the job's zone, without offset or 'Z'; set the zone in 'timezone'",
        ));
    }
    if b.len() != 19
        || b[4] != b'-'
        || b[7] != b'-'
        || (b[10] != b'T' && b[10] != b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return Err(err("expected at(YYYY-MM-DDTHH:MM:SS)"));
    }
    let t = NaiveDateTime::parse_from_str(&inner.replace('t', "T"), "%Y-%m-%dT%H:%M:%S")
        .map_err(|_| err("not a real date and time"))?;
    let year = chrono::Datelike::year(&t);
    if !(1970..=2100).contains(&year) {
        return Err(err("the year must be between 1970 and 2100"));
    }
    Ok(t)
}
