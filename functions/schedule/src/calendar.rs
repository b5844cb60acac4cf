//! Exclusion calendars, as Quartz calendars: local dates (holidays) and weekdays on which a
//! schedule does not fire. A fire is excluded by the *local* date of its scheduled wall-clock
//! time in the job's zone.

use std::collections::BTreeSet;

use chrono::{Datelike, NaiveDate, Weekday};
use serde::{Deserialize, Serialize};

use super::error::ScheduleError;

/// The exclusion calendar of a job definition, as submitted (JSON, camelCase):
/// `{"dates": ["2026-12-25", "2027-01-01"], "weekdays": ["sat", "sun"]}`.
///
/// Kept as strings so a malformed entry becomes a [`ScheduleError::Exclusions`] naming it,
/// rather than an opaque deserialisation failure.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    description = "Excluded local dates and weekdays (in the job's zone).",
    examples(json!({"dates": ["2026-12-25"], "weekdays": ["sat", "sun"]}))
)]
pub struct Calendar {
    /// Excluded local dates, `YYYY-MM-DD`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(schema_with = excluded_dates_schema)]
    pub dates: Vec<String>,
    /// Excluded weekdays: `mon`..`sun` or full English names, any case.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(schema_with = excluded_weekdays_schema)]
    pub weekdays: Vec<String>,
}

fn excluded_dates_schema() -> utoipa::openapi::Array {
    crate::openapi::dates("2026-12-25")
        .max_items(Some(MAX_EXCLUDED_DATES))
        .description(Some("excluded local dates, YYYY-MM-DD"))
        .build()
}

fn excluded_weekdays_schema() -> utoipa::openapi::Array {
    crate::openapi::weekdays()
        .description(Some("mon..sun or full English names, any case (repeats are harmless)"))
        .build()
}

impl Calendar {
    /// True when nothing is excluded.
    pub fn is_empty(&self) -> bool {
        self.dates.is_empty() && self.weekdays.is_empty()
    }
}

/// Most excluded dates one job may carry (a century of holidays is about 1,500).
pub const MAX_EXCLUDED_DATES: usize = 5_000;

/// A validated [`Calendar`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Exclusions {
    dates: BTreeSet<NaiveDate>,
    /// Bit `n` set: weekday with `num_days_from_monday() == n` is excluded.
    weekdays: u8,
}

impl Exclusions {
    pub(crate) fn parse(cal: &Calendar) -> Result<Exclusions, ScheduleError> {
        if cal.dates.len() > MAX_EXCLUDED_DATES {
            return Err(ScheduleError::Exclusions(format!(
                "{} dates given; at most {MAX_EXCLUDED_DATES} are allowed",
                cal.dates.len()
            )));
        }
        let mut dates = BTreeSet::new();
        for (i, d) in cal.dates.iter().enumerate() {
            let date = parse_date(d.trim()).ok_or_else(|| {
                ScheduleError::Exclusions(format!(
                    "dates[{i}] '{}' is not a calendar date in the form YYYY-MM-DD",
                    d.escape_debug()
                ))
            })?;
            dates.insert(date);
        }
        let mut weekdays = 0u8;
        for (i, w) in cal.weekdays.iter().enumerate() {
            let day = parse_weekday(w.trim()).ok_or_else(|| {
                ScheduleError::Exclusions(format!(
                    "weekdays[{i}] '{}' is not a weekday; use mon, tue, wed, thu, fri, sat or sun",
                    w.escape_debug()
                ))
            })?;
            weekdays |= 1 << day.num_days_from_monday();
        }
        if weekdays == 0x7f {
            return Err(ScheduleError::Exclusions(
                "every weekday is excluded, so the schedule would never fire".into(),
            ));
        }
        Ok(Exclusions { dates, weekdays })
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.weekdays == 0 && self.dates.is_empty()
    }

    #[inline]
    pub(crate) fn excludes(&self, date: NaiveDate) -> bool {
        (self.weekdays >> date.weekday().num_days_from_monday()) & 1 == 1 || self.dates.contains(&date)
    }
}

fn parse_date(s: &str) -> Option<NaiveDate> {
    // Strict shape first: chrono would also take "2026-1-5".
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()
}

pub(crate) fn parse_weekday(s: &str) -> Option<Weekday> {
    Some(match s.to_ascii_lowercase().as_str() {
        "mon" | "monday" => Weekday::Mon,
        "tue" | "tues" | "tuesday" => Weekday::Tue,
        "wed" | "wednesday" => Weekday::Wed,
        "thu" | "thurs" | "thursday" => Weekday::Thu,
        "fri" | "friday" => Weekday::Fri,
        "sat" | "saturday" => Weekday::Sat,
        "sun" | "sunday" => Weekday::Sun,
        _ => return None,
    })
}
