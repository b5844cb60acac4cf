//! Cron fires rolled by a business calendar, and the explained preview.
//!
//! ## How a rolled fire is found
//! Rolling maps a whole local date `d` to a business day `b = roll(d)`; every wall time of `d`
//! keeps its time of day on `b`. So the fires on business day `b` are the times of day of the
//! raw fires on each *source* date of `b` (`b` itself and the runs of non-business days next to
//! it that roll onto it), placed on `b` and resolved there under the job's gap/overlap policy.
//! Two sources with the same time of day give the same instant: one fire (executions are keyed
//! by (job, scheduled instant), so there is nothing else it could be).
//!
//! The search walks business days in order from the local date of `after`. For one pass of the
//! overlap policy, wall time -> instant is monotone on a fixed date, so for each source the first
//! wall time after the pass's cursor is the only candidate; the fire is the earliest candidate
//! over the sources. Cost: one `cron` step per source date per business day looked at (1 for
//! `skip` or a day without rolled-in sources, about 3 for a Monday after a weekend), plus a jump
//! over stretches without raw fires so a monthly job does not walk 30 empty days.

use chrono::{DateTime, Datelike, Days, Duration, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use serde::Serialize;

use super::expr::CronExpr;
use super::next_fire::MAX_SEARCH_STEPS;
use super::schedule::{Business, Kind, Schedule};
use super::search_cursor::{next_cursor, prev_cursor};
use super::zone::{self, resolve_wall, Pass, Wall};
use super::{BusinessDays, GapPolicy, Roll};

/// One line of an explained preview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum PreviewFire {
    /// A fire. `rolled_from`/`reason` are set when a business calendar moved it.
    Fire {
        /// The scheduled instant.
        at: DateTime<Utc>,
        /// Where the fire would have been without the calendar.
        #[serde(skip_serializing_if = "Option::is_none")]
        rolled_from: Option<DateTime<Utc>>,
        /// Why it moved: `"holiday 2026-10-01 in cn-holidays v3; following"`.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A fire the business calendar removed: skipped, no business day close enough, or rolled
    /// onto an instant that already fires (merged).
    Skipped {
        /// Where the fire would have been without the calendar.
        at: DateTime<Utc>,
        /// Why.
        reason: String,
    },
}

impl PreviewFire {
    /// The instant of the line.
    pub fn at(&self) -> DateTime<Utc> {
        match self {
            PreviewFire::Fire { at, .. } | PreviewFire::Skipped { at, .. } => *at,
        }
    }
}

/// A fire, where it was rolled from, and why.
type Explained = (DateTime<Utc>, Option<DateTime<Utc>>, Option<String>);

/// Raw fires looked at by one explained preview, at most.
const EXPLAIN_RAW_LIMIT: usize = 10_000;

fn add_days(d: NaiveDate, n: u64) -> Option<NaiveDate> {
    d.checked_add_days(Days::new(n))
}

fn sub_days(d: NaiveDate, n: u64) -> Option<NaiveDate> {
    d.checked_sub_days(Days::new(n))
}

/// The `cron` enumerator with a one-entry memo: "no wall time in `(from, to)`, and `to` is the
/// first after `from`". The search asks for the first wall after a cursor many times in a row
/// with cursors inside that gap (each day's sources, the jump to the next raw fire), so most
/// asks cost a comparison instead of a `cron` step.
struct Walls<'a> {
    cron: &'a CronExpr,
    memo: Option<(NaiveDateTime, Option<NaiveDateTime>)>,
}

impl<'a> Walls<'a> {
    fn new(cron: &'a CronExpr) -> Self {
        Walls { cron, memo: None }
    }

    #[inline]
    fn next(&mut self, cursor: NaiveDateTime) -> Option<NaiveDateTime> {
        if let Some((from, to)) = self.memo {
            if from <= cursor && to.is_none_or(|t| cursor < t) {
                return to;
            }
        }
        let to = self.cron.next_wall(cursor);
        self.memo = Some((cursor, to));
        to
    }
}

impl Schedule {
    /// Whether fires on local date `date` are removed by the exclusions, or (for `rate()`, whose
    /// only business roll is `skip`) by the business calendar.
    pub(super) fn day_off(&self, date: NaiveDate) -> bool {
        self.exclusions.excludes(date) || self.business.as_ref().is_some_and(|b| !b.days.is_business(date))
    }

    /// The business calendar of the schedule, if any, with its roll.
    pub fn business_calendar(&self) -> Option<(&BusinessDays, Roll)> {
        self.business.as_ref().map(|b| (b.days.as_ref(), b.roll))
    }

    /// The first rolled fire strictly after `after` for one pass, with its source date.
    pub(super) fn business_next(
        &self,
        c: &CronExpr,
        b: &Business,
        after: DateTime<Utc>,
        pass: Pass,
    ) -> Option<(DateTime<Utc>, NaiveDate, NaiveTime)> {
        let cursor = next_cursor(&self.zone, after, pass);
        let reach = BusinessDays::reach(b.roll);
        let mut walls = Walls::new(c);
        if let Some(fire) = self.business_next_fast(&mut walls, b, cursor, after, pass)? {
            return Some(fire);
        }
        let mut day = cursor.date();
        let mut steps = 0u32;
        loop {
            if day.year() > 2100 {
                return None;
            }
            // Times of day strictly after which to look on `day`: the cursor's on its own date,
            // all of them on later dates.
            let from = if day == cursor.date() { Some(cursor.time()) } else { None };
            let mut best: Option<(DateTime<Utc>, NaiveDate, NaiveTime)> = None;
            b.days.for_each_source(day, b.roll, |src| {
                if !self.exclusions.is_empty() && self.exclusions.excludes(src) {
                    return;
                }
                if let Some((t, tod)) = self.first_on(&mut walls, src, day, from, after, pass) {
                    // Ties: the date's own fire first, else the earliest source.
                    if best.is_none_or(|(bt, bs, _)| t < bt || (t == bt && src == day && bs != day)) {
                        best = Some((t, src, tod));
                    }
                }
            });
            if best.is_some() {
                return best;
            }
            steps += 1;
            if steps > MAX_SEARCH_STEPS {
                return None;
            }
            // Jump over a stretch without raw fires. The sources of a business day after `day`
            // are all after `base`: after the last business day up to `day` (sources never
            // cross a business day) and, deep in a closure longer than a roll reaches, after
            // `day - reach` (a source is at most `reach` days from its business day). A raw
            // fire on date `r` lands on or after the business day at or before `r` whatever the
            // roll.
            let base = match b.days.business_at_or_before(day) {
                Some(business) => business,
                None => sub_days(day, reach)?,
            };
            let raw = walls.next(add_days(base, 1)?.and_hms_opt(0, 0, 0)? - Duration::seconds(1))?;
            let landing = b.days.business_at_or_before(raw.date()).or_else(|| sub_days(raw.date(), reach));
            day = add_days(day, 1)?.max(landing.unwrap_or(day));
        }
    }

    /// Fast path (most calls: an ordinary week): the first raw wall after the cursor is on
    /// date `d`, and every date from the cursor's to `d` is a business day, with the day
    /// before (rolls that move forward) and the day after `d` (rolls that move back). Sources
    /// never cross a business day, so no rolled fire can land in that stretch, and the raw
    /// fire is not rolled itself: it is the answer when it resolves after `after`
    /// (otherwise the general search of [`Schedule::business_next`] decides). `skip` needs only
    /// `d` itself. `Some(None)`: no answer here; `None`: a date out of chrono's range, where the
    /// whole search gives up.
    fn business_next_fast(
        &self,
        walls: &mut Walls<'_>,
        b: &Business,
        cursor: NaiveDateTime,
        after: DateTime<Utc>,
        pass: Pass,
    ) -> Option<Option<(DateTime<Utc>, NaiveDate, NaiveTime)>> {
        let Some(w) = walls.next(cursor) else { return Some(None) };
        // Which neighbours matter: fires roll forward onto the cursor's date only from
        // the day before it, backward onto `d` only from the day after it.
        let back = u64::from(matches!(b.roll, Roll::Following | Roll::ModifiedFollowing));
        let ahead = u64::from(matches!(b.roll, Roll::Preceding | Roll::ModifiedFollowing));
        let first = if b.roll == Roll::Skip { w.date() } else { sub_days(cursor.date(), back)? };
        let last = add_days(w.date(), ahead)?;
        if (last - first).num_days() <= 8
            && first.iter_days().take_while(|d| *d <= last).all(|d| b.days.is_business(d))
        {
            if let Wall::At(t) = resolve_wall(&self.zone, w, pass) {
                if t > after && (self.exclusions.is_empty() || !self.exclusions.excludes(w.date())) {
                    return Some(Some((t, w.date(), w.time())));
                }
            }
        }
        Some(None)
    }

    /// The first wall time on source date `src` after time of day `from` (all of them when
    /// `None`) that, placed on `day`, resolves after `after` under `pass`. Returns the instant and
    /// the time of day of the raw fire.
    fn first_on(
        &self,
        walls: &mut Walls<'_>,
        src: NaiveDate,
        day: NaiveDate,
        from: Option<NaiveTime>,
        after: DateTime<Utc>,
        pass: Pass,
    ) -> Option<(DateTime<Utc>, NaiveTime)> {
        let mut cursor = match from {
            Some(t) => src.and_time(t),
            None => src.and_hms_opt(0, 0, 0)? - Duration::seconds(1),
        };
        loop {
            let wall = walls.next(cursor)?;
            if wall.date() != src {
                return None;
            }
            let placed = NaiveDateTime::new(day, wall.time());
            match resolve_wall(&self.zone, placed, pass) {
                Wall::At(t) if t > after => return Some((t, wall.time())),
                Wall::At(_) => cursor = wall,
                Wall::Gap { end, .. } => match (self.on_gap, end) {
                    (GapPolicy::Shift, Some(t)) if t > after => return Some((t, wall.time())),
                    (_, Some(t)) => {
                        // Every other time of this gap resolves the same way: jump past it.
                        let past = zone::local_of(&self.zone, t);
                        if past.date() != day {
                            return None;
                        }
                        cursor = src.and_time(past.time()) - Duration::seconds(1);
                        if cursor < wall {
                            cursor = wall;
                        }
                    }
                    (_, None) => cursor = wall,
                },
            }
        }
    }

    /// The last rolled fire at or before `x` for one pass.
    pub(super) fn business_prev(
        &self,
        c: &CronExpr,
        b: &Business,
        x: DateTime<Utc>,
        pass: Pass,
    ) -> Option<DateTime<Utc>> {
        let cursor = prev_cursor(&self.zone, x, pass);
        let reach = BusinessDays::reach(b.roll);
        // The cursor may be midnight of the next date (x at 23:59:59): start on the date before.
        let mut day =
            if cursor.time() == NaiveTime::MIN { sub_days(cursor.date(), 1)? } else { cursor.date() };
        let mut steps = 0u32;
        loop {
            if day.year() < 1970 {
                return None;
            }
            let until = if day == cursor.date() { Some(cursor.time()) } else { None };
            let mut best: Option<DateTime<Utc>> = None;
            b.days.for_each_source(day, b.roll, |src| {
                if !self.exclusions.is_empty() && self.exclusions.excludes(src) {
                    return;
                }
                if let Some(t) = self.last_on(c, src, day, until, x, pass) {
                    best = Some(best.map_or(t, |bt| bt.max(t)));
                }
            });
            if best.is_some() {
                return best;
            }
            steps += 1;
            if steps > MAX_SEARCH_STEPS {
                return None;
            }
            day = sub_days(day, 1)?;
            if steps > 2 {
                let raw = c.prev_wall(add_days(day, reach + 1)?.and_hms_opt(0, 0, 0)?)?;
                if let Some(latest) = add_days(raw.date(), reach) {
                    day = day.min(latest);
                }
            }
        }
    }

    /// The last wall time on `src` before time of day `until` (all of them when `None`) that,
    /// placed on `day`, resolves at or before `x` under `pass`.
    fn last_on(
        &self,
        c: &CronExpr,
        src: NaiveDate,
        day: NaiveDate,
        until: Option<NaiveTime>,
        x: DateTime<Utc>,
        pass: Pass,
    ) -> Option<DateTime<Utc>> {
        let mut cursor = match until {
            Some(t) => src.and_time(t),
            None => add_days(src, 1)?.and_hms_opt(0, 0, 0)?,
        };
        loop {
            let wall = c.prev_wall(cursor)?;
            if wall.date() != src {
                return None;
            }
            let placed = NaiveDateTime::new(day, wall.time());
            match resolve_wall(&self.zone, placed, pass) {
                Wall::At(t) if t <= x => return Some(t),
                Wall::At(_) => cursor = wall,
                Wall::Gap { begin, end } => match (self.on_gap, end) {
                    (GapPolicy::Shift, Some(t)) if t <= x => return Some(t),
                    _ => {
                        cursor = match begin {
                            Some(bg) if bg < placed && bg.date() == day => src.and_time(bg.time()),
                            _ => wall,
                        };
                    }
                },
            }
        }
    }

    /// The explained preview of this schedule's own expression (not its `others`): its next
    /// `count` fires with the reason of every rolled one and the raw fires the business calendar
    /// removed in between (a schedule without one explains nothing).
    pub(crate) fn preview_explained_one(&self, after: DateTime<Utc>, count: usize) -> Vec<PreviewFire> {
        let (Kind::Cron(c), Some(b)) = (&self.kind, &self.business) else {
            let mut out = Vec::with_capacity(count.min(1024));
            let mut cursor = after;
            while out.len() < count {
                let Some(at) = self.next_after_one(cursor) else { break };
                out.push(PreviewFire::Fire { at, rolled_from: None, reason: None });
                cursor = at;
            }
            return out;
        };
        // The fires with their sources.
        let mut fires: Vec<Explained> = Vec::new();
        let mut cursor = after;
        while fires.len() < count {
            let Some((at, src, tod)) = self.next_explained(c, b, cursor) else { break };
            let (rolled_from, reason) = if Some(src) != self.local_date(at) {
                let raw = zone::resolve(&self.zone, src.and_time(tod), GapPolicy::Shift, Pass::First);
                (raw, Some(format!("{}; {}", b.days.why_not(src).unwrap_or_default(), b.roll)))
            } else {
                (None, None)
            };
            fires.push((at, rolled_from, reason));
            cursor = at;
        }
        // The raw fires on non-business days up to the last fire (or a year on when the
        // schedule ended), which did not become a fire of their own.
        let horizon = fires.last().map(|f| f.0).unwrap_or(after + Duration::days(366));
        let mut raw = self.clone();
        raw.business = None;
        let mut out: Vec<PreviewFire> = fires
            .iter()
            .map(|(at, rolled_from, reason)| PreviewFire::Fire {
                at: *at,
                rolled_from: *rolled_from,
                reason: reason.clone(),
            })
            .collect();
        let mut cursor = after;
        for _ in 0..EXPLAIN_RAW_LIMIT {
            let Some(f) = raw.next_after_one(cursor).filter(|f| *f <= horizon) else { break };
            cursor = f;
            let Some(src) = self.local_date(f) else { continue };
            let Some(why) = b.days.why_not(src) else { continue };
            let reason = match b.days.roll(src, b.roll) {
                None if b.roll == Roll::Skip => format!("{why}; skip"),
                None => format!("{why}; {}: no business day within {} days", b.roll, super::MAX_ROLL_DAYS),
                Some(day) => {
                    let tod = zone::local_of(&self.zone, f).time();
                    let to = zone::resolve(&self.zone, day.and_time(tod), self.on_gap, Pass::First);
                    if fires.iter().any(|(at, from, _)| Some(*at) == to && *from == Some(f)) {
                        continue; // shown as a rolled fire
                    }
                    match to {
                        Some(t) if fires.iter().any(|(at, _, _)| *at == t) => format!(
                            "{why}; {} to {}, which already fires (merged)",
                            b.roll,
                            t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
                        ),
                        // Rolled before `after` or past the preview: not a fire of this window.
                        _ => continue,
                    }
                }
            };
            out.push(PreviewFire::Skipped { at: f, reason });
        }
        out.sort_by_key(|p| p.at());
        out
    }

    fn local_date(&self, t: DateTime<Utc>) -> Option<NaiveDate> {
        Some(zone::local_of(&self.zone, t).date())
    }

    /// `next_after` for a rolled cron schedule, keeping the source of the fire.
    fn next_explained(
        &self,
        c: &CronExpr,
        b: &Business,
        after: DateTime<Utc>,
    ) -> Option<(DateTime<Utc>, NaiveDate, NaiveTime)> {
        let after = after.max(DateTime::<Utc>::UNIX_EPOCH);
        let after = match self.start {
            Some(s) if after < s => s - Duration::nanoseconds(1),
            _ => after,
        };
        let one = |pass| self.business_next(c, b, after, pass);
        let fire = match self.on_overlap {
            super::OverlapPolicy::First => one(Pass::First),
            super::OverlapPolicy::Last => one(Pass::Last),
            super::OverlapPolicy::Both => match (one(Pass::First), one(Pass::Last)) {
                (Some(a), Some(z)) => Some(if z.0 < a.0 { z } else { a }),
                (a, z) => a.or(z),
            },
        }?;
        match self.end {
            Some(e) if fire.0 > e => None,
            _ => Some(fire),
        }
    }
}
