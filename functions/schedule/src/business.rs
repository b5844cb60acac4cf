//! Business calendars: named, versioned sets of holidays, weekly rest days and make-up working
//! days that many jobs share, and the roll policies that move a fire off a non-business day.
//!
//! A calendar is submitted as a [`BusinessCalendarSpec`] and resolved, together with its parent
//! chain, into [`BusinessDays`]: an immutable value a [`Schedule`](super::Schedule) holds by
//! `Arc`, so the scan can cache it per (tenant, calendar, version) and share it between jobs.
//!
//! ## Which days are business days
//! A local date is a business day unless it is a holiday or falls on a rest weekday; a date
//! listed in `workingDays` (a make-up Saturday) is a business day even on a rest weekday.
//! Along a parent chain (root first, the calendar itself last) each level's dates are laid over
//! the ones before: a child's `workingDays` entry overrides a parent's holiday on the same date
//! and a child's holiday overrides a parent's working day. `restDays` is inherited from the
//! nearest level that sets it (`["sat", "sun"]` when none does; `[]` means every weekday works).
//!
//! ## Rolling
//! A fire is rolled by the *local date* of its wall-clock time in the job's zone. It keeps its
//! local time of day on the target date, resolved there with the job's gap/overlap policy.
//! See [`Roll`]. A roll looks at most [`MAX_ROLL_DAYS`] days away; a fire that finds no
//! business day that close is skipped.

use std::fmt;

use chrono::{Datelike, Days, NaiveDate, Weekday};
use serde::{Deserialize, Serialize};

use super::calendar::parse_weekday;

/// Most dates (holidays plus working days) one calendar version may list. A date costs about
/// 13 bytes of JSON, so 1,000 of them fit the API's 16 KiB body limit with room to spare; a
/// five-level chain resolves to at most 5,000 dates.
pub const MAX_CALENDAR_DATES: usize = 1_000;

/// Deepest parent chain, the calendar itself included (`company` -> `cn-holidays` -> ...).
pub const MAX_CALENDAR_DEPTH: usize = 5;

/// Furthest a fire rolls, in days. Longer runs of non-business days skip the fire instead.
pub const MAX_ROLL_DAYS: u64 = 31;

/// A business calendar as submitted (`PUT /v1/calendars/{calendarId}`, JSON camelCase).
///
/// Dates stay strings so a malformed entry becomes a [`CalendarError`] naming its index.
///
/// Its OpenAPI schema is `BusinessCalendarDefinition`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    as = BusinessCalendarDefinition,
    description = "A business calendar. A local date is a business day unless it is a holiday or falls on a rest day; a workingDays date is a business day even on a rest day (make-up days). With a parent, each level's dates are laid over its parent's (a child's workingDays entry overrides a parent holiday on the same date and vice versa), restDays comes from the nearest level that sets it (default sat, sun). At most 1000 dates (holidays and workingDays together) per calendar, 5 levels per chain; dates between 1970-01-01 and 2100-12-31, each listed once; a date cannot be both a holiday and a working day. Errors are 400 naming the entry (`holidays[3]`).",
    examples(json!({"holidays": ["2026-10-01", "2026-10-02"], "restDays": ["sat", "sun"], "workingDays": ["2026-09-27"]}))
)]
pub struct BusinessCalendarSpec {
    /// Free text shown in listings (at most 256 characters).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::serde_field::not_null"
    )]
    #[schema(nullable = false, max_length = 256)]
    pub description: Option<String>,
    /// the calendar this one extends (the tenant's; no cycles)
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::serde_field::not_null"
    )]
    #[schema(nullable = false, pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub parent: Option<String>,
    /// Local dates that are not business days, `YYYY-MM-DD`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(schema_with = holidays_schema)]
    pub holidays: Vec<String>,
    /// Weekly rest days (`sat`, `sun`, ...); absent: the parent's, or `["sat", "sun"]`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::serde_field::not_null"
    )]
    #[schema(schema_with = rest_days_schema)]
    pub rest_days: Option<Vec<String>>,
    /// Local dates that are business days although they fall on a rest day (make-up days).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(schema_with = working_days_schema)]
    pub working_days: Vec<String>,
}

fn holidays_schema() -> utoipa::openapi::Array {
    crate::openapi::dates("2026-10-01")
        .max_items(Some(MAX_CALENDAR_DATES))
        .description(Some("local dates that are not business days"))
        .build()
}

fn rest_days_schema() -> utoipa::openapi::Array {
    // Six at most: all seven is refused ("every weekday is a rest day").
    crate::openapi::weekdays()
        .max_items(Some(6))
        .description(Some(
            "weekly rest days (mon..sun or full English names, each once; not all seven); absent: \
             the parent's, or sat and sun",
        ))
        .build()
}

fn working_days_schema() -> utoipa::openapi::Array {
    crate::openapi::dates("2026-10-01")
        .max_items(Some(MAX_CALENDAR_DATES))
        .description(Some("local dates that are business days although they fall on a rest day"))
        .build()
}

/// Why a calendar was refused. Permanent; `field` is the JSON path in the request body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct CalendarError {
    /// `holidays[3]`, `restDays[0]`, `workingDays[1]`, `parent`, `description`.
    pub field: String,
    /// Why.
    pub reason: String,
}

fn bad(field: impl Into<String>, reason: impl Into<String>) -> CalendarError {
    CalendarError { field: field.into(), reason: reason.into() }
}

/// A date of a calendar, strictly `YYYY-MM-DD`, within 1970-01-01..=2100-12-31.
fn parse_calendar_date(s: &str) -> Option<NaiveDate> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let d = NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?;
    (1970..=2100).contains(&d.year()).then_some(d)
}

/// One level of a calendar, validated: what the spec says, nothing inherited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalendarLevel {
    holidays: Vec<NaiveDate>,
    working_days: Vec<NaiveDate>,
    rest_days: Option<u8>,
}

impl BusinessCalendarSpec {
    /// Validates one calendar on its own (the parent is checked by the store, which can read
    /// it). Every error names the JSON path of the offending entry.
    pub fn validate(&self) -> Result<CalendarLevel, CalendarError> {
        if let Some(d) = &self.description {
            if d.chars().count() > 256 {
                return Err(bad("description", "at most 256 characters"));
            }
        }
        if let Some(p) = &self.parent {
            crate::id::validate_id("parent", p).map_err(|e| bad(e.field, e.reason))?;
        }
        let total = self.holidays.len() + self.working_days.len();
        if total > MAX_CALENDAR_DATES {
            return Err(bad(
                if self.holidays.len() > MAX_CALENDAR_DATES { "holidays" } else { "workingDays" },
                format!(
                    "{total} dates given (holidays and workingDays together); at most \
                     {MAX_CALENDAR_DATES} per calendar: split long lists over a parent chain"
                ),
            ));
        }
        let holidays = dates("holidays", &self.holidays)?;
        let working_days = dates("workingDays", &self.working_days)?;
        for (i, d) in self.working_days.iter().enumerate() {
            if parse_calendar_date(d).is_some_and(|x| holidays.binary_search(&x).is_ok()) {
                return Err(bad(
                    format!("workingDays[{i}]"),
                    format!("{d} is also listed in holidays; a date is either a holiday or a working day"),
                ));
            }
        }
        let rest_days = match &self.rest_days {
            None => None,
            Some(days) => {
                let mut bits = 0u8;
                for (i, w) in days.iter().enumerate() {
                    let day = parse_weekday(w.trim()).ok_or_else(|| {
                        bad(
                            format!("restDays[{i}]"),
                            format!(
                                "'{}' is not a weekday; use mon, tue, wed, thu, fri, sat or sun",
                                w.escape_debug()
                            ),
                        )
                    })?;
                    let bit = 1u8 << day.num_days_from_monday();
                    if bits & bit != 0 {
                        return Err(bad(format!("restDays[{i}]"), format!("{w} is listed twice")));
                    }
                    bits |= bit;
                }
                if bits == 0x7f {
                    return Err(bad(
                        "restDays",
                        "every weekday is a rest day; list the working weekdays out",
                    ));
                }
                Some(bits)
            }
        };
        Ok(CalendarLevel { holidays, working_days, rest_days })
    }
}

/// Parses a list of dates, refusing malformed, out-of-range and duplicate entries. Sorted.
fn dates(field: &str, raw: &[String]) -> Result<Vec<NaiveDate>, CalendarError> {
    let mut seen: std::collections::BTreeMap<NaiveDate, usize> = Default::default();
    for (i, s) in raw.iter().enumerate() {
        let d = parse_calendar_date(s).ok_or_else(|| {
            bad(
                format!("{field}[{i}]"),
                format!(
                    "'{}' is not a date in the form YYYY-MM-DD between 1970-01-01 and 2100-12-31",
                    s.escape_debug()
                ),
            )
        })?;
        if let Some(first) = seen.insert(d, i) {
            return Err(bad(format!("{field}[{i}]"), format!("{d} is listed twice (also {field}[{first}])")));
        }
    }
    Ok(seen.into_keys().collect())
}

/// What happens to a fire whose local date is not a business day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(
    description = "skip: drop the fire; following / preceding: the next / previous business day; modifiedFollowing: the next one unless it is in another month, then the previous one. A roll looks at most 31 days away; farther, the fire is skipped."
)]
pub enum Roll {
    /// Drop the fire.
    Skip,
    /// Move it to the next business day.
    Following,
    /// Move it to the previous business day.
    Preceding,
    /// Move it to the next business day unless that is in another month; then to the previous
    /// one (and forward after all when the month has no business day before it either).
    ModifiedFollowing,
}

impl fmt::Display for Roll {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Roll::Skip => "skip",
            Roll::Following => "following",
            Roll::Preceding => "preceding",
            Roll::ModifiedFollowing => "modifiedFollowing",
        })
    }
}

/// A job's reference to a business calendar: `{"calendar": "cn-holidays", "roll": "following"}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    description = "A shared business calendar of the tenant and what happens to a fire whose local date (in the job's zone) is not a business day. The fire keeps its local time of day on the date it rolls to (with the job's onGap/onOverlap applied there); fires rolling onto the same instant are one fire. Rolling needs a cron or at() expression; rate() takes `skip` only. An unknown or deleted calendar is 400 on `schedule.businessCalendar.calendar`.",
    examples(json!({"calendar": "cn-holidays", "roll": "following"}))
)]
pub struct BusinessCalendarRef {
    /// The calendar's id (the tenant's).
    #[schema(pattern = "^[A-Za-z0-9_-]{1,64}$", examples("cn-holidays"))]
    pub calendar: String,
    // What happens to a fire on a non-business day; the description is `Roll`'s.
    #[schema(inline)]
    pub roll: Roll,
}

/// Whether a date's status was set by a calendar's own list (index of the level in the chain).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    Holiday(u8),
    Working(u8),
}

/// A resolved calendar chain: answers "is this local date a business day, and why not".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BusinessDays {
    /// `(id, version)` of each level, root first, the calendar itself last.
    chain: Vec<(String, u64)>,
    /// Dates with an explicit mark, sorted (binary search: a few hundred ns less than hashing
    /// on the per-fire path for typical lists of a few hundred dates).
    marks: Vec<(NaiveDate, Mark)>,
    rest: u8,
    /// The level whose `restDays` applies (`None`: the default Saturday and Sunday).
    rest_from: Option<u8>,
}

impl BusinessDays {
    /// About how many bytes it holds (for caches bounded by memory).
    pub fn approx_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.chain.iter().map(|(id, _)| id.len() + std::mem::size_of::<(String, u64)>()).sum::<usize>()
            + self.marks.capacity() * std::mem::size_of::<(NaiveDate, Mark)>()
    }

    /// Resolves a chain, root first and the calendar itself last; each entry is the level's id,
    /// version and validated content. Errors when the chain is empty or deeper than
    /// [`MAX_CALENDAR_DEPTH`].
    pub fn resolve(chain: &[(String, u64, CalendarLevel)]) -> Result<BusinessDays, CalendarError> {
        if chain.is_empty() || chain.len() > MAX_CALENDAR_DEPTH {
            return Err(bad(
                "parent",
                format!(
                    "a calendar chain has 1 to {MAX_CALENDAR_DEPTH} levels; this one has {}",
                    chain.len()
                ),
            ));
        }
        let mut marks = std::collections::BTreeMap::new();
        let mut rest =
            (1u8 << Weekday::Sat.num_days_from_monday()) | (1 << Weekday::Sun.num_days_from_monday());
        let mut rest_from = None;
        for (i, (_, _, level)) in chain.iter().enumerate() {
            let i = i as u8;
            for d in &level.holidays {
                marks.insert(*d, Mark::Holiday(i));
            }
            for d in &level.working_days {
                marks.insert(*d, Mark::Working(i));
            }
            if let Some(r) = level.rest_days {
                rest = r;
                rest_from = Some(i);
            }
        }
        Ok(BusinessDays {
            chain: chain.iter().map(|(id, v, _)| (id.clone(), *v)).collect(),
            marks: marks.into_iter().collect(),
            rest,
            rest_from,
        })
    }

    /// A single calendar without parent (tests, benches, the CLI's offline preview).
    pub fn single(
        id: &str,
        version: u64,
        spec: &BusinessCalendarSpec,
    ) -> Result<BusinessDays, CalendarError> {
        if spec.parent.is_some() {
            return Err(bad("parent", "a single calendar cannot name a parent here"));
        }
        BusinessDays::resolve(&[(id.to_string(), version, spec.validate()?)])
    }

    /// The calendar's id (the last level of the chain).
    pub fn id(&self) -> &str {
        self.chain.last().map(|(id, _)| id.as_str()).unwrap_or_default()
    }

    /// The calendar's version.
    pub fn version(&self) -> u64 {
        self.chain.last().map(|(_, v)| *v).unwrap_or_default()
    }

    /// `(id, version)` of every level, root first.
    pub fn chain(&self) -> &[(String, u64)] {
        &self.chain
    }

    fn mark(&self, d: NaiveDate) -> Option<Mark> {
        self.marks.binary_search_by(|(x, _)| x.cmp(&d)).ok().map(|i| self.marks[i].1)
    }

    /// Whether local date `d` is a business day.
    #[inline]
    pub fn is_business(&self, d: NaiveDate) -> bool {
        match self.mark(d) {
            Some(Mark::Holiday(_)) => false,
            Some(Mark::Working(_)) => true,
            None => (self.rest >> d.weekday().num_days_from_monday()) & 1 == 0,
        }
    }

    fn level_name(&self, i: u8) -> String {
        let (id, v) = &self.chain[usize::from(i)];
        format!("{id} v{v}")
    }

    /// Why `d` is not a business day (`"holiday 2026-10-01 in cn-holidays v3"`, `"rest day sat
    /// in company v2"`), or `None` when it is one.
    pub fn why_not(&self, d: NaiveDate) -> Option<String> {
        match self.mark(d) {
            Some(Mark::Holiday(i)) => Some(format!("holiday {d} in {}", self.level_name(i))),
            Some(Mark::Working(_)) => None,
            None if self.is_business(d) => None,
            None => {
                let day = d.weekday().to_string().to_ascii_lowercase();
                Some(match self.rest_from {
                    Some(i) => format!("rest day {day} ({d}) in {}", self.level_name(i)),
                    None => format!(
                        "rest day {day} ({d}), the default of {}",
                        self.level_name(self.chain.len() as u8 - 1)
                    ),
                })
            }
        }
    }

    fn step(&self, d: NaiveDate, forward: bool) -> Option<NaiveDate> {
        let mut x = d;
        for _ in 0..MAX_ROLL_DAYS {
            x = if forward { x.checked_add_days(Days::new(1))? } else { x.checked_sub_days(Days::new(1))? };
            if self.is_business(x) {
                return Some(x);
            }
        }
        None
    }

    /// The business day a fire on local date `d` moves to under `roll`; `d` itself when it is
    /// a business day, `None` when the fire is skipped.
    pub fn roll(&self, d: NaiveDate, roll: Roll) -> Option<NaiveDate> {
        if self.is_business(d) {
            return Some(d);
        }
        match roll {
            Roll::Skip => None,
            Roll::Following => self.step(d, true),
            Roll::Preceding => self.step(d, false),
            Roll::ModifiedFollowing => match self.step(d, true) {
                Some(f) if f.month() == d.month() && f.year() == d.year() => Some(f),
                f => match self.step(d, false) {
                    Some(p) if p.month() == d.month() && p.year() == d.year() => Some(p),
                    // No business day in the month on either side: forward after all.
                    p => f.or(p),
                },
            },
        }
    }

    /// Calls `f` with every local date whose fires land on business day `b` under `roll`, in
    /// ascending order: the rolled-in dates before `b`, `b` itself, the rolled-in dates after it
    /// (they form the runs of non-business days next to `b`, at most [`MAX_ROLL_DAYS`] each
    /// side). Nothing when `b` is not a business day.
    #[inline]
    pub(crate) fn for_each_source(&self, b: NaiveDate, roll: Roll, mut f: impl FnMut(NaiveDate)) {
        if !self.is_business(b) {
            return;
        }
        if roll == Roll::Skip {
            f(b);
            return;
        }
        // The start of the run of non-business days before `b`.
        let mut start = b;
        for _ in 0..MAX_ROLL_DAYS {
            match start.checked_sub_days(Days::new(1)) {
                Some(p) if !self.is_business(p) => start = p,
                _ => break,
            }
        }
        let mut d = start;
        while d < b {
            if self.roll(d, roll) == Some(b) {
                f(d);
            }
            d = match d.checked_add_days(Days::new(1)) {
                Some(n) => n,
                None => return,
            };
        }
        f(b);
        let mut d = b;
        for _ in 0..MAX_ROLL_DAYS {
            match d.checked_add_days(Days::new(1)) {
                Some(n) if !self.is_business(n) => d = n,
                _ => break,
            }
            if self.roll(d, roll) == Some(b) {
                f(d);
            }
        }
    }

    /// The nearest business day at or before `d`, at most [`MAX_ROLL_DAYS`] back.
    pub(crate) fn business_at_or_before(&self, d: NaiveDate) -> Option<NaiveDate> {
        if self.is_business(d) {
            return Some(d);
        }
        self.step(d, false)
    }

    /// How many days before or after a business day its rolled-in sources may lie under `roll`.
    pub(crate) fn reach(roll: Roll) -> u64 {
        match roll {
            Roll::Skip => 0,
            _ => MAX_ROLL_DAYS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    fn spec(holidays: &[&str], working: &[&str]) -> BusinessCalendarSpec {
        BusinessCalendarSpec {
            holidays: holidays.iter().map(|s| s.to_string()).collect(),
            working_days: working.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn bad_calendars_name_the_entry() {
        let cases: Vec<(BusinessCalendarSpec, &str, &str)> = vec![
            (spec(&["2026-10-01", "2026-13-01"], &[]), "holidays[1]", "not a date"),
            (spec(&["2026-10-01", "2026-10-01"], &[]), "holidays[1]", "listed twice (also holidays[0])"),
            (spec(&["1969-12-31"], &[]), "holidays[0]", "between 1970-01-01 and 2100-12-31"),
            (spec(&["2101-01-01"], &[]), "holidays[0]", "between 1970-01-01 and 2100-12-31"),
            (spec(&[], &["2026-9-27"]), "workingDays[0]", "not a date"),
            (spec(&["2026-09-27"], &["2026-09-27"]), "workingDays[0]", "also listed in holidays"),
            (
                BusinessCalendarSpec {
                    rest_days: Some(vec!["sat".into(), "funday".into()]),
                    ..Default::default()
                },
                "restDays[1]",
                "not a weekday",
            ),
            (
                BusinessCalendarSpec {
                    rest_days: Some(vec!["sat".into(), "Saturday".into()]),
                    ..Default::default()
                },
                "restDays[1]",
                "listed twice",
            ),
            (
                BusinessCalendarSpec {
                    rest_days: Some(
                        ["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map(String::from).to_vec(),
                    ),
                    ..Default::default()
                },
                "restDays",
                "every weekday",
            ),
            (BusinessCalendarSpec { parent: Some("Bad Id!".into()), ..Default::default() }, "parent", ""),
            (
                BusinessCalendarSpec { description: Some("x".repeat(257)), ..Default::default() },
                "description",
                "256",
            ),
        ];
        for (s, field, needle) in cases {
            let e = s.validate().expect_err(field);
            assert_eq!(e.field, field, "{e}");
            assert!(e.reason.contains(needle), "{e}");
        }
        let many: Vec<String> =
            (0..=MAX_CALENDAR_DATES as u64).map(|i| (d("1990-01-01") + Days::new(i)).to_string()).collect();
        let e =
            BusinessCalendarSpec { holidays: many, ..Default::default() }.validate().expect_err("too many");
        assert_eq!(e.field, "holidays");
    }

    #[test]
    fn child_dates_override_the_parents_and_rest_days_are_inherited() {
        // GIVEN cn-holidays: National Day week off, Sunday 2026-09-27 a make-up working day;
        // AND a company calendar on top: 2026-10-08 back to work... as a holiday, and the
        // parent's make-up Sunday turned into a holiday.
        let parent = BusinessCalendarSpec {
            holidays: ["2026-10-01", "2026-10-02", "2026-10-05", "2026-10-06", "2026-10-07"]
                .map(String::from)
                .to_vec(),
            working_days: vec!["2026-09-27".into()],
            rest_days: Some(vec!["sat".into(), "sun".into()]),
            ..Default::default()
        };
        let child = BusinessCalendarSpec {
            parent: Some("cn-holidays".into()),
            holidays: vec!["2026-10-08".into(), "2026-09-27".into()],
            working_days: vec!["2026-10-07".into()],
            ..Default::default()
        };
        let cal = BusinessDays::resolve(&[
            ("cn-holidays".into(), 3, parent.validate().unwrap()),
            ("acme".into(), 1, child.validate().unwrap()),
        ])
        .unwrap();
        assert!(!cal.is_business(d("2026-10-01")));
        assert!(cal.is_business(d("2026-10-07")), "the child's working day wins over the parent's holiday");
        assert!(!cal.is_business(d("2026-10-08")));
        assert!(!cal.is_business(d("2026-09-27")), "the child's holiday wins over the parent's working day");
        assert!(!cal.is_business(d("2026-10-10")), "Saturday: rest day inherited from the parent");
        assert_eq!(cal.why_not(d("2026-10-01")).unwrap(), "holiday 2026-10-01 in cn-holidays v3");
        assert_eq!(cal.why_not(d("2026-10-08")).unwrap(), "holiday 2026-10-08 in acme v1");
        assert_eq!(cal.why_not(d("2026-10-10")).unwrap(), "rest day sat (2026-10-10) in cn-holidays v3");
        assert_eq!(cal.why_not(d("2026-10-07")), None);
        assert_eq!((cal.id(), cal.version()), ("acme", 1));
    }

    #[test]
    fn rolls_follow_their_definitions() {
        // GIVEN weekends off and Friday 2026-07-31 a holiday (a month end on a Friday).
        let cal = BusinessDays::single("c", 1, &spec(&["2026-07-31"], &[])).unwrap();
        let fri = d("2026-07-31");
        assert_eq!(cal.roll(fri, Roll::Skip), None);
        assert_eq!(cal.roll(fri, Roll::Following), Some(d("2026-08-03")));
        assert_eq!(cal.roll(fri, Roll::Preceding), Some(d("2026-07-30")));
        assert_eq!(
            cal.roll(fri, Roll::ModifiedFollowing),
            Some(d("2026-07-30")),
            "following leaves July: back"
        );
        // Saturday 2026-08-01: following stays in August.
        assert_eq!(cal.roll(d("2026-08-01"), Roll::ModifiedFollowing), Some(d("2026-08-03")));
        // The sources of Monday 2026-08-03 under following, ascending: the holiday Friday, Sat, Sun, itself.
        let mut src = vec![];
        cal.for_each_source(d("2026-08-03"), Roll::Following, |x| src.push(x.to_string()));
        assert_eq!(src, ["2026-07-31", "2026-08-01", "2026-08-02", "2026-08-03"]);
        let mut src = vec![];
        cal.for_each_source(d("2026-08-03"), Roll::ModifiedFollowing, |x| src.push(x.to_string()));
        assert_eq!(src, ["2026-08-01", "2026-08-02", "2026-08-03"]);
        let mut src = vec![];
        cal.for_each_source(d("2026-07-30"), Roll::ModifiedFollowing, |x| src.push(x.to_string()));
        assert_eq!(src, ["2026-07-30", "2026-07-31"]);
    }

    #[test]
    fn a_month_without_business_days_rolls_forward_and_long_runs_skip() {
        // GIVEN every date of February 2027 a holiday.
        let feb: Vec<String> = (0..28).map(|i| (d("2027-02-01") + Days::new(i)).to_string()).collect();
        let cal = BusinessDays::single("c", 1, &BusinessCalendarSpec { holidays: feb, ..Default::default() })
            .unwrap();
        assert_eq!(cal.roll(d("2027-02-10"), Roll::ModifiedFollowing), Some(d("2027-03-01")));
        // GIVEN 80 days of holidays: a fire in the middle finds nothing within 31 days.
        let long: Vec<String> = (0..80).map(|i| (d("2027-06-01") + Days::new(i)).to_string()).collect();
        let cal =
            BusinessDays::single("c", 1, &BusinessCalendarSpec { holidays: long, ..Default::default() })
                .unwrap();
        assert_eq!(cal.roll(d("2027-07-10"), Roll::Following), None);
        assert_eq!(cal.roll(d("2027-07-10"), Roll::Preceding), None);
        assert_eq!(cal.roll(d("2027-06-02"), Roll::Preceding), Some(d("2027-05-31")));
    }
}
