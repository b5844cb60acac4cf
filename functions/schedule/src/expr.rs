//! Parsing and validating the `expression` of a schedule.
//!
//! Three forms:
//! - cron: 6 or 7 fields with seconds (`sec min hour dom month dow [year]`), as the `cron` crate
//!   reads them (Quartz day-of-week numbering, 1 = Sunday); or the ordinary 5-field Unix form
//!   (`min hour dom month dow`, 0 or 7 = Sunday), normalised to the 6-field form with
//!   seconds = 0, its day-of-week numbers translated, and Vixie cron's OR rule for day-of-month
//!   and day-of-week; `@yearly`, `@monthly`, `@weekly`, `@daily`, `@hourly` too.
//!   Both forms take the Quartz day rules `L`, `L-n`, `LW`, `nW` (day-of-month) and `dL`, `d#k`
//!   (day-of-week, `d` in the form's own numbering: `6L` is the last Friday in the 6/7-field
//!   form, `5L` in the 5-field form, `FRIL` in both); those expressions are computed by
//!   `days::DayCron`, not by the crate.
//! - `rate(N seconds|minutes|hours|days)`.
//! - `at(YYYY-MM-DDTHH:MM:SS)`, a local time in the job's zone.
//!
//! Each field is checked here first, so an error names the field and the token at fault; the
//! `cron` crate then parses the normalised text (its own messages are terse, and it never sees
//! a form it would misread).

use std::str::FromStr;

use chrono::{NaiveDateTime, TimeZone, Utc};

use super::days::{self, DayCron, DomSel, DowSel};
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

/// A cron expression over *local wall-clock* time.
#[derive(Debug, Clone)]
pub(crate) struct CronExpr {
    engine: Engine,
    /// The normalised 6/7-field text (branches joined by ` | ` under the 5-field OR rule).
    pub(crate) normalized: String,
}

/// Who computes the wall times of a cron expression.
#[derive(Debug, Clone)]
enum Engine {
    /// One or two `cron` crate schedules; two when the 5-field form restricts both
    /// day-of-month and day-of-week (Vixie OR: a day matches if either matches).
    Crate(Vec<cron::Schedule>),
    /// An expression with a Quartz day rule (`L`, `L-n`, `LW`, `nW`, `dL`, `d#k`), which the
    /// crate does not know.
    Days(Box<DayCron>),
}

impl CronExpr {
    /// The first matching wall time strictly after `wall` (second granularity).
    #[inline]
    pub(crate) fn next_wall(&self, wall: NaiveDateTime) -> Option<NaiveDateTime> {
        let branches = match &self.engine {
            Engine::Days(d) => return d.next_wall(wall),
            Engine::Crate(b) => b,
        };
        let at = Utc.from_utc_datetime(&wall);
        let mut best: Option<NaiveDateTime> = None;
        for b in branches {
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
        match &self.engine {
            Engine::Days(d) => d.matches(wall),
            Engine::Crate(branches) => {
                let at = Utc.from_utc_datetime(&wall);
                branches.iter().any(|b| b.includes(at))
            }
        }
    }

    /// The last matching wall time strictly before `wall` (second granularity).
    #[inline]
    pub(crate) fn prev_wall(&self, wall: NaiveDateTime) -> Option<NaiveDateTime> {
        let branches = match &self.engine {
            Engine::Days(d) => return d.prev_wall(wall),
            Engine::Crate(b) => b,
        };
        let at = Utc.from_utc_datetime(&wall);
        let mut best: Option<NaiveDateTime> = None;
        for b in branches {
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
                let m = match (c.to_ascii_uppercase(), spec.name) {
                    // A day field reaches here only with what is not a rule (`L/2`, `1-L`).
                    (_, "day-of-month" | "day-of-week") => format!(
                        "'{item}' is not a day rule; L, L-n, LW, nW (day-of-month), dL and d#k \
                         (day-of-week) stand alone, without ranges or steps"
                    ),
                    ('#', _) => "'#' (nth weekday of the month) is only allowed in day-of-week".into(),
                    ('W', _) => "'W' (nearest weekday) is only allowed in day-of-month".into(),
                    _ => "'L' (last) is only allowed in day-of-month and day-of-week".into(),
                };
                return Err(err(m));
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
        let value = |t: &str| field_value(t, spec).map_err(err);
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

/// One value of a field (a number or a name), checked against the field's range; the error is
/// the reason, without the field prefix.
fn field_value(t: &str, spec: &FieldSpec) -> Result<u32, String> {
    let v = if let Some(v) = number(t) {
        v
    } else if !t.is_empty() && t.chars().all(|c| c.is_ascii_alphabetic()) {
        if spec.names.is_empty() {
            return Err(format!("'{t}' is not a number (this field takes no names)"));
        }
        let lower = t.to_ascii_lowercase();
        let key = lower.get(..3).unwrap_or(&lower);
        match spec.names.iter().find(|(n, _)| *n == key) {
            Some((_, v)) if lower.len() == 3 || full_name_ok(&lower) => *v,
            _ => return Err(format!("'{t}' is not a {} name", spec.name)),
        }
    } else {
        return Err(format!("'{t}' is not a number"));
    };
    if v < spec.min || v > spec.max {
        return Err(format!("{v} is out of range {}-{}{}", spec.min, spec.max, spec.hint));
    }
    Ok(v)
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

/// A day field: a set of plain values, or one Quartz rule.
enum DayField<R> {
    Values(Vec<u32>),
    Rule(R),
}

impl<R> DayField<R> {
    fn is_rule(&self) -> bool {
        matches!(self, DayField::Rule(_))
    }
}

/// Whether a list item of a day field is (or is meant as) a Quartz day rule: `L`, `LW`,
/// `L-n`, `nW`, `dL`, `d#k`, or a range or step glued to `L`/`W` (refused with a reason).
/// Names are not rules, even where they contain L or W (`WED`, `JUL`).
fn is_day_rule(item: &str) -> bool {
    let u = item.to_ascii_uppercase();
    if u.contains('#') || u == "L" || u == "LW" || u.starts_with("L-") {
        return true;
    }
    let Some(head) = u.strip_suffix('L').or_else(|| u.strip_suffix('W')) else {
        return false;
    };
    let lower = head.to_ascii_lowercase();
    let day_name = DAYS_UNIX.iter().any(|(n, _)| *n == lower)
        || (lower.len() > 3 && DAYS_UNIX.iter().any(|(n, _)| lower.starts_with(n)) && full_name_ok(&lower));
    !head.is_empty() && (number(head).is_some() || day_name || head.contains(['-', '/', '*']))
}

/// The one rule item of a day field, if it has one; a rule inside a list is refused.
fn rule_item<'a>(pos: usize, text: &'a str, spec: &FieldSpec) -> Result<Option<&'a str>, ScheduleError> {
    let Some(rule) = text.split(',').find(|i| is_day_rule(i)) else {
        return Ok(None);
    };
    if text.contains(',') {
        return Err(ScheduleError::Expression(format!(
            "field {pos} ({}) '{text}': '{rule}' cannot be part of a list; L, L-n, LW, nW, dL and d#k \
             stand alone in their field",
            spec.name
        )));
    }
    Ok(Some(rule))
}

/// Parses the day-of-month field: values, or `L`, `L-n`, `LW`, `nW`.
fn parse_dom(pos: usize, text: &str) -> Result<DayField<DomSel>, ScheduleError> {
    let Some(item) = rule_item(pos, text, &DOM)? else {
        return parse_field(pos, text, &DOM).map(DayField::Values);
    };
    let err = |m: String| ScheduleError::Expression(format!("field {pos} (day-of-month) '{text}': {m}"));
    let u = item.to_ascii_uppercase();
    let rule = if u == "L" {
        DomSel::Last(0)
    } else if u == "LW" {
        DomSel::LastWeekday
    } else if let Some(n) = u.strip_prefix("L-") {
        match number(n) {
            Some(n) if n <= 30 => DomSel::Last(n),
            _ => {
                return Err(err(format!(
                    "the offset '{n}' after 'L-' must be a number of days from 0 to 30 (L-n is n days \
                     before the last day of the month)"
                )))
            }
        }
    } else if u.contains('#') {
        return Err(err("'#' (nth weekday of the month) belongs in day-of-week, e.g. MON#2".into()));
    } else if let Some(n) = u.strip_suffix('W') {
        if n.contains(['-', '/', '*']) {
            return Err(err("'W' (nearest weekday) takes one day, e.g. 15W, not a range or step".into()));
        }
        DomSel::Nearest(field_value(n, &DOM).map_err(err)?)
    } else {
        return Err(err(
            "a weekday before 'L' (dL, the last such weekday) belongs in day-of-week; day-of-month \
             takes L, L-n or LW"
                .into(),
        ));
    };
    Ok(DayField::Rule(rule))
}

/// Parses the day-of-week field in `spec`'s numbering: values, or `dL`, `d#k`. Values and rules
/// come back as weekdays from Sunday (0 = Sunday .. 6 = Saturday).
fn parse_dow(pos: usize, text: &str, spec: &FieldSpec) -> Result<DayField<DowSel>, ScheduleError> {
    // Unix: 0 or 7 = Sunday; Quartz: 1 = Sunday.
    let weekday = |v: u32| (if spec.min == 0 { v % 7 } else { v - 1 }) as u8;
    let Some(item) = rule_item(pos, text, spec)? else {
        let values = parse_field(pos, text, spec)?;
        let mut days: Vec<u32> = values.into_iter().map(|v| u32::from(weekday(v))).collect();
        days.sort_unstable();
        days.dedup();
        return Ok(DayField::Values(days));
    };
    let err = |m: String| ScheduleError::Expression(format!("field {pos} (day-of-week) '{text}': {m}"));
    let last_friday = if spec.min == 0 { "5L or FRIL" } else { "6L or FRIL" };
    let u = item.to_ascii_uppercase();
    let one_day = |d: &str, example: &str| -> Result<u8, ScheduleError> {
        if d.is_empty() || d.contains(['-', '/', '*']) {
            return Err(err(format!("'{item}' takes one weekday, e.g. {example}, not a range or step")));
        }
        field_value(d, spec).map(weekday).map_err(err)
    };
    let rule = if let Some((d, k)) = u.split_once('#') {
        let w = one_day(d, "MON#2")?;
        match number(k) {
            Some(k @ 1..=5) => DowSel::Nth(w, k as u8),
            _ => {
                return Err(err(format!(
                    "the week number '{k}' after '#' must be 1 to 5 (MON#2 is the second Monday of the \
                     month)"
                )))
            }
        }
    } else if u == "L" {
        return Err(err(format!(
            "'L' alone in day-of-week is ambiguous (Quartz reads it as Saturday); write SAT, or dL for \
             the last such weekday of the month ({last_friday} is the last Friday)"
        )));
    } else if u.ends_with('W') {
        return Err(err("'W' (nearest weekday) belongs in day-of-month, e.g. 15W".into()));
    } else if u.starts_with("L-") {
        return Err(err("'L-n' (n days before the last day) belongs in day-of-month".into()));
    } else if let Some(d) = u.strip_suffix('L') {
        DowSel::Last(one_day(d, last_friday)?)
    } else {
        return Err(err("not a day rule; day-of-week takes dL or d#k".into()));
    };
    Ok(DayField::Rule(rule))
}

fn dom_text(f: &DayField<DomSel>) -> String {
    match f {
        DayField::Values(v) => list(v, &DOM),
        DayField::Rule(DomSel::Last(0)) => "L".into(),
        DayField::Rule(DomSel::Last(n)) => format!("L-{n}"),
        DayField::Rule(DomSel::LastWeekday) => "LW".into(),
        DayField::Rule(DomSel::Nearest(n)) => format!("{n}W"),
        DayField::Rule(DomSel::Days(_)) => "*".into(),
    }
}

/// The day-of-week field in the `cron` crate's (Quartz) numbering, 1 = Sunday.
fn dow_text(f: &DayField<DowSel>) -> String {
    match f {
        DayField::Values(v) => list(&v.iter().map(|w| w + 1).collect::<Vec<_>>(), &DOW_QUARTZ),
        DayField::Rule(DowSel::Last(w)) => format!("{}L", w + 1),
        DayField::Rule(DowSel::Nth(w, k)) => format!("{}#{k}", w + 1),
        DayField::Rule(DowSel::Days(_)) => "*".into(),
    }
}

/// The parsed fields of a cron expression, whatever its form.
struct Fields {
    secs: Vec<u32>,
    mins: Vec<u32>,
    hours: Vec<u32>,
    dom: DayField<DomSel>,
    months: Vec<u32>,
    dow: DayField<DowSel>,
    years: Option<Vec<u32>>,
    /// Vixie OR of the two day fields (5-field form, both restricted).
    or: bool,
}

impl Fields {
    /// The normalised 6/7-field text: one branch, or two joined by ` | ` under OR.
    fn branches(&self) -> Vec<String> {
        let time = format!(
            "{} {} {}",
            list(&self.secs, &SECONDS),
            list(&self.mins, &MINUTES),
            list(&self.hours, &HOURS)
        );
        let month = list(&self.months, &MONTH);
        let year = self.years.as_ref().map(|y| format!(" {}", list(y, &YEAR))).unwrap_or_default();
        let (dom, dow) = (dom_text(&self.dom), dow_text(&self.dow));
        if self.or {
            vec![format!("{time} {dom} {month} *{year}"), format!("{time} * {month} {dow}{year}")]
        } else {
            vec![format!("{time} {dom} {month} {dow}{year}")]
        }
    }

    fn engine(&self, s: &str) -> Result<Engine, ScheduleError> {
        if self.dom.is_rule() || self.dow.is_rule() {
            let dom = match &self.dom {
                DayField::Values(v) => DomSel::Days(days::mask(v) as u32),
                DayField::Rule(r) => *r,
            };
            let dow = match &self.dow {
                DayField::Values(v) => DowSel::Days(days::mask(v) as u8),
                DayField::Rule(r) => *r,
            };
            let all_years: Vec<u32> = (YEAR.min..=YEAR.max).collect();
            return Ok(Engine::Days(Box::new(DayCron {
                secs: days::mask(&self.secs),
                mins: days::mask(&self.mins),
                hours: days::mask(&self.hours) as u32,
                months: days::mask(&self.months) as u16,
                years: days::year_mask(self.years.as_deref().unwrap_or(&all_years)),
                dom,
                dow,
                or: self.or,
            })));
        }
        let mut branches = Vec::with_capacity(2);
        for t in &self.branches() {
            let sched =
                cron::Schedule::from_str(t).map_err(|e| ScheduleError::Expression(format!("'{s}': {e}")))?;
            branches.push(sched);
        }
        Ok(Engine::Crate(branches))
    }
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
    let parsed = match fields.len() {
        5 => {
            // Unix form: min hour dom month dow -> seconds = 0, dow translated, Vixie OR.
            let mins = parse_field(1, fields[0], &MINUTES)?;
            let hours = parse_field(2, fields[1], &HOURS)?;
            let dom = parse_dom(3, fields[2])?;
            let months = parse_field(4, fields[3], &MONTH)?;
            let dow = parse_dow(5, fields[4], &DOW_UNIX)?;
            // Vixie cron: a field that starts with '*' counts as unrestricted; when both are
            // restricted, a day matches if either matches (OR), otherwise both must (AND).
            let dom_star = fields[2].starts_with('*') || fields[2] == "?";
            let dow_star = fields[4].starts_with('*') || fields[4] == "?";
            Fields { secs: vec![0], mins, hours, dom, months, dow, years: None, or: !(dom_star || dow_star) }
        }
        6 | 7 => Fields {
            secs: parse_field(1, fields[0], &SECONDS)?,
            mins: parse_field(2, fields[1], &MINUTES)?,
            hours: parse_field(3, fields[2], &HOURS)?,
            dom: parse_dom(4, fields[3])?,
            months: parse_field(5, fields[4], &MONTH)?,
            dow: parse_dow(6, fields[5], &DOW_QUARTZ)?,
            years: fields.get(6).map(|y| parse_field(7, y, &YEAR)).transpose()?,
            or: false,
        },
        n => {
            return Err(ScheduleError::Expression(format!(
                "'{s}' has {n} field{}; expected 5 (Unix: min hour dom month dow), 6 or 7 (with \
                 seconds: sec min hour dom month dow [year]), rate(..) or at(..)",
                if n == 1 { "" } else { "s" }
            )))
        }
    };
    let cron = CronExpr { engine: parsed.engine(s)?, normalized: parsed.branches().join(" | ") };
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
