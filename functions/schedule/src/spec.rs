//! [`ScheduleSpec`], the schedule as a user submits it in a job definition. Nothing here is
//! validated: [`Schedule::parse`](crate::Schedule::parse) checks every field and names the one at
//! fault.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::business::BusinessCalendarRef;
use crate::calendar::Calendar;
use crate::zone::{GapPolicy, OverlapPolicy};

/// Longest jitter window: one day.
pub const MAX_JITTER_WINDOW_SECS: u32 = 86_400;

/// What a user submits in a job definition (JSON, camelCase).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleSpec {
    /// `"0 30 2 * * *"`, `"*/5 * * * *"`, `"rate(10 seconds)"`, `"at(2026-12-01T09:00:00)"`.
    pub expression: String,
    /// IANA zone, e.g. `"Europe/London"`.
    pub timezone: String,
    /// A local time that does not exist (spring forward). Default `shift`.
    #[serde(default)]
    pub on_gap: GapPolicy,
    /// A local time that occurs twice (fall back). Default `first`.
    #[serde(default)]
    pub on_overlap: OverlapPolicy,
    /// No fire before this instant; also the anchor of `rate()` (1970..=2100).
    #[serde(default, deserialize_with = "crate::instant::bounded_opt")]
    pub start: Option<DateTime<Utc>>,
    /// No fire after this instant (inclusive bound; 1970..=2100).
    #[serde(default, deserialize_with = "crate::instant::bounded_opt")]
    pub end: Option<DateTime<Utc>>,
    /// Excluded local dates and weekdays.
    #[serde(default)]
    pub exclusions: Calendar,
    /// Spread each dispatch over `[scheduled_at, scheduled_at + window)`; 0 = off.
    #[serde(default)]
    pub jitter_window_secs: u32,
    /// A shared business calendar and what happens to a fire on one of its non-business days.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::serde_field::not_null"
    )]
    pub business_calendar: Option<BusinessCalendarRef>,
}

impl ScheduleSpec {
    /// A spec with every optional field at its default.
    pub fn new(expression: impl Into<String>, timezone: impl Into<String>) -> ScheduleSpec {
        ScheduleSpec {
            expression: expression.into(),
            timezone: timezone.into(),
            on_gap: GapPolicy::default(),
            on_overlap: OverlapPolicy::default(),
            start: None,
            end: None,
            exclusions: Calendar::default(),
            jitter_window_secs: 0,
            business_calendar: None,
        }
    }
}
