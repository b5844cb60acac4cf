//! Misfire planning: what to create for the fires that came due while nothing was firing
//! (an outage, a throttled tick, a paused trigger plane).
//!
//! Given the last scheduled instant `L` that was handled and `now`, the due fires are those in
//! `(L, now]`. A due fire is *missed* when it is late by more than the threshold,
//! `now - fire > threshold`; the others are ordinary fires and are always planned one by one.
//! The policy decides what happens to the missed ones:
//! - `fireOnce`: one execution, scheduled at the *first* missed fire, carrying
//!   `[first_missed, last_missed]` so its handler can process the range as one batch. The key
//!   `(job, scheduled_at)` is a real fire instant that depends only on the job's position, not
//!   on `now`: a re-plan from the same position at a later `now` (a scan that put its fires and
//!   failed before advancing, then a deferral) gets the same key, and its put is absorbed by the
//!   batch already there instead of creating a second batch over the same fires. The scan then
//!   continues after the existing batch's range (`trigger::scan`), so the later fires of the
//!   longer range are covered once too;
//! - `fireAll`: every missed fire, each its own execution, oldest first; when there are more
//!   than `cap`, only the latest `cap` are kept and the older ones are counted as skipped;
//! - `skip`: none of them; the job carries on with its next future fire.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::Schedule;

/// Default `cap` of [`MisfirePolicy::FireAll`].
pub const DEFAULT_FIRE_ALL_CAP: u32 = 100;

/// The most missed fires one plan counts one by one (about 11.5 days of an every-second
/// schedule, well under a second of work). Past it the plan stays exact in what it creates and
/// where it resumes, and only the `missed` count is a lower bound (`missed_truncated`).
pub const MISFIRE_SCAN_LIMIT: u64 = 1_000_000;

fn default_cap() -> u32 {
    DEFAULT_FIRE_ALL_CAP
}

/// What to do with missed fires. JSON: `{"policy": "fireOnce"}`,
/// `{"policy": "fireAll", "cap": 50}`, `{"policy": "skip"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "camelCase", from = "MisfireBody")]
pub enum MisfirePolicy {
    /// One execution for the whole missed range (the default).
    #[default]
    FireOnce,
    /// One execution per missed fire, at most `cap` (the latest ones).
    FireAll {
        /// Most missed fires to create; older ones beyond it are skipped.
        #[serde(default = "default_cap")]
        cap: u32,
    },
    /// No execution for missed fires.
    Skip,
}

/// The wire form of [`MisfirePolicy`]. Struct variants, because serde ignores extra keys next to
/// the tag of a unit variant: `{"policy": "skip", "cap": 3}` must be refused on `cap`, not
/// accepted with the cap silently dropped. `fire_once`/`fire_all` are read from definitions
/// stored before the API became camelCase throughout.
#[derive(Deserialize)]
#[serde(tag = "policy", rename_all = "camelCase", deny_unknown_fields)]
enum MisfireBody {
    #[serde(alias = "fire_once")]
    FireOnce {},
    #[serde(alias = "fire_all")]
    FireAll {
        #[serde(default = "default_cap")]
        cap: u32,
    },
    Skip {},
}

impl From<MisfireBody> for MisfirePolicy {
    fn from(b: MisfireBody) -> Self {
        match b {
            MisfireBody::FireOnce {} => MisfirePolicy::FireOnce,
            MisfireBody::FireAll { cap } => MisfirePolicy::FireAll { cap },
            MisfireBody::Skip {} => MisfirePolicy::Skip,
        }
    }
}

/// One execution to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedFire {
    /// The fire instant, which is also the execution's identity with the job id.
    pub scheduled_at: DateTime<Utc>,
    /// For a `fireOnce` batch: the first and last missed fires it stands for (inclusive).
    pub missed_range: Option<(DateTime<Utc>, DateTime<Utc>)>,
}

/// The outcome of [`plan_misfire`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MisfirePlan {
    /// Executions to create, in ascending `scheduled_at`.
    pub fires: Vec<PlannedFire>,
    /// Missed fires: due, and late by more than the threshold.
    pub missed: u64,
    /// True when counting stopped at [`MISFIRE_SCAN_LIMIT`]: `missed` (and so `skipped`) is a
    /// lower bound. `fires` and `resume_after` are exact regardless.
    pub missed_truncated: bool,
    /// Missed fires that get no execution and are not covered by a batch range.
    pub skipped: u64,
    /// The job's new trigger position: the latest due fire (planned or not), or
    /// `last_scheduled` when nothing was due. Its next fire is `next_after(resume_after)`,
    /// which is after `now`.
    pub resume_after: DateTime<Utc>,
}

/// Plans the fires due in `(last_scheduled, now]`: fires late by more than `threshold` are
/// handled by `policy`, the rest are ordinary fires (see the module docs). A negative
/// threshold counts as zero. Pure and deterministic: the same inputs give the same plan.
pub fn plan_misfire(
    schedule: &Schedule,
    last_scheduled: DateTime<Utc>,
    now: DateTime<Utc>,
    policy: &MisfirePolicy,
    threshold: Duration,
) -> MisfirePlan {
    plan_with_limit(schedule, last_scheduled, now, policy, threshold, MISFIRE_SCAN_LIMIT)
}

/// [`plan_misfire`] with a given scan limit (tests use a small one).
pub(crate) fn plan_with_limit(
    schedule: &Schedule,
    last_scheduled: DateTime<Utc>,
    now: DateTime<Utc>,
    policy: &MisfirePolicy,
    threshold: Duration,
    scan_limit: u64,
) -> MisfirePlan {
    let threshold = threshold.max(Duration::zero());
    // A fire is missed when now - fire > threshold, i.e. fire < cutoff.
    let cutoff = now - threshold;
    let mut plan = MisfirePlan {
        fires: Vec::new(),
        missed: 0,
        missed_truncated: false,
        skipped: 0,
        resume_after: last_scheduled,
    };
    if now <= last_scheduled {
        return plan;
    }
    let mut last_missed = None;
    if let Some(missed) = count_missed(schedule, last_scheduled, cutoff, scan_limit) {
        plan.missed = missed.count;
        plan.missed_truncated = missed.truncated;
        last_missed = Some(missed.last);
        plan_missed(schedule, last_scheduled, policy, &missed, &mut plan);
    }
    plan_ordinary(schedule, last_missed.unwrap_or(last_scheduled), now, scan_limit, &mut plan);
    plan
}

/// The missed fires of a plan: the first and last, and how many (a lower bound when
/// `truncated`).
struct Missed {
    first: DateTime<Utc>,
    last: DateTime<Utc>,
    count: u64,
    truncated: bool,
}

/// Counts the fires after `last_scheduled` and before `cutoff`, one by one up to `scan_limit`.
fn count_missed(
    schedule: &Schedule,
    last_scheduled: DateTime<Utc>,
    cutoff: DateTime<Utc>,
    scan_limit: u64,
) -> Option<Missed> {
    let first = schedule.next_after(last_scheduled).filter(|f| *f < cutoff)?;
    let mut count = 1u64;
    let mut cursor = first;
    let mut truncated = false;
    loop {
        match schedule.next_after(cursor) {
            Some(f) if f < cutoff => {
                count += 1;
                cursor = f;
                if count >= scan_limit {
                    truncated = true;
                    break;
                }
            }
            _ => break,
        }
    }
    let last = if truncated {
        // The latest fire strictly before the cutoff, found directly.
        schedule.prev_at_or_before(cutoff - Duration::nanoseconds(1)).unwrap_or(cursor)
    } else {
        cursor
    };
    Some(Missed { first, last, count, truncated })
}

/// What `policy` makes of the missed fires: their executions and how many are skipped.
fn plan_missed(
    schedule: &Schedule,
    last_scheduled: DateTime<Utc>,
    policy: &MisfirePolicy,
    missed: &Missed,
    plan: &mut MisfirePlan,
) {
    let Missed { first, last, count, .. } = *missed;
    match *policy {
        MisfirePolicy::FireOnce => {
            plan.fires.push(PlannedFire { scheduled_at: first, missed_range: Some((first, last)) })
        }
        MisfirePolicy::FireAll { cap } => {
            let mut kept = Vec::new();
            let mut at = Some(last);
            while let Some(f) = at {
                // At most `cap`, and never more than were counted (the walk back
                // stays within the scan limit even for a huge cap).
                if kept.len() as u64 >= u64::from(cap).min(count) || f <= last_scheduled {
                    break;
                }
                kept.push(PlannedFire { scheduled_at: f, missed_range: None });
                at = schedule.prev_at_or_before(f - Duration::nanoseconds(1));
            }
            kept.reverse();
            plan.skipped = count.saturating_sub(kept.len() as u64);
            plan.fires = kept;
        }
        MisfirePolicy::Skip => plan.skipped = count,
    }
}

/// Ordinary fires: due after `cursor` (the last missed fire, or the last scheduled one) but
/// within the threshold; the plan resumes after the last of them.
fn plan_ordinary(
    schedule: &Schedule,
    mut cursor: DateTime<Utc>,
    now: DateTime<Utc>,
    scan_limit: u64,
    plan: &mut MisfirePlan,
) {
    plan.resume_after = cursor;
    let mut ordinary = 0u64;
    while let Some(f) = schedule.next_after(cursor) {
        if f > now || ordinary >= scan_limit {
            break;
        }
        plan.fires.push(PlannedFire { scheduled_at: f, missed_range: None });
        ordinary += 1;
        cursor = f;
        plan.resume_after = f;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ScheduleSpec;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn a_fire_once_replan_at_a_later_now_keeps_the_batch_key() {
        // GIVEN an every-minute job whose position is 10:00, and a plan made at 10:30 (its
        // puts done, the advance lost to a crash)
        let s =
            Schedule::parse(&ScheduleSpec::new("0 * * * * *", "UTC"), utc("2026-01-01T00:00:00Z")).unwrap();
        let last = utc("2026-01-01T10:00:00Z");
        let threshold = Duration::seconds(60);
        let first = plan_misfire(&s, last, utc("2026-01-01T10:30:00Z"), &MisfirePolicy::FireOnce, threshold);
        // WHEN the job is planned again from the same position at 10:40
        let again = plan_misfire(&s, last, utc("2026-01-01T10:40:00Z"), &MisfirePolicy::FireOnce, threshold);
        // THEN both batches have the same key (the first missed fire, 10:01): the second put is
        // absorbed by the first batch instead of creating a second one over the same fires
        let batch = |p: &MisfirePlan| p.fires.iter().find(|f| f.missed_range.is_some()).copied().unwrap();
        assert_eq!(batch(&first).scheduled_at, utc("2026-01-01T10:01:00Z"));
        assert_eq!(batch(&again).scheduled_at, batch(&first).scheduled_at);
        assert_eq!(
            batch(&first).missed_range,
            Some((utc("2026-01-01T10:01:00Z"), utc("2026-01-01T10:28:00Z")))
        );
        assert_eq!(
            batch(&again).missed_range,
            Some((utc("2026-01-01T10:01:00Z"), utc("2026-01-01T10:38:00Z")))
        );
    }
}
