//! How dense a schedule can get: [`Schedule::density`], the most fires in any hour and the
//! shortest gap between two fires, computed from the schedule's fields over its whole cycle.
//! No fire is enumerated: a schedule that is sparse for its next thousand fires and dense
//! later (a second expression for Sundays, a year field, a calendar that rolls fires) is
//! measured by its densest hour, which is what a budget must charge.
//!
//! What is exact and what is a bound:
//! - A cron expression fires at the same times of day (seconds × minutes × hours) on every
//!   day its day fields choose; exclusions and business calendars only remove fires or move
//!   them to another date at the same local time. So every fire's wall time lies in the
//!   periodic set "those times of day, every day" (`walls::Walls`), and the density of that
//!   set bounds the schedule's. Without a zone transition, its busiest hour is exact for any
//!   expression that fires at all (e.g. |seconds| × |minutes| for one expression): some day
//!   fires that hour in full. The shortest gap is exact when consecutive days can both fire
//!   (a weekly job is bounded by a day).
//! - The cron expressions of a union share the zone and DST policies, so they are measured as
//!   one set of times of day: exact in the same sense (two members that fire on different
//!   days count as if on the same day, a bound).
//! - Zone transitions (`transitions`) from `from` to the schedule's end are each measured
//!   exactly for that periodic set under the job's onGap/onOverlap: a fall-back under `both`
//!   fires the repeated hour twice, a spring-forward under `shift` adds the instant the gap
//!   collapses to, a half-hour shift can put parts of two wall hours in one real hour.
//! - `rate()` is exact (⌈3600 / period⌉ an hour, `period` apart); `at()` is exact.
//! - Across kinds (cron with `rate()` or `at()`, or several `rate()`s) the hour's fires are
//!   summed (a bound: they may coincide), capped at 3,600 (fires are whole seconds). Gaps
//!   between two `rate()` lattices are exact (by their gcd), an `at()` instant's neighbours are
//!   looked up exactly, and a cron set next to a `rate()` lattice is bounded by 1 s.
//! - `start`, `end`, `maxRuns`, jitter: ignored (they only remove fires or move dispatch).

mod transitions;
mod walls;

use chrono::{DateTime, Duration, Utc};

use crate::schedule::{Kind, Schedule};
use transitions::Transition;
use walls::Walls;

/// The most fires of a schedule in any hour (a sliding 3,600 s window), and the shortest
/// time between two consecutive fires. See the module doc for what is exact and what is an
/// upper (peak) or lower (gap) bound; both are sound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Density {
    /// The most fires in any 3,600 s (at most 3,600).
    pub peak_per_hour: u32,
    /// The shortest time between two fires, in seconds; `None` when the schedule fires at
    /// most once.
    pub min_gap_secs: Option<u32>,
}

/// Fires are whole seconds: no more than this many in an hour.
const SECONDS_PER_HOUR: u32 = 3_600;

impl Schedule {
    /// The schedule's [`Density`] over its whole cycle, with the zone transitions from
    /// `from` (pass now) to its end or 2100.
    pub fn density(&self, from: DateTime<Utc>) -> Density {
        let mut peak = 0u32;
        let mut gaps: Vec<i64> = Vec::new();
        let mut rates: Vec<(i64, i64)> = Vec::new();
        if let Some(walls) = Walls::of(self.members().filter_map(|m| match &m.kind {
            Kind::Cron(c) => Some(&c.times),
            _ => None,
        })) {
            let d = self.cron_density(&walls, from);
            peak += d.peak_per_hour;
            gaps.extend(d.min_gap_secs.map(i64::from));
        }
        for m in self.members() {
            match &m.kind {
                Kind::Cron(_) => {}
                Kind::Rate { anchor, period } => {
                    // ⌈3600 / period⌉ points of a lattice fit in a half-open hour.
                    peak += u32::try_from((3_600 + period - 1) / period).unwrap_or(SECONDS_PER_HOUR);
                    gaps.push(*period);
                    rates.push((*anchor, *period));
                }
                Kind::At(fires) => {
                    peak += if fires.windows(2).any(|w| w[1] - w[0] < Duration::hours(1)) { 2 } else { 1 };
                    // Exact: the union's own neighbours of each instant.
                    for a in fires {
                        gaps.extend(self.next_after(*a).map(|n| (n - *a).num_seconds()));
                        let before = self.prev_at_or_before(*a - Duration::seconds(1));
                        gaps.extend(before.map(|p| (*a - p).num_seconds()));
                    }
                }
            }
        }
        gaps.extend(rate_cross_gaps(&rates));
        if !rates.is_empty() && self.members().any(|m| matches!(m.kind, Kind::Cron(_))) {
            // A cron set next to a rate() lattice: distinct whole-second instants.
            gaps.push(1);
        }
        Density {
            peak_per_hour: peak.min(SECONDS_PER_HOUR),
            min_gap_secs: gaps
                .into_iter()
                .filter(|g| *g > 0)
                .min()
                .map(|g| u32::try_from(g).unwrap_or(u32::MAX)),
        }
    }

    /// The density of the cron members' wall times, `walls`, in this schedule's zone: the
    /// periodic set's own, and around each zone transition from `from` on.
    fn cron_density(&self, walls: &Walls, from: DateTime<Utc>) -> Density {
        let mut peak = walls.peak();
        let mut gap = walls.gap();
        let from = from.max(self.start.unwrap_or(from)).timestamp() - 2 * 86_400;
        let until = self.end.map_or(transitions::HORIZON_SECS, |e| e.timestamp());
        match transitions::shapes(&self.zone, from, until) {
            None => {
                // Two transitions within two days: not measured, so bounded by the most there
                // can be.
                peak = SECONDS_PER_HOUR;
                gap = 1;
            }
            Some(shapes) => {
                for t in shapes {
                    let (p, g) = around(walls, t, self.on_gap, self.on_overlap);
                    peak = peak.max(p);
                    gap = gap.min(g);
                }
            }
        }
        Density { peak_per_hour: peak.min(SECONDS_PER_HOUR), min_gap_secs: Some(gap as u32) }
    }
}

/// The busiest hour and the shortest gap of the periodic wall set `walls` near transition
/// `t`, under the gap and overlap policies (see `next_fire`: wall -> instant per pass).
fn around(
    walls: &Walls,
    t: Transition,
    on_gap: crate::GapPolicy,
    on_overlap: crate::OverlapPolicy,
) -> (u32, i64) {
    use crate::{GapPolicy, OverlapPolicy};
    let (at, before, after) = (t.at, i64::from(t.before), i64::from(t.after));
    let forward = after > before;
    // Walls below `pre_end` take the old offset, walls from `post_start` the new one.
    let (pre_end, post_start) = match (forward, on_overlap) {
        (true, _) => (at + before, at + after),
        (false, OverlapPolicy::First) => (at + before, at + before),
        (false, OverlapPolicy::Last) => (at + after, at + after),
        (false, OverlapPolicy::Both) => (at + before, at + after),
    };
    let mut fires = vec![walls.pred(pre_end) - before, walls.succ(post_start) - after];
    fires.extend(walls.between(at - 3_601 + before, pre_end).map(|w| w - before));
    fires.extend(walls.between(post_start, at + 3_601 + after).map(|w| w - after));
    // Every wall time of a skipped span fires at the transition under `shift`.
    if forward && on_gap == GapPolicy::Shift && walls.succ(at + before) < at + after {
        fires.push(at);
    }
    fires.sort_unstable();
    fires.dedup();
    let gap = fires.windows(2).map(|w| w[1] - w[0]).min().unwrap_or(86_400);
    let mut peak = 0usize;
    let mut lo = 0usize;
    for (hi, f) in fires.iter().enumerate() {
        while *f - fires[lo] >= 3_600 {
            lo += 1;
        }
        peak = peak.max(hi + 1 - lo);
    }
    (u32::try_from(peak).unwrap_or(SECONDS_PER_HOUR), gap)
}

/// The shortest gap between two `rate()` lattices `anchor + k·period`: their differences are
/// `anchor1 - anchor2 + gcd·ℤ` (every one reached once both run), and equal instants are one
/// fire.
fn rate_cross_gaps(rates: &[(i64, i64)]) -> Vec<i64> {
    let mut out = Vec::new();
    for (i, (a1, p1)) in rates.iter().enumerate() {
        for (a2, p2) in &rates[i + 1..] {
            let g = gcd(*p1, *p2);
            let r = (a1 - a2).rem_euclid(g);
            out.push(if r == 0 { g } else { r.min(g - r) });
        }
    }
    out
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
