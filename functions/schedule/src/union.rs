//! A schedule of several expressions (`expression` plus `expressions`) fires at the union of
//! their instants, once per instant.
//!
//! Each further expression is compiled into a schedule of its own (`Schedule::others`) with the
//! spec's every other field, so the zone, DST policies, bounds, exclusions and business-calendar
//! roll apply to each expression exactly as they would alone. The questions the rest of the
//! system asks (next, previous, explained preview) are answered for each expression and merged
//! here; everything built on them (previews, fires between, misfire plans, cadence) is then the
//! union without knowing it. Two expressions firing at the same instant make one fire because
//! an execution is keyed by (job, scheduled instant): there is nothing else it could be. The
//! fire is credited to the first expression, in index order, that produces it.

use chrono::{DateTime, Duration, Utc};

use crate::rolled::PreviewFire;
use crate::schedule::Schedule;

impl Schedule {
    /// The schedules of each expression, in index order: this one's own, then `others`.
    pub(crate) fn members(&self) -> impl Iterator<Item = &Schedule> {
        std::iter::once(self).chain(self.others.iter())
    }

    /// The first fire strictly after `after`, or `None` when the schedule is exhausted (past
    /// `end`, every `at` already passed, or nothing left before 2100).
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.members().filter_map(|s| s.next_after_one(after)).min()
    }

    /// The last fire at or before `at_or_before`, or `None` if there is none (before `start`,
    /// or before the first fire).
    pub fn prev_at_or_before(&self, at_or_before: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.members().filter_map(|s| s.prev_at_or_before_one(at_or_before)).max()
    }

    /// Which expression makes the fire at `at`: 0 for `expression`, `i + 1` for
    /// `expressions[i]`, the first in that order when several fire at `at`. `None` when `at` is
    /// not a fire of the schedule.
    pub fn expression_of(&self, at: DateTime<Utc>) -> Option<usize> {
        let just_before = at - Duration::nanoseconds(1);
        self.members().position(|s| s.next_after_one(just_before) == Some(at))
    }

    /// Like [`Schedule::preview`], with the reason of every rolled fire and the fires the
    /// business calendar removed in between (a schedule without one explains nothing). For
    /// several expressions: each one's lines, merged in time order, one line per fire instant
    /// (the first expression's), cut after the `count`th fire.
    pub fn preview_explained(&self, after: DateTime<Utc>, count: usize) -> Vec<PreviewFire> {
        if self.others.is_empty() {
            return self.preview_explained_one(after, count);
        }
        // Each expression's list covers its own first `count` fires, so together they cover
        // the union's first `count`: the union's `count`th fire is no later than any one's.
        let mut lines: Vec<PreviewFire> =
            self.members().flat_map(|s| s.preview_explained_one(after, count)).collect();
        // Stable: at one instant the first expression's line stays first.
        lines.sort_by_key(PreviewFire::at);
        let mut out: Vec<PreviewFire> = Vec::with_capacity(lines.len());
        let mut fires = 0usize;
        for line in lines {
            let is_fire = matches!(line, PreviewFire::Fire { .. });
            if is_fire && fires == count {
                break;
            }
            let dup = out
                .iter()
                .rev()
                .take_while(|l| l.at() == line.at())
                .any(|l| *l == line || (is_fire && matches!(l, PreviewFire::Fire { .. })));
            if dup {
                continue;
            }
            fires += usize::from(is_fire);
            out.push(line);
        }
        // Lines past the last fire kept belong to a later window (one expression ran further).
        if fires == count {
            if let Some(last) = out.iter().rposition(|l| matches!(l, PreviewFire::Fire { .. })) {
                out.truncate(last + 1);
            }
        }
        out
    }
}
