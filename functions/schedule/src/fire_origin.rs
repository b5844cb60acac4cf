//! What a business calendar did to one fire already made: whether it was rolled, from which
//! instant and why, and which raw fires of the schedule it removed since the previous fire.
//!
//! Executions do not record this when they are created: the tick would pay for an explained
//! search on every fire of every calendar job to store what the schedule can answer again from
//! the definition version that made the fire. The API asks this for the fires it lists; the
//! answer is the one [`Schedule::preview_explained`] gave before the fire, because it is the
//! same search from the previous fire.

use chrono::{DateTime, Duration, Utc};

use super::rolled::PreviewFire;
use super::schedule::Schedule;

/// What the business calendar did to one fire (see [`Schedule::explain_fire`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FireOrigin {
    /// Where the fire would have been without the calendar, when the calendar moved it.
    pub rolled_from: Option<DateTime<Utc>>,
    /// Why it moved: `"holiday 2026-10-01 in cn-holidays v3; following"`.
    pub reason: Option<String>,
    /// The schedule's raw fires after the previous fire and before this one that the calendar
    /// removed (skipped, no business day close enough, or rolled onto an instant that fires
    /// anyway), with why: the first `max_skipped` of them, ascending.
    pub skipped_before: Vec<(DateTime<Utc>, String)>,
    /// How many there were in all (more than `skipped_before` holds when it was cut).
    pub skipped_count: usize,
}

impl Schedule {
    /// What the business calendar did to the fire at `at`, and to the raw fires between the
    /// previous fire and it. `None` when the schedule has no business calendar or `at` is not
    /// one of its fires (a manual run's instant, a fire of another definition). Before the
    /// first fire nothing is counted as skipped: the schedule does not know when the job began.
    pub fn explain_fire(&self, at: DateTime<Utc>, max_skipped: usize) -> Option<FireOrigin> {
        self.business.as_ref()?;
        let just_before = at - Duration::nanoseconds(1);
        let after = self.prev_at_or_before(just_before).unwrap_or(just_before);
        let lines = self.preview_explained(after, 1);
        let mut origin =
            FireOrigin { rolled_from: None, reason: None, skipped_before: Vec::new(), skipped_count: 0 };
        let mut found = false;
        for line in lines {
            match line {
                PreviewFire::Skipped { at: raw, reason } if raw < at => {
                    origin.skipped_count += 1;
                    if origin.skipped_before.len() < max_skipped {
                        origin.skipped_before.push((raw, reason));
                    }
                }
                PreviewFire::Skipped { .. } => {}
                PreviewFire::Fire { at: fire, rolled_from, reason } => {
                    if fire != at {
                        return None;
                    }
                    found = true;
                    origin.rolled_from = rolled_from;
                    origin.reason = reason;
                }
            }
        }
        // No fire line at all: the schedule ended before `at`.
        found.then_some(origin)
    }
}
