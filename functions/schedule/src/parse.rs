//! Validation: [`Schedule::parse`] and its variants turn a [`ScheduleSpec`] into a [`Schedule`],
//! refusing a spec with an error that names the field at fault. An `at(..)` is resolved to its
//! instants here, once, so that one that would never fire is refused up front rather than
//! silently never firing.

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};

use crate::business::{BusinessDays, Roll};
use crate::calendar::Exclusions;
use crate::error::ScheduleError;
use crate::expr::{self, Expr};
use crate::schedule::{Business, Kind, Schedule};
use crate::spec::{ScheduleSpec, MAX_EXTRA_EXPRESSIONS, MAX_JITTER_WINDOW_SECS};
use crate::tzdb;
use crate::zone::{self, GapPolicy, Lookup, OverlapPolicy, Pass, Zone};

/// The first whole second at or after `t`.
fn ceil_secs(t: DateTime<Utc>) -> i64 {
    t.timestamp() + i64::from(t.timestamp_subsec_nanos() > 0)
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
        let exprs = parse_expressions(spec)?;
        let tz = Zone::Compiled(zone::parse_zone(&spec.timezone)?);
        Schedule::build_all(spec, anchor, exprs, tz, Schedule::business(spec, business)?)
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
        let exprs = parse_expressions(spec)?;
        let tz = db.zone(zone::parse_zone(&spec.timezone)?)?;
        let business = match business {
            None => None,
            some => Schedule::business(spec, some)?,
        };
        Schedule::build_all(spec, anchor, exprs, tz, business)
    }

    /// One schedule per expression, the first holding the others (see `union`).
    fn build_all(
        spec: &ScheduleSpec,
        anchor: DateTime<Utc>,
        exprs: Vec<Expr>,
        tz: Zone,
        business: Option<Business>,
    ) -> Result<Schedule, ScheduleError> {
        let mut members = exprs
            .into_iter()
            .map(|e| Schedule::build(spec, anchor, e, tz.clone(), business.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        let mut first = members.remove(0);
        first.others = members;
        // Two spellings of one expression (`0 9 * * *`, `0 0 9 * * *`) fire at the same
        // instants: the second is a mistake, not a second schedule.
        for (i, s) in first.others.iter().enumerate() {
            let before = std::iter::once(&first).chain(&first.others[..i]);
            if let Some(j) = before.clone().position(|o| o.normalized == s.normalized) {
                let of = if j == 0 { "expression".to_string() } else { format!("expressions[{}]", j - 1) };
                return Err(ScheduleError::Expressions {
                    index: i,
                    reason: format!("fires exactly as {of} ({}); remove it", s.normalized),
                });
            }
        }
        Ok(first)
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

    /// Checks the spec's fields around the expression and assembles the schedule.
    fn build(
        spec: &ScheduleSpec,
        anchor: DateTime<Utc>,
        expr: Expr,
        tz: Zone,
        business: Option<Business>,
    ) -> Result<Schedule, ScheduleError> {
        check_bounds(spec)?;
        let exclusions = Exclusions::parse(&spec.exclusions)?;
        check_jitter(spec)?;
        let (kind, normalized) = kind_of(spec, anchor, expr, &tz, &exclusions, business.as_ref())?;
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
            others: Vec::new(),
        })
    }
}

/// Every expression of the spec parsed, `expression` first; an error in `expressions` names
/// its index there.
fn parse_expressions(spec: &ScheduleSpec) -> Result<Vec<Expr>, ScheduleError> {
    if spec.expressions.len() > MAX_EXTRA_EXPRESSIONS {
        return Err(ScheduleError::Expressions {
            index: MAX_EXTRA_EXPRESSIONS,
            reason: format!(
                "is one too many: at most {MAX_EXTRA_EXPRESSIONS} further expressions are allowed"
            ),
        });
    }
    let mut out = vec![expr::parse_expression(&spec.expression)?];
    for (index, text) in spec.expressions.iter().enumerate() {
        out.push(
            expr::parse_expression(text)
                .map_err(|e| ScheduleError::Expressions { index, reason: e.reason().to_string() })?,
        );
    }
    Ok(out)
}

/// `start` and `end` each in range, and `end` not before `start`.
fn check_bounds(spec: &ScheduleSpec) -> Result<(), ScheduleError> {
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
    Ok(())
}

fn check_jitter(spec: &ScheduleSpec) -> Result<(), ScheduleError> {
    if spec.jitter_window_secs > MAX_JITTER_WINDOW_SECS {
        return Err(ScheduleError::JitterWindowSecs(format!(
            "{} is longer than the maximum {MAX_JITTER_WINDOW_SECS} (one day)",
            spec.jitter_window_secs
        )));
    }
    Ok(())
}

/// What the schedule computes from, and its normalised expression text.
fn kind_of(
    spec: &ScheduleSpec,
    anchor: DateTime<Utc>,
    expr: Expr,
    tz: &Zone,
    exclusions: &Exclusions,
    business: Option<&Business>,
) -> Result<(Kind, String), ScheduleError> {
    Ok(match expr {
        Expr::Cron(c) => {
            let n = c.normalized.clone();
            (Kind::Cron(c), n)
        }
        Expr::Rate { period_secs } => {
            if let Some(b) = business.filter(|b| b.roll != Roll::Skip) {
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
            let fires = match business {
                None => resolve_at(tz, wall, spec, exclusions)?,
                Some(b) => resolve_rolled_at(tz, wall, spec, exclusions, b)?,
            };
            (Kind::At(fires), format!("at({})", wall.format("%Y-%m-%dT%H:%M:%S")))
        }
    })
}

/// The instants of an `at(..)` whose date is rolled by a business calendar.
fn resolve_rolled_at(
    tz: &Zone,
    wall: NaiveDateTime,
    spec: &ScheduleSpec,
    exclusions: &Exclusions,
    b: &Business,
) -> Result<Vec<DateTime<Utc>>, ScheduleError> {
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
        Some(day) => resolve_at(tz, day.and_time(wall.time()), spec, &Exclusions::default()),
        None => Ok(Vec::new()),
    }
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
