//! Parsing and validating the `expression` of a schedule.
//!
//! Three forms:
//! - cron: 6 or 7 fields with seconds (`sec min hour dom month dow [year]`), as the `cron` crate
//!   reads them (Quartz day-of-week numbering, 1 = Sunday); or the ordinary 5-field Unix form
//!   (`min hour dom month dow`, 0 or 7 = Sunday), normalised to the 6-field form with
//!   seconds = 0, its day-of-week numbers translated, and Vixie cron's OR rule for day-of-month
//!   and day-of-week; `@yearly`, `@monthly`, `@weekly`, `@daily`, `@hourly` too.
//! - `rate(N seconds|minutes|hours|days)`.
//! - `at(YYYY-MM-DDTHH:MM:SS)`, a local time in the job's zone.
//!
//! Each field is checked here first, so an error names the field and the token at fault; the
//! `cron` crate then parses the normalised text (its own messages are terse, and it never sees
//! a form it would misread).

use std::str::FromStr;

use chrono::{NaiveDateTime, TimeZone, Utc};

use super::error::ScheduleError;

/// Longest expression accepted.
pub const MAX_EXPRESSION_LEN: usize = 256;
/// Longest `rate()` interval: ten years of days.
pub const MAX_RATE_SECS: i64 = 3650 * 86_400;

/// A parsed expression.
#[derive(Debug, Clone)]
pub(crate) enum Expr {
    Cron(CronExpr),
    /// Every `period_secs` seconds from the anchor.
    Rate {
        period_secs: i64,
    },
    /// One local time in the job's zone.
    At(NaiveDateTime),
}

/// A cron expression as one or two `cron` crate schedules over *local wall-clock* time; two
/// when the 5-field form restricts both day-of-month and day-of-week (Vixie OR: a day matches
/// if either matches).
#[derive(Debug, Clone)]
pub(crate) struct CronExpr {
    pub(crate) branches: Vec<cron::Schedule>,
    /// The normalised 6/7-field text handed to the `cron` crate (branches joined by ` | `).
    pub(crate) normalized: String,
}

impl CronExpr {
    /// The first matching wall time strictly after `wall` (second granularity).
    #[inline]
    pub(crate) fn next_wall(&self, wall: NaiveDateTime) -> Option<NaiveDateTime> {
        let at = Utc.from_utc_datetime(&wall);
        let mut best: Option<NaiveDateTime> = None;
        for b in &self.branches {
            if let Some(n) = b.after(&at).next() {
                let n = n.naive_utc();
                best = Some(best.map_or(n, |x| x.min(n)));
            }
        }
        best
    }

    /// Whether `wall` is one of the expression's times (tests use it as an oracle).
    #[cfg(test)]
    pub(crate) fn matches(&self, wall: NaiveDateTime) -> bool {
        let at = Utc.from_utc_datetime(&wall);
        self.branches.iter().any(|b| b.includes(at))
    }

    /// The last matching wall time strictly before `wall` (second granularity).
    #[inline]
    pub(crate) fn prev_wall(&self, wall: NaiveDateTime) -> Option<NaiveDateTime> {
        let at = Utc.from_utc_datetime(&wall);
        let mut best: Option<NaiveDateTime> = None;
        for b in &self.branches {
            if let Some(n) = b.after(&at).next_back() {
                let n = n.naive_utc();
                best = Some(best.map_or(n, |x| x.max(n)));
            }
        }
        best
    }
}

pub(crate) fn parse_expression(input: &str) -> Result<Expr, ScheduleError> {
    let err = |m: String| ScheduleError::Expression(m);
    // Control characters (tabs, newlines) act as spaces, which also keeps every message on one
    // line.
    let cleaned: String = input.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let s = cleaned.trim();
    if s.is_empty() {
        return Err(err("is empty; expected a cron expression, rate(..) or at(..)".into()));
    }
    if s.len() > MAX_EXPRESSION_LEN {
        return Err(err(format!("is {} characters long; at most {MAX_EXPRESSION_LEN} are allowed", s.len())));
    }
    let lower = s.to_ascii_lowercase();
    if lower.starts_with("rate(") || lower.starts_with("rate ") || lower == "rate" {
        return parse_rate(s).map(|period_secs| Expr::Rate { period_secs });
    }
    if lower.starts_with("at(") || lower.starts_with("at ") || lower == "at" {
        return parse_at(s).map(Expr::At);
    }
    if lower.starts_with("cron(") {
        return Err(err("write the cron fields without the cron(..) wrapper: 6 or 7 fields with seconds \
             ('0 30 2 * * *'), or 5 Unix fields ('30 2 * * *')"
            .into()));
    }
    parse_cron(s).map(Expr::Cron)
}

fn parse_rate(s: &str) -> Result<i64, ScheduleError> {
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

fn parse_at(s: &str) -> Result<NaiveDateTime, ScheduleError> {
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

/// Names accepted in the month field (both forms).
const MONTHS: &[(&str, u32)] = &[
    ("jan", 1),
    ("feb", 2),
    ("mar", 3),
    ("apr", 4),
    ("may", 5),
    ("jun", 6),
    ("jul", 7),
    ("aug", 8),
    ("sep", 9),
    ("oct", 10),
    ("nov", 11),
    ("dec", 12),
];
/// Day names in Unix numbering (0 = Sunday).
const DAYS_UNIX: &[(&str, u32)] =
    &[("sun", 0), ("mon", 1), ("tue", 2), ("wed", 3), ("thu", 4), ("fri", 5), ("sat", 6)];
/// Day names in the `cron` crate's (Quartz) numbering (1 = Sunday).
const DAYS_QUARTZ: &[(&str, u32)] =
    &[("sun", 1), ("mon", 2), ("tue", 3), ("wed", 4), ("thu", 5), ("fri", 6), ("sat", 7)];

struct FieldSpec {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [(&'static str, u32)],
    /// `?` accepted (day-of-month and day-of-week).
    any: bool,
    /// Extra words for range errors.
    hint: &'static str,
}

const SECONDS: FieldSpec = FieldSpec { name: "seconds", min: 0, max: 59, names: &[], any: false, hint: "" };
const MINUTES: FieldSpec = FieldSpec { name: "minutes", min: 0, max: 59, names: &[], any: false, hint: "" };
const HOURS: FieldSpec = FieldSpec { name: "hours", min: 0, max: 23, names: &[], any: false, hint: "" };
const DOM: FieldSpec = FieldSpec { name: "day-of-month", min: 1, max: 31, names: &[], any: true, hint: "" };
const MONTH: FieldSpec = FieldSpec { name: "month", min: 1, max: 12, names: MONTHS, any: false, hint: "" };
const DOW_QUARTZ: FieldSpec = FieldSpec {
    name: "day-of-week",
    min: 1,
    max: 7,
    names: DAYS_QUARTZ,
    any: true,
    hint: " (6/7-field form: 1 = Sunday .. 7 = Saturday; use SUN-SAT, or the 5-field Unix form where 0 = Sunday)",
};
const DOW_UNIX: FieldSpec = FieldSpec {
    name: "day-of-week",
    min: 0,
    max: 7,
    names: DAYS_UNIX,
    any: true,
    hint: " (5-field Unix form: 0 or 7 = Sunday, 1 = Monday .. 6 = Saturday)",
};
const YEAR: FieldSpec = FieldSpec { name: "year", min: 1970, max: 2100, names: &[], any: false, hint: "" };

/// Validates one field and returns the sorted values it selects.
fn parse_field(pos: usize, text: &str, spec: &FieldSpec) -> Result<Vec<u32>, ScheduleError> {
    let err = |m: String| ScheduleError::Expression(format!("field {pos} ({}) '{text}': {m}", spec.name));
    let mut selected = vec![false; (spec.max - spec.min + 1) as usize];
    for item in text.split(',') {
        if item.is_empty() {
            return Err(err("empty list item".into()));
        }
        if let Some(c) = item.chars().find(|c| matches!(c, 'L' | 'W' | '#' | 'l' | 'w')) {
            if !item.chars().all(|c| c.is_ascii_alphabetic()) || item.len() <= 2 {
                let what = match c {
                    '#' => "'#' (nth weekday of the month)",
                    'W' | 'w' => "'W' (nearest weekday)",
                    _ => "'L' (last day)",
                };
                return Err(err(format!("{what} is not supported")));
            }
        }
        let (base, step) = match item.split_once('/') {
            Some((b, s)) => {
                let step = number(s).ok_or_else(|| err(format!("step '{s}' is not a number")))?;
                if step == 0 || step > spec.max {
                    return Err(err(format!("step {step} must be between 1 and {}", spec.max)));
                }
                (b, Some(step))
            }
            None => (item, None),
        };
        let value = |t: &str| -> Result<u32, ScheduleError> {
            let v = if let Some(v) = number(t) {
                v
            } else if !t.is_empty() && t.chars().all(|c| c.is_ascii_alphabetic()) {
                if spec.names.is_empty() {
                    return Err(err(format!("'{t}' is not a number (this field takes no names)")));
                }
                let lower = t.to_ascii_lowercase();
                let key = lower.get(..3).unwrap_or(&lower);
                match spec.names.iter().find(|(n, _)| *n == key) {
                    Some((_, v)) if lower.len() == 3 || full_name_ok(&lower) => *v,
                    _ => return Err(err(format!("'{t}' is not a {} name", spec.name))),
                }
            } else {
                return Err(err(format!("'{t}' is not a number")));
            };
            if v < spec.min || v > spec.max {
                return Err(err(format!("{v} is out of range {}-{}{}", spec.min, spec.max, spec.hint)));
            }
            Ok(v)
        };
        let (lo, hi) = match base {
            "*" => (spec.min, spec.max),
            "?" if spec.any => {
                if step.is_some() {
                    return Err(err("'?' takes no step".into()));
                }
                (spec.min, spec.max)
            }
            "?" => return Err(err("'?' is only allowed in day-of-month and day-of-week".into())),
            "" => return Err(err("missing value".into())),
            b => match b.split_once('-') {
                Some((a, z)) => {
                    let (a, z) = (value(a)?, value(z)?);
                    if a > z {
                        return Err(err(format!(
                            "range {a}-{z} runs backwards (wrap-around is not supported)"
                        )));
                    }
                    (a, z)
                }
                None => {
                    let a = value(b)?;
                    (a, if step.is_some() { spec.max } else { a })
                }
            },
        };
        let step = step.unwrap_or(1);
        let mut v = lo;
        while v <= hi {
            selected[(v - spec.min) as usize] = true;
            v += step;
        }
    }
    Ok(selected.iter().enumerate().filter(|(_, s)| **s).map(|(i, _)| i as u32 + spec.min).collect())
}

fn full_name_ok(lower: &str) -> bool {
    const FULL: &[&str] = &[
        "january",
        "february",
        "march",
        "april",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "sunday",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "tues",
        "thurs",
    ];
    FULL.contains(&lower)
}

fn number(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 9 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Writes a value set as a `cron` crate list (`1-5,10,20-22`), or `*` when it is everything.
fn list(values: &[u32], spec: &FieldSpec) -> String {
    if values.len() as u32 == spec.max - spec.min + 1 {
        return "*".into();
    }
    let mut out = String::new();
    let mut i = 0;
    while i < values.len() {
        let mut j = i;
        while j + 1 < values.len() && values[j + 1] == values[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        if j > i {
            out.push_str(&format!("{}-{}", values[i], values[j]));
        } else {
            out.push_str(&values[i].to_string());
        }
        i = j + 1;
    }
    out
}

fn parse_cron(s: &str) -> Result<CronExpr, ScheduleError> {
    let shorthand = match s.to_ascii_lowercase().as_str() {
        "@yearly" | "@annually" => Some("0 0 0 1 1 *"),
        "@monthly" => Some("0 0 0 1 * *"),
        "@weekly" => Some("0 0 0 * * 1"),
        "@daily" | "@midnight" => Some("0 0 0 * * *"),
        "@hourly" => Some("0 0 * * * *"),
        _ if s.starts_with('@') => {
            return Err(ScheduleError::Expression(format!(
                "'{s}' is not a known shorthand; use @yearly, @monthly, @weekly, @daily or @hourly"
            )))
        }
        _ => None,
    };
    let fields: Vec<&str> = shorthand.unwrap_or(s).split_whitespace().collect();
    let branches_text: Vec<String> = match fields.len() {
        5 => {
            // Unix form: min hour dom month dow -> seconds = 0, dow translated, Vixie OR.
            let min = list(&parse_field(1, fields[0], &MINUTES)?, &MINUTES);
            let hour = list(&parse_field(2, fields[1], &HOURS)?, &HOURS);
            let dom = list(&parse_field(3, fields[2], &DOM)?, &DOM);
            let month = list(&parse_field(4, fields[3], &MONTH)?, &MONTH);
            let unix_days = parse_field(5, fields[4], &DOW_UNIX)?;
            // Unix 0..=7 (0 and 7 Sunday) -> crate 1..=7 (1 Sunday): n % 7 + 1.
            let mut crate_days: Vec<u32> = unix_days.iter().map(|d| d % 7 + 1).collect();
            crate_days.sort_unstable();
            crate_days.dedup();
            let dow = list(&crate_days, &DOW_QUARTZ);
            // Vixie cron: a field that starts with '*' counts as unrestricted; when both are
            // restricted, a day matches if either matches (OR), otherwise both must (AND).
            let dom_star = fields[2].starts_with('*') || fields[2] == "?";
            let dow_star = fields[4].starts_with('*') || fields[4] == "?";
            if dom_star || dow_star {
                vec![format!("0 {min} {hour} {dom} {month} {dow}")]
            } else {
                vec![format!("0 {min} {hour} {dom} {month} *"), format!("0 {min} {hour} * {month} {dow}")]
            }
        }
        6 | 7 => {
            let mut parts = vec![
                list(&parse_field(1, fields[0], &SECONDS)?, &SECONDS),
                list(&parse_field(2, fields[1], &MINUTES)?, &MINUTES),
                list(&parse_field(3, fields[2], &HOURS)?, &HOURS),
                list(&parse_field(4, fields[3], &DOM)?, &DOM),
                list(&parse_field(5, fields[4], &MONTH)?, &MONTH),
                list(&parse_field(6, fields[5], &DOW_QUARTZ)?, &DOW_QUARTZ),
            ];
            if let Some(y) = fields.get(6) {
                parts.push(list(&parse_field(7, y, &YEAR)?, &YEAR));
            }
            vec![parts.join(" ")]
        }
        n => {
            return Err(ScheduleError::Expression(format!(
                "'{s}' has {n} field{}; expected 5 (Unix: min hour dom month dow), 6 or 7 (with \
                 seconds: sec min hour dom month dow [year]), rate(..) or at(..)",
                if n == 1 { "" } else { "s" }
            )))
        }
    };
    let mut branches = Vec::with_capacity(branches_text.len());
    for t in &branches_text {
        let sched =
            cron::Schedule::from_str(t).map_err(|e| ScheduleError::Expression(format!("'{s}': {e}")))?;
        branches.push(sched);
    }
    let cron = CronExpr { branches, normalized: branches_text.join(" | ") };
    let epoch = chrono::NaiveDate::from_ymd_opt(1969, 12, 31).and_then(|d| d.and_hms_opt(23, 59, 59));
    if epoch.and_then(|e| cron.next_wall(e)).is_none() {
        return Err(ScheduleError::Expression(format!("'{s}' never matches a real date (e.g. 30 February)")));
    }
    Ok(cron)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(s: &str) -> String {
        match parse_expression(s).unwrap() {
            Expr::Cron(c) => c.normalized,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn five_field_form_is_normalised() {
        assert_eq!(norm("*/15 * * * *"), "0 0,15,30,45 * * * *");
        assert_eq!(norm("30 2 * * 1-5"), "0 30 2 * * 2-6");
        assert_eq!(norm("0 9 * * 0"), "0 0 9 * * 1");
        assert_eq!(norm("0 9 * * 7"), "0 0 9 * * 1");
        assert_eq!(norm("0 9 * * 5-7"), "0 0 9 * * 1,6-7");
        assert_eq!(norm("0 9 * * sat,sun"), "0 0 9 * * 1,7");
        assert_eq!(norm("0 9 * * */2"), "0 0 9 * * 1,3,5,7");
        assert_eq!(norm("0 0 1,15 * mon"), "0 0 0 1,15 * * | 0 0 0 * * 2");
        assert_eq!(norm("0 0 */10 * mon"), "0 0 0 1,11,21,31 * 2");
        assert_eq!(norm("0 0 9 ? * MON-FRI"), "0 0 9 * * 2-6");
    }

    #[test]
    fn rate_and_at() {
        assert!(matches!(parse_expression("rate(10 seconds)"), Ok(Expr::Rate { period_secs: 10 })));
        assert!(matches!(parse_expression("rate(1 day)"), Ok(Expr::Rate { period_secs: 86_400 })));
        assert!(matches!(parse_expression("at(2026-12-01T09:00:00)"), Ok(Expr::At(_))));
    }
}
