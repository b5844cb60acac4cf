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

/// Most additional expressions in one spec (`expressions`): each costs one more search per
/// next-fire question, and the tick asks one per fire.
pub const MAX_EXTRA_EXPRESSIONS: usize = 10;

/// What a user submits in a job definition (JSON, camelCase).
///
/// Its OpenAPI schema is `Schedule` (the API's name for it); every field doc below is the
/// document's description of that field, and each bound is the one [`Schedule::parse`] checks
/// (or a looser one where the check depends on more than the field: a cron field's range).
///
/// [`Schedule::parse`]: crate::Schedule::parse
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    as = Schedule,
    description = "When a job fires: an expression in an IANA zone, what happens to its local times at the zone's clock changes, and the dates it skips.",
    examples(json!({"expression": "0 30 2 * * *", "timezone": "Europe/London"}))
)]
pub struct ScheduleSpec {
    /// 6/7-field cron with seconds (`0 30 2 * * *`), 5-field Unix cron, `rate(10 seconds)` or
    /// `at(2026-12-01T09:00:00)` (local time). Both cron forms take the Quartz day rules `L`,
    /// `L-n`, `LW`, `nW` in day-of-month and `dL`, `d#k` in day-of-week (`0 0 9 ? * MON#2`,
    /// `0 18 * * FRIL`); see docs/schedule.md. A syntactically wrong expression is 400 on
    /// `schedule.expression`.
    #[schema(min_length = 1, max_length = 256, examples("0 30 2 * * *"))]
    pub expression: String,
    /// More expressions in the same form as `expression`, sharing every other field of the
    /// schedule (zone, onGap/onOverlap, start/end, exclusions, jitter, business calendar). The
    /// job fires at the union of their instants, once per instant: two expressions that fire at
    /// the same instant make one fire, credited to the first of them (in the order
    /// `expression`, `expressions[0]`, ...). A wrong or duplicate one is 400 on
    /// `schedule.expressions[i]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(max_items = 10)]
    pub expressions: Vec<String>,
    /// IANA zone; an unknown one is 400 on `schedule.timezone`
    #[schema(min_length = 1, max_length = 64, examples("Europe/London"))]
    pub timezone: String,
    // A local time that does not exist (spring forward). Inline, as the document always had it;
    // the description and the default are `GapPolicy`'s.
    #[serde(default)]
    #[schema(inline)]
    pub on_gap: GapPolicy,
    // A local time that occurs twice (fall back); see `on_gap`.
    #[serde(default)]
    #[schema(inline)]
    pub on_overlap: OverlapPolicy,
    /// no fire before this instant; the anchor of rate(). RFC 3339, between
    /// 1970-01-01T00:00:00Z and 2100-12-31T23:59:59Z
    #[serde(default, deserialize_with = "crate::instant::bounded_opt")]
    #[schema(pattern = "^(19[7-9][0-9]|20[0-9][0-9]|2100)-", examples("2026-12-01T09:00:00Z"))]
    pub start: Option<DateTime<Utc>>,
    /// no fire after this instant (inclusive; not before start). RFC 3339, between
    /// 1970-01-01T00:00:00Z and 2100-12-31T23:59:59Z
    #[serde(default, deserialize_with = "crate::instant::bounded_opt")]
    #[schema(pattern = "^(19[7-9][0-9]|20[0-9][0-9]|2100)-", examples("2026-12-01T09:00:00Z"))]
    pub end: Option<DateTime<Utc>>,
    /// Excluded local dates and weekdays.
    #[serde(default)]
    pub exclusions: Calendar,
    /// Spread each dispatch over `[scheduled_at, scheduled_at + window)`; 0 = off.
    #[serde(default)]
    #[schema(maximum = 86_400, default = 0)]
    pub jitter_window_secs: u32,
    /// A shared business calendar and what happens to a fire on one of its non-business days.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::serde_field::not_null"
    )]
    // Absent, never null (`not_null`).
    #[schema(nullable = false)]
    pub business_calendar: Option<BusinessCalendarRef>,
}

impl ScheduleSpec {
    /// A spec with every optional field at its default.
    pub fn new(expression: impl Into<String>, timezone: impl Into<String>) -> ScheduleSpec {
        ScheduleSpec {
            expression: expression.into(),
            expressions: Vec::new(),
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

    /// Every expression of the spec in index order: `expression`, then `expressions`.
    pub fn all_expressions(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.expression.as_str()).chain(self.expressions.iter().map(String::as_str))
    }

    /// The text of expression `index` (0: `expression`; i + 1: `expressions[i]`).
    pub fn expression_at(&self, index: usize) -> Option<&str> {
        self.all_expressions().nth(index)
    }
}
