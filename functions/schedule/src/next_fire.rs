//! Next and previous fire of one expression, for cron (see "How a cron fire is found" in the
//! crate docs), `rate()` and `at()`; `union` makes [`Schedule::next_after`] and
//! [`Schedule::prev_at_or_before`] of them.

use chrono::{DateTime, Duration, TimeZone, Utc};

use crate::expr::CronExpr;
use crate::schedule::{Kind, Schedule};
use crate::search_cursor::{next_cursor, prev_cursor};
use crate::zone::{self, local_of, resolve_wall, GapPolicy, OverlapPolicy, Pass, Wall};

/// How many excluded days or skipped gaps one search may step over before it gives up and
/// reports the schedule exhausted (about 270 years of daily steps; the `cron` crate stops at
/// 2100 anyway).
pub(crate) const MAX_SEARCH_STEPS: u32 = 100_000;

/// No `rate()` fire after 2100-12-31T23:59:59Z, matching the `cron` crate's last year.
pub(crate) const HORIZON_SECS: i64 = 4_133_980_799;

/// No fire before 1970 (the `cron` crate's first year); also keeps zone conversions away from
/// chrono's lower limit.
fn earliest_instant() -> DateTime<Utc> {
    DateTime::<Utc>::UNIX_EPOCH
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
    /// The first fire of this schedule's own expression (not its `others`) strictly after
    /// `after`, or `None` when it is exhausted (past `end`, an `at` already passed, or nothing
    /// left before 2100).
    pub(crate) fn next_after_one(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
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

    /// The last fire of this schedule's own expression at or before `at_or_before`, or `None`
    /// if there is none (before `start`, or before the first fire).
    pub(crate) fn prev_at_or_before_one(&self, at_or_before: DateTime<Utc>) -> Option<DateTime<Utc>> {
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
