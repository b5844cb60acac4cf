//! [`CronExpr`]: a cron expression over local wall-clock time, its parser (5-, 6- and 7-field
//! forms and the `@` shorthands), and the engine that enumerates its wall times: the `cron`
//! crate, or `days::DayCron` for an expression with a Quartz day rule.

use std::str::FromStr;

use chrono::{NaiveDateTime, TimeZone, Utc};

use super::day_fields::{dom_text, dow_text, parse_dom, parse_dow, DayField};
use super::fields::{list, parse_field, DOW_QUARTZ, DOW_UNIX, HOURS, MINUTES, MONTH, SECONDS, YEAR};
use crate::days::{self, DayCron, DomSel, DowSel};
use crate::error::ScheduleError;

/// A cron expression over *local wall-clock* time.
#[derive(Debug, Clone)]
pub(crate) struct CronExpr {
    engine: Engine,
    /// The normalised 6/7-field text (branches joined by ` | ` under the 5-field OR rule).
    pub(crate) normalized: String,
    /// The seconds, minutes and hours the expression fires at, the same on every day it fires
    /// (the day fields only choose the days): what `density` computes from.
    pub(crate) times: TimesOfDay,
}

/// The time fields of a cron expression, each value sorted and distinct.
#[derive(Debug, Clone)]
pub(crate) struct TimesOfDay {
    pub(crate) secs: Vec<u32>,
    pub(crate) mins: Vec<u32>,
    pub(crate) hours: Vec<u32>,
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

pub(super) fn parse_cron(s: &str) -> Result<CronExpr, ScheduleError> {
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
    let times =
        TimesOfDay { secs: parsed.secs.clone(), mins: parsed.mins.clone(), hours: parsed.hours.clone() };
    let cron = CronExpr { engine: parsed.engine(s)?, normalized: parsed.branches().join(" | "), times };
    let epoch = chrono::NaiveDate::from_ymd_opt(1969, 12, 31).and_then(|d| d.and_hms_opt(23, 59, 59));
    if epoch.and_then(|e| cron.next_wall(e)).is_none() {
        return Err(ScheduleError::Expression(format!("'{s}' never matches a real date (e.g. 30 February)")));
    }
    Ok(cron)
}
