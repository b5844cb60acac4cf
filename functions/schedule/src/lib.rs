//! Schedule maths: cron / rate / at expressions, IANA zones with an explicit DST policy,
//! exclusion calendars, misfire planning and dispatch jitter.
//!
//! Pure code: no I/O and no clock. Every function takes `after` or `now`; the next fire is
//! always computed from the previous *scheduled* instant, never from a completion time.
//! `docs/schedule.md` gives the semantics and the reasons for each default.
//!
//! ## Layout
//! - [`error`]: [`ScheduleError`], one variant per spec field.
//! - `expr`: parsing of cron (5/6/7 fields), `rate(..)` and `at(..)`.
//! - `days`: Quartz day rules (`L`, `L-n`, `LW`, `nW`, `dL`, `d#k`) and the engine that computes
//!   the wall times of an expression that uses one (the `cron` crate knows none of them).
//! - `zone`: IANA zone parsing, [`GapPolicy`] / [`OverlapPolicy`], wall time -> instant, over
//!   one release's rules (`Zone`: compiled, or TZif data of another release).
//! - [`tzdb`]: tz database releases ([`tzdb::Tzdb`]) and [`tzdb::compare`], the fires of a
//!   spec that differ between two releases (the tzdb upgrade report).
//! - `calendar`: [`Calendar`] exclusions (local dates and weekdays).
//! - `business`: shared business calendars ([`BusinessDays`]) and [`Roll`] policies.
//! - `misfire`: [`plan_misfire`] and [`MisfirePolicy`].
//! - `jitter`: [`jitter_offset`], deterministic per (job, scheduled_at).
//! - `cadence`: [`Schedule::fires_every_minute`], which picks a job's due class in the scan.
//!
//! ## How a cron fire is found
//! The `cron` crate enumerates *local wall-clock* times (it is run on naive local times as if
//! the zone were UTC, where it is exact and ordered); each wall time is then resolved to an
//! instant with `chrono-tz` under the job's gap policy and one *pass* of its overlap policy
//! (`first` or `last`). For a fixed pass, wall time -> instant is monotone, so the first wall
//! time whose instant is after `after` is the answer; `both` is the merge (minimum) of the two
//! passes. This avoids the crate's own zone handling, which yields fall-back fires out of order.
//! An expression with a Quartz day rule gets its wall times from `days` instead of the crate;
//! everything after that (zone, policies, exclusions) is the same code.

mod business;
mod cadence;
mod calendar;
mod days;
pub mod error;
mod expr;
pub mod id;
pub mod instant;
mod jitter;
pub mod minute;
mod misfire;
mod rolled;
pub mod serde_field;
pub mod tzdb;
mod zone;

use std::sync::Arc;

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

pub use business::{
    BusinessCalendarRef, BusinessCalendarSpec, BusinessDays, CalendarError, CalendarLevel, Roll,
    MAX_CALENDAR_DATES, MAX_CALENDAR_DEPTH, MAX_ROLL_DAYS,
};
pub use calendar::{Calendar, MAX_EXCLUDED_DATES};
pub use error::ScheduleError;
pub use expr::{MAX_EXPRESSION_LEN, MAX_RATE_SECS};
pub use jitter::jitter_offset;
pub use misfire::{
    plan_misfire, MisfirePlan, MisfirePolicy, PlannedFire, DEFAULT_FIRE_ALL_CAP, MISFIRE_SCAN_LIMIT,
};
pub use rolled::PreviewFire;
pub use zone::{GapPolicy, OverlapPolicy};

use calendar::Exclusions;
use expr::{CronExpr, Expr};
use zone::{local_of, resolve_wall, Lookup, Pass, Wall, Zone};

/// Longest jitter window: one day.
pub const MAX_JITTER_WINDOW_SECS: u32 = 86_400;

/// How many excluded days or skipped gaps one search may step over before it gives up and
/// reports the schedule exhausted (about 270 years of daily steps; the `cron` crate stops at
/// 2100 anyway).
const MAX_SEARCH_STEPS: u32 = 100_000;

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

#[derive(Debug, Clone)]
enum Kind {
    Cron(CronExpr),
    /// Fires at `anchor + k * period` (Unix seconds), k >= 0.
    Rate {
        anchor: i64,
        period: i64,
    },
    /// The resolved instants of an `at(..)`, ascending (two under `both` in an overlap).
    At(Vec<DateTime<Utc>>),
}

/// A validated schedule, ready to compute fires.
#[derive(Debug, Clone)]
pub struct Schedule {
    kind: Kind,
    zone: Zone,
    on_gap: GapPolicy,
    on_overlap: OverlapPolicy,
    start: Option<DateTime<Utc>>,
    end: Option<DateTime<Utc>>,
    exclusions: Exclusions,
    jitter_window_secs: u32,
    normalized: String,
    /// The business calendar in force and the roll policy (`None`: every day is a business day).
    business: Option<Business>,
}

#[derive(Debug, Clone)]
struct Business {
    days: Arc<BusinessDays>,
    roll: Roll,
}

/// The version of the IANA tz database compiled into this build (e.g. `"2025b"`). Store it
/// next to computed schedules so a later change of zone rules can be audited.
pub fn tzdb_version() -> &'static str {
    chrono_tz::IANA_TZDB_VERSION
}

/// The first whole second at or after `t`.
fn ceil_secs(t: DateTime<Utc>) -> i64 {
    t.timestamp() + i64::from(t.timestamp_subsec_nanos() > 0)
}

fn from_secs(s: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(s, 0)
}

fn div_ceil(a: i64, b: i64) -> i64 {
    let q = a.div_euclid(b);
    if a.rem_euclid(b) == 0 {
        q
    } else {
        q + 1
    }
}

impl Schedule {
    /// Validates `spec`. `anchor` anchors `rate()` when `spec.start` is `None` (pass the job's
    /// creation instant); it is rounded up to a whole second. A spec that names a business
    /// calendar needs [`Schedule::parse_with`].
    pub fn parse(spec: &ScheduleSpec, anchor: DateTime<Utc>) -> Result<Schedule, ScheduleError> {
        Schedule::parse_with(spec, anchor, None)
    }

    /// [`Schedule::parse`] with the resolved business calendar that `spec.businessCalendar`
    /// names (the version in force). Refused when the spec names a calendar and `business` is
    /// not that calendar, or when it passes a calendar the spec does not name.
    pub fn parse_with(
        spec: &ScheduleSpec,
        anchor: DateTime<Utc>,
        business: Option<Arc<BusinessDays>>,
    ) -> Result<Schedule, ScheduleError> {
        let expr = expr::parse_expression(&spec.expression)?;
        let tz = Zone::Compiled(zone::parse_zone(&spec.timezone)?);
        Schedule::build(spec, anchor, expr, tz, Schedule::business(spec, business)?)
    }

    /// [`Schedule::parse_with`] under the zone rules of `db` (another tz database release, for
    /// the tzdb upgrade report and its tests). The zone name is validated against the compiled
    /// release; a zone that `db` does not have is [`ScheduleError::Timezone`]. `business: None`
    /// for a spec that names a calendar computes its fires before any business-day roll (which
    /// moves a fire by whole local days under either release): what the report compares.
    pub fn parse_in(
        spec: &ScheduleSpec,
        anchor: DateTime<Utc>,
        db: &tzdb::Tzdb,
        business: Option<Arc<BusinessDays>>,
    ) -> Result<Schedule, ScheduleError> {
        let expr = expr::parse_expression(&spec.expression)?;
        let tz = db.zone(zone::parse_zone(&spec.timezone)?)?;
        let business = match business {
            None => None,
            some => Schedule::business(spec, some)?,
        };
        Schedule::build(spec, anchor, expr, tz, business)
    }

    /// The business calendar of `spec`, checked against the one loaded for it.
    fn business(
        spec: &ScheduleSpec,
        business: Option<Arc<BusinessDays>>,
    ) -> Result<Option<Business>, ScheduleError> {
        match (&spec.business_calendar, business) {
            (None, None) => Ok(None),
            (Some(r), Some(days)) if days.id() == r.calendar => Ok(Some(Business { days, roll: r.roll })),
            (Some(r), Some(days)) => Err(ScheduleError::BusinessCalendar(format!(
                "calendar {:?} was loaded for a spec naming {:?}",
                days.id(),
                r.calendar
            ))),
            (Some(r), None) => {
                Err(ScheduleError::BusinessCalendar(format!("calendar {:?} is not loaded", r.calendar)))
            }
            (None, Some(days)) => Err(ScheduleError::BusinessCalendar(format!(
                "calendar {:?} was given for a spec without businessCalendar",
                days.id()
            ))),
        }
    }

    fn build(
        spec: &ScheduleSpec,
        anchor: DateTime<Utc>,
        expr: Expr,
        tz: Zone,
        business: Option<Business>,
    ) -> Result<Schedule, ScheduleError> {
        let out_of_range = |t: Option<DateTime<Utc>>| t.is_some_and(|t| !crate::instant::in_range(t));
        if out_of_range(spec.start) {
            return Err(ScheduleError::Start(crate::instant::RANGE_MESSAGE.into()));
        }
        if out_of_range(spec.end) {
            return Err(ScheduleError::End(crate::instant::RANGE_MESSAGE.into()));
        }
        if let (Some(s), Some(e)) = (spec.start, spec.end) {
            if e < s {
                return Err(ScheduleError::End(format!(
                    "{} is before start {}",
                    e.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
                    s.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
                )));
            }
        }
        let exclusions = Exclusions::parse(&spec.exclusions)?;
        if spec.jitter_window_secs > MAX_JITTER_WINDOW_SECS {
            return Err(ScheduleError::JitterWindowSecs(format!(
                "{} is longer than the maximum {MAX_JITTER_WINDOW_SECS} (one day)",
                spec.jitter_window_secs
            )));
        }
        let (kind, normalized) = match expr {
            Expr::Cron(c) => {
                let n = c.normalized.clone();
                (Kind::Cron(c), n)
            }
            Expr::Rate { period_secs } => {
                if let Some(b) = business.as_ref().filter(|b| b.roll != Roll::Skip) {
                    return Err(ScheduleError::BusinessCalendar(format!(
                        "roll '{}' needs a cron or at() expression: rate() fires are not tied to a \
                         time of day to keep; use 'skip'",
                        b.roll
                    )));
                }
                let anchor = ceil_secs(spec.start.unwrap_or(anchor));
                (Kind::Rate { anchor, period: period_secs }, format!("rate({period_secs} seconds)"))
            }
            Expr::At(wall) => {
                let fires = match &business {
                    None => resolve_at(&tz, wall, spec, &exclusions)?,
                    Some(b) => {
                        if exclusions.excludes(wall.date()) {
                            return Err(ScheduleError::Exclusions(format!(
                                "exclude {}, the only date of at({})",
                                wall.date(),
                                wall.format("%Y-%m-%dT%H:%M:%S")
                            )));
                        }
                        // The calendar may change after the job is created: an at() rolled
                        // out of existence fires never, it is not an error here.
                        match b.days.roll(wall.date(), b.roll) {
                            Some(day) => {
                                resolve_at(&tz, day.and_time(wall.time()), spec, &Exclusions::default())?
                            }
                            None => Vec::new(),
                        }
                    }
                };
                (Kind::At(fires), format!("at({})", wall.format("%Y-%m-%dT%H:%M:%S")))
            }
        };
        Ok(Schedule {
            kind,
            zone: tz,
            on_gap: spec.on_gap,
            on_overlap: spec.on_overlap,
            start: spec.start,
            end: spec.end,
            exclusions,
            jitter_window_secs: spec.jitter_window_secs,
            normalized,
            business,
        })
    }

    /// The job's zone.
    pub fn timezone(&self) -> Tz {
        self.zone.tz()
    }

    /// The expression as computed: 6/7-field cron text handed to the `cron` crate (two
    /// branches joined by ` | ` for a 5-field expression with Vixie OR), `rate(N seconds)`, or
    /// `at(local time)`.
    pub fn normalized_expression(&self) -> &str {
        &self.normalized
    }

    /// The jitter window of the spec, in seconds (0 = off).
    pub fn jitter_window_secs(&self) -> u32 {
        self.jitter_window_secs
    }

    /// The instant at which the fire scheduled at `scheduled_at` should be dispatched:
    /// `scheduled_at + jitter_offset(job_id, scheduled_at, window)`.
    pub fn dispatch_at(&self, job_id: &str, scheduled_at: DateTime<Utc>) -> DateTime<Utc> {
        scheduled_at + jitter_offset(job_id, scheduled_at, self.jitter_window_secs)
    }

    /// The first fire strictly after `after`, or `None` when the schedule is exhausted (past
    /// `end`, an `at` already passed, or nothing left before 2100).
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        // Nothing fires after 2100 (the `cron` crate's last year), and zone conversions of
        // instants near chrono's limits panic: answer from the bounds, never from chrono.
        if after.timestamp() >= HORIZON_SECS {
            return None;
        }
        let after = after.max(earliest_instant());
        let after = match self.start {
            Some(s) if after < s => s - Duration::nanoseconds(1),
            _ => after,
        };
        let fire = match &self.kind {
            Kind::Cron(c) => match &self.business {
                None => self.by_overlap(|pass| self.cron_next(c, after, pass), std::cmp::min),
                Some(b) => {
                    self.by_overlap(|pass| self.business_next(c, b, after, pass).map(|x| x.0), std::cmp::min)
                }
            },
            Kind::Rate { anchor, period } => self.rate_next(*anchor, *period, after),
            Kind::At(fires) => fires.iter().copied().find(|f| *f > after),
        }?;
        match self.end {
            Some(e) if fire > e => None,
            _ => Some(fire),
        }
    }

    /// Applies the overlap policy to a cron search: one pass, or (`both`) the two passes merged
    /// with `pick` (the earlier for a forward search, the later for a backward one).
    fn by_overlap(
        &self,
        search: impl Fn(Pass) -> Option<DateTime<Utc>>,
        pick: fn(DateTime<Utc>, DateTime<Utc>) -> DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        match self.on_overlap {
            OverlapPolicy::First => search(Pass::First),
            OverlapPolicy::Last => search(Pass::Last),
            OverlapPolicy::Both => match (search(Pass::First), search(Pass::Last)) {
                (Some(a), Some(b)) => Some(pick(a, b)),
                (a, b) => a.or(b),
            },
        }
    }

    /// The last fire at or before `at_or_before`, or `None` if there is none (before `start`,
    /// or before the first fire).
    pub fn prev_at_or_before(&self, at_or_before: DateTime<Utc>) -> Option<DateTime<Utc>> {
        if at_or_before < earliest_instant() {
            return None;
        }
        let at_or_before = at_or_before.min(Utc.timestamp_opt(HORIZON_SECS, 0).single()?);
        let x = match self.end {
            Some(e) if at_or_before > e => e,
            _ => at_or_before,
        };
        let fire = match &self.kind {
            Kind::Cron(c) => match &self.business {
                None => self.by_overlap(|pass| self.cron_prev(c, x, pass), std::cmp::max),
                Some(b) => self.by_overlap(|pass| self.business_prev(c, b, x, pass), std::cmp::max),
            },
            Kind::Rate { anchor, period } => self.rate_prev(*anchor, *period, x),
            Kind::At(fires) => fires.iter().rev().copied().find(|f| *f <= x),
        }?;
        match self.start {
            Some(s) if fire < s => None,
            _ => Some(fire),
        }
    }

    /// Every fire in `(after_exclusive, until_inclusive]`, ascending, at most `cap` of them.
    pub fn fires_between(
        &self,
        after_exclusive: DateTime<Utc>,
        until_inclusive: DateTime<Utc>,
        cap: usize,
    ) -> Vec<DateTime<Utc>> {
        let mut out = Vec::new();
        let mut cursor = after_exclusive;
        while out.len() < cap {
            match self.next_after(cursor) {
                Some(f) if f <= until_inclusive => {
                    out.push(f);
                    cursor = f;
                }
                _ => break,
            }
        }
        out
    }

    /// The next `count` fires strictly after `after`, ascending (fewer if the schedule ends).
    pub fn preview(&self, after: DateTime<Utc>, count: usize) -> Vec<DateTime<Utc>> {
        let mut out = Vec::with_capacity(count.min(1024));
        let mut cursor = after;
        while out.len() < count {
            match self.next_after(cursor) {
                Some(f) => {
                    out.push(f);
                    cursor = f;
                }
                None => break,
            }
        }
        out
    }

    // ---- cron -------------------------------------------------------------------------------

    /// The first fire strictly after `after` for one monotone pass of the overlap policy.
    fn cron_next(&self, c: &CronExpr, after: DateTime<Utc>, pass: Pass) -> Option<DateTime<Utc>> {
        let tz = &self.zone;
        let mut cursor = next_cursor(tz, after, pass);
        let mut steps = 0u32;
        loop {
            let wall = c.next_wall(cursor)?;
            let date = wall.date();
            if !self.exclusions.is_empty() && self.exclusions.excludes(date) {
                steps += 1;
                if steps > MAX_SEARCH_STEPS {
                    return None;
                }
                cursor = date.succ_opt()?.and_hms_opt(0, 0, 0)? - Duration::seconds(1);
                continue;
            }
            match resolve_wall(tz, wall, pass) {
                Wall::At(t) if t > after => return Some(t),
                Wall::At(_) => cursor = wall,
                Wall::Gap { end, .. } => match (self.on_gap, end) {
                    (GapPolicy::Shift, Some(t)) if t > after => return Some(t),
                    (_, Some(t)) => {
                        // Every other wall time in this gap resolves the same way: jump past it.
                        steps += 1;
                        if steps > MAX_SEARCH_STEPS {
                            return None;
                        }
                        cursor = local_of(tz, t) - Duration::seconds(1);
                        if cursor < wall {
                            cursor = wall;
                        }
                    }
                    (_, None) => cursor = wall,
                },
            }
        }
    }

    /// The last fire at or before `x` for one monotone pass of the overlap policy.
    fn cron_prev(&self, c: &CronExpr, x: DateTime<Utc>, pass: Pass) -> Option<DateTime<Utc>> {
        let tz = &self.zone;
        let mut cursor = prev_cursor(tz, x, pass);
        let mut steps = 0u32;
        loop {
            let wall = c.prev_wall(cursor)?;
            let date = wall.date();
            if !self.exclusions.is_empty() && self.exclusions.excludes(date) {
                steps += 1;
                if steps > MAX_SEARCH_STEPS {
                    return None;
                }
                cursor = date.and_hms_opt(0, 0, 0)?;
                continue;
            }
            match resolve_wall(tz, wall, pass) {
                Wall::At(t) if t <= x => return Some(t),
                Wall::At(_) => cursor = wall,
                Wall::Gap { begin, end } => match (self.on_gap, end) {
                    (GapPolicy::Shift, Some(t)) if t <= x => return Some(t),
                    _ => {
                        steps += 1;
                        if steps > MAX_SEARCH_STEPS {
                            return None;
                        }
                        cursor = match begin {
                            Some(b) if b < wall => b,
                            _ => wall,
                        };
                    }
                },
            }
        }
    }

    // ---- rate -------------------------------------------------------------------------------

    fn rate_next(&self, anchor: i64, period: i64, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        // The first fire > after is the first whole second >= floor(after) + 1.
        let lower = after.timestamp().checked_add(1)?;
        let mut k = if lower <= anchor { 0 } else { div_ceil(lower - anchor, period) };
        let mut steps = 0u32;
        loop {
            let t = anchor.checked_add(k.checked_mul(period)?)?;
            if t > HORIZON_SECS {
                return None;
            }
            let fire = from_secs(t)?;
            if self.exclusions.is_empty() && self.business.is_none() {
                return Some(fire);
            }
            let date = local_of(&self.zone, fire).date();
            if !self.day_off(date) {
                return Some(fire);
            }
            steps += 1;
            if steps > MAX_SEARCH_STEPS {
                return None;
            }
            let next_day = zone::day_start(&self.zone, date.succ_opt()?)?.timestamp();
            k = div_ceil(next_day - anchor, period).max(k + 1);
        }
    }

    fn rate_prev(&self, anchor: i64, period: i64, x: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let upper = x.timestamp();
        if upper < anchor {
            return None;
        }
        let mut k = (upper - anchor).div_euclid(period);
        let mut steps = 0u32;
        loop {
            if k < 0 {
                return None;
            }
            let fire = from_secs(anchor.checked_add(k.checked_mul(period)?)?)?;
            if self.exclusions.is_empty() && self.business.is_none() {
                return Some(fire);
            }
            let date = local_of(&self.zone, fire).date();
            if !self.day_off(date) {
                return Some(fire);
            }
            steps += 1;
            if steps > MAX_SEARCH_STEPS {
                return None;
            }
            let day_start = zone::day_start(&self.zone, date)?.timestamp();
            k = (day_start - 1 - anchor).div_euclid(period).min(k - 1);
        }
    }
}

/// The wall time after which (exclusive) a forward search for one pass looks for fires after
/// `after`.
fn next_cursor(tz: &Zone, after: DateTime<Utc>, pass: Pass) -> NaiveDateTime {
    let w_after = local_of(tz, after);
    if pass == Pass::Last {
        // `after` in the first occurrence of a repeated hour: the second occurrences of the
        // earlier wall times of that hour are still ahead of `after`.
        if let Some(len) = zone::first_pass_overlap(tz, after, w_after) {
            return overlap_start(tz, w_after, len) - Duration::seconds(1);
        }
    } else if let Some(len) = zone::second_pass_overlap(tz, after, w_after) {
        // `after` in the second occurrence: first occurrences of the rest of that hour are
        // already behind it.
        return overlap_end(tz, w_after, len) - Duration::seconds(1);
    }
    w_after
}

/// The wall time before which (exclusive) a backward search for one pass looks for fires at or
/// before `x`.
fn prev_cursor(tz: &Zone, x: DateTime<Utc>, pass: Pass) -> NaiveDateTime {
    let w_x = local_of(tz, x);
    if pass == Pass::First {
        // `x` in the second occurrence of a repeated hour: first occurrences of the later
        // wall times of that hour are still before `x`.
        if let Some(len) = zone::second_pass_overlap(tz, x, w_x) {
            return overlap_end(tz, w_x, len);
        }
    } else if let Some(len) = zone::first_pass_overlap(tz, x, w_x) {
        // `x` in the first occurrence: second occurrences of that hour are all after it.
        return overlap_start(tz, w_x, len);
    }
    // One second past the floor of w_x.
    floor_secs(w_x) + Duration::seconds(1)
}

/// No `rate()` fire after 2100-12-31T23:59:59Z, matching the `cron` crate's last year.
const HORIZON_SECS: i64 = 4_133_980_799;

/// No fire before 1970 (the `cron` crate's first year); also keeps zone conversions away from
/// chrono's lower limit.
fn earliest_instant() -> DateTime<Utc> {
    DateTime::<Utc>::UNIX_EPOCH
}

fn floor_secs(w: NaiveDateTime) -> NaiveDateTime {
    w - Duration::nanoseconds(i64::from(chrono::Timelike::nanosecond(&w)))
}

/// The first wall time of the repeated interval that contains `wall` (which is ambiguous), by
/// bisection over at most `len` seconds before it.
fn overlap_start(tz: &Zone, wall: NaiveDateTime, len: Duration) -> NaiveDateTime {
    let wall = floor_secs(wall);
    // lo: not ambiguous (or the earliest candidate), hi: ambiguous.
    let (mut lo, mut hi) = (wall - len, wall);
    if is_ambiguous(tz, lo) {
        return lo;
    }
    while hi - lo > Duration::seconds(1) {
        let mid = lo + Duration::seconds((hi - lo).num_seconds() / 2);
        if is_ambiguous(tz, mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// One second past the last wall time of the repeated interval that contains `wall`.
fn overlap_end(tz: &Zone, wall: NaiveDateTime, len: Duration) -> NaiveDateTime {
    let wall = floor_secs(wall);
    let (mut lo, mut hi) = (wall, wall + len);
    if is_ambiguous(tz, hi) {
        return hi + Duration::seconds(1);
    }
    while hi - lo > Duration::seconds(1) {
        let mid = lo + Duration::seconds((hi - lo).num_seconds() / 2);
        if is_ambiguous(tz, mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

fn is_ambiguous(tz: &Zone, wall: NaiveDateTime) -> bool {
    matches!(tz.lookup(wall), Lookup::Ambiguous(..))
}

/// The instants of an `at(..)` under the spec's policies, bounds and exclusions. An `at` that
/// would never fire is refused, naming the field that removed it.
fn resolve_at(
    tz: &Zone,
    wall: NaiveDateTime,
    spec: &ScheduleSpec,
    exclusions: &Exclusions,
) -> Result<Vec<DateTime<Utc>>, ScheduleError> {
    let shown = wall.format("%Y-%m-%dT%H:%M:%S");
    let date: NaiveDate = wall.date();
    if exclusions.excludes(date) {
        return Err(ScheduleError::Exclusions(format!("exclude {date}, the only date of at({shown})")));
    }
    let mut fires = match tz.lookup(wall) {
        Lookup::Single(t) => vec![t],
        Lookup::Ambiguous(a, b) => match spec.on_overlap {
            OverlapPolicy::First => vec![a],
            OverlapPolicy::Last => vec![b],
            OverlapPolicy::Both => vec![a, b],
        },
        Lookup::Gap { .. } => match (spec.on_gap, zone::resolve(tz, wall, GapPolicy::Shift, Pass::First)) {
            (GapPolicy::Shift, Some(t)) => vec![t],
            _ => {
                return Err(ScheduleError::OnGap(format!(
                    "at({shown}) does not exist in {} (the clocks skip it) and onGap is 'skip', \
                     so it would never fire; use 'shift' or another time",
                    tz.tz().name()
                )))
            }
        },
    };
    fires.retain(|f| spec.start.is_none_or(|s| *f >= s));
    if fires.is_empty() {
        return Err(ScheduleError::Start(format!("is after at({shown}), which would never fire")));
    }
    fires.retain(|f| spec.end.is_none_or(|e| *f <= e));
    if fires.is_empty() {
        return Err(ScheduleError::End(format!("is before at({shown}), which would never fire")));
    }
    Ok(fires)
}

#[cfg(test)]
mod bad_input;
#[cfg(test)]
mod business_tests;
#[cfg(test)]
mod day_rules;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
