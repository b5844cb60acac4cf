//! Queued-ahead executions follow their job's changes (paused, resumed and edited jobs).
//!
//! The tick and the API queue fires up to a minute ahead, so when a job is paused, resumed,
//! edited or deleted, executions already exist for instants after the change. Whether each
//! runs is decided by the job's state *at its instant*:
//!
//! | change | queued-ahead READY execution (never claimed, instant after the change) |
//! |---|---|
//! | pause | **held**: a worker that receives it at its instant cancels it (code `Paused`), unless a resume released it first |
//! | resume | held ones are **released**: the job is enabled at their instant |
//! | edit | instants the new schedule keeps are **amended** to the new definition and version; the others are **canceled** (code `Superseded`) |
//! | delete | **canceled** |
//!
//! Manual runs and backfills are never touched (they run whatever the job's state), nor is
//! anything already claimed. The API applies this right after its change; a scan whose advance
//! lost to a change (it read the job before it) applies it again to what it just wrote, so a
//! put that raced the change does not escape it.

use crate::model::{ExecStatus, Execution, Job, JobState, BACKFILL_CODE, MANUAL_CODE};
use crate::schedule::Schedule;
use crate::store::executions::{ExecStore, Snapshot};
use crate::store::StoreError;
use chrono::{DateTime, Duration, Utc};

/// What a job change does to one execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Nothing (not queued ahead, not READY, manual, or already as it should be).
    Keep,
    /// Hold it (the job is paused).
    Hold,
    /// Release its hold (the job is enabled again), then look again.
    Release,
    /// Move it to the job's current definition (an edit kept its instant).
    Amend,
    /// Cancel it: an edit removed its instant (`Superseded`), or the job was deleted.
    Cancel(&'static str),
}

/// Whether `at` is an instant of `schedule`.
fn fires_at(schedule: &Schedule, at: DateTime<Utc>) -> bool {
    schedule.next_after(at - Duration::milliseconds(1)) == Some(at)
}

/// A READY execution the trigger queued (not a manual run or a backfill, which run whatever the
/// job's state).
fn queued_ready(e: &Execution) -> bool {
    let first_code = e.timeline.first().and_then(|ev| ev.code.as_deref());
    e.status == ExecStatus::Ready && !matches!(first_code, Some(MANUAL_CODE) | Some(BACKFILL_CODE))
}

/// An execution on another definition than the job's: amended if `schedule` (the job's) still
/// fires at its instant, canceled as superseded otherwise.
fn amend_or_supersede(schedule: Option<&Schedule>, e: &Execution) -> Follow {
    match schedule {
        Some(sch) if fires_at(sch, e.scheduled_at) => Follow::Amend,
        _ => Follow::Cancel(crate::execution::retry::codes::SUPERSEDED),
    }
}

/// Decides what the job as it is now (`schedule`: its parsed schedule) does to `s`, for a change
/// at `changed_at`. Pure.
pub fn decide(job: &Job, schedule: Option<&Schedule>, s: &Snapshot, changed_at: DateTime<Utc>) -> Follow {
    let e = &s.exec;
    if !queued_ready(e) || e.fire_at <= changed_at {
        return Follow::Keep;
    }
    match job.state {
        JobState::Deleted => Follow::Cancel(crate::execution::retry::codes::CANCELED),
        JobState::Paused if s.held.is_some() => Follow::Keep,
        JobState::Paused => Follow::Hold,
        JobState::Enabled if s.held.is_some() => Follow::Release,
        JobState::Enabled if e.definition != job.definition => amend_or_supersede(schedule, e),
        JobState::Enabled => Follow::Keep,
    }
}

/// What a worker does with READY `s` when it is due, before claiming it. Held by a pause (and
/// not released before its instant) → cancel (`Paused`), no job needed. Otherwise, for a
/// scheduled execution never claimed, the job as it is now (`job`, `None` if unknown) catches
/// one put by a scan that raced a pause or an edit after the API's sweep, from the job's marks:
/// its last pause window (paused at the execution's instant → cancel, even if resumed since)
/// and when its current definition took effect (before the instant and different → amend, or
/// cancel if the new schedule does not fire then). Pure.
pub fn at_claim(job: Option<&Job>, schedule: Option<&Schedule>, s: &Snapshot) -> Follow {
    let e = &s.exec;
    if s.held.is_some() && e.status == ExecStatus::Ready {
        return Follow::Cancel(crate::execution::retry::codes::PAUSED);
    }
    let Some(job) = job else { return Follow::Keep };
    if !queued_ready(e) || !e.never_claimed() {
        return Follow::Keep;
    }
    if job.state == JobState::Deleted && job.updated_at <= e.fire_at {
        return Follow::Cancel(crate::execution::retry::codes::CANCELED);
    }
    if job.paused_at(e.fire_at) {
        return Follow::Cancel(crate::execution::retry::codes::PAUSED);
    }
    if e.definition != job.definition && job.edited_at <= e.fire_at {
        return amend_or_supersede(schedule, e);
    }
    Follow::Keep
}

/// What [`follow_change`] did (public execution ids).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Followed {
    /// Held by a pause.
    pub held: Vec<String>,
    /// Released by a resume.
    pub released: Vec<String>,
    /// Moved to the new definition.
    pub amended: Vec<String>,
    /// Canceled (superseded by an edit, or the job deleted).
    pub canceled: Vec<String>,
}

/// Applies the job's current state to its executions queued after `now` (see the module doc).
/// Each write is a CAS on the execution as read: one that a worker claimed in between is left
/// alone.
pub async fn follow_change(
    execs: &ExecStore,
    job: &Job,
    now: DateTime<Utc>,
    actor: &str,
) -> Result<Followed, StoreError> {
    let schedule = crate::schedules::schedule_of(job).ok().map(|s| (*s).clone());
    let now_ms = now.timestamp_millis();
    let mut done = Followed::default();
    for mut s in execs.scheduled_after(&job.tenant, &job.job_id, now_ms).await? {
        // A release may be followed by an amendment (a paused job edited, then resumed).
        for _ in 0..2 {
            let id = s.exec.id();
            match decide(job, schedule.as_ref(), &s, now) {
                Follow::Keep => break,
                Follow::Hold => {
                    if execs.hold(&s.exec, job.version, actor, now_ms).await? {
                        done.held.push(id);
                    }
                    break;
                }
                Follow::Release => {
                    if !execs.release_hold(&s.exec, actor, now_ms).await? {
                        break;
                    }
                    done.released.push(id);
                    s.held = None;
                }
                Follow::Amend => {
                    if execs.amend(&s.exec, &job.definition, job.version, actor, now_ms).await? {
                        done.amended.push(id);
                    }
                    break;
                }
                Follow::Cancel(code) => {
                    if execs.cancel_ready(&s.exec, code, actor, now_ms).await? {
                        done.canceled.push(id);
                    }
                    break;
                }
            }
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Execution, JobDefinition, Target};
    use crate::schedule::ScheduleSpec;
    use crate::store::items::ms_to_dt;

    const T0: i64 = 1_796_040_005_000; // 2026-11-30T12:00:05Z

    fn job(expr: &str) -> Job {
        let def = JobDefinition::new(ScheduleSpec::new(expr, "UTC"), Target::http("https://x"));
        Job::new(&crate::config::Config::local("t-", &["default"], 8), "acme", "j", def, ms_to_dt(T0))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn queued(job: &Job, at_ms: i64) -> Snapshot {
        let s = Schedule::parse(&job.definition.schedule, job.anchor).unwrap_or_else(|e| panic!("{e}"));
        let exec = Execution::ready(job, &s, ms_to_dt(at_ms), None, ms_to_dt(T0), "tick");
        Snapshot {
            wait_gen: 0,
            looked_done: None,
            checked_through: None,
            exec,
            checkpoint: None,
            total_run_ms: 0,
            digest: None,
            open_due: None,
            resends: 0,
            held: None,
            missed_at: None,
        }
    }

    #[test]
    fn a_pause_holds_a_resume_releases_and_past_or_manual_fires_are_kept() {
        let mut j = job("0 * * * * *");
        let fire = queued(&j, T0 + 55_000); // 12:01:00
        let change = ms_to_dt(T0 + 15_000);
        j.state = JobState::Paused;
        assert_eq!(decide(&j, None, &fire, change), Follow::Hold);
        let held = Snapshot { held: Some(2), ..fire.clone() };
        assert_eq!(decide(&j, None, &held, change), Follow::Keep);
        j.state = JobState::Enabled;
        assert_eq!(decide(&j, None, &held, change), Follow::Release);
        assert_eq!(decide(&j, None, &fire, ms_to_dt(T0 + 60_000)), Follow::Keep, "its instant passed");
        let mut manual = fire.clone();
        manual.exec.timeline[0].code = Some(MANUAL_CODE.into());
        j.state = JobState::Paused;
        assert_eq!(decide(&j, None, &manual, change), Follow::Keep);
    }

    #[test]
    fn an_edit_amends_kept_instants_and_cancels_removed_ones() {
        let v1 = job("0,30 * * * * *");
        let (on_minute, half) = (queued(&v1, T0 + 55_000), queued(&v1, T0 + 85_000));
        let mut v2 = v1.clone();
        v2.definition.schedule = ScheduleSpec::new("0 * * * * *", "UTC");
        v2.version = 2;
        let s2 = Schedule::parse(&v2.definition.schedule, v2.anchor).ok();
        let change = ms_to_dt(T0 + 15_000);
        assert_eq!(decide(&v2, s2.as_ref(), &on_minute, change), Follow::Amend);
        assert_eq!(
            decide(&v2, s2.as_ref(), &half, change),
            Follow::Cancel(crate::execution::retry::codes::SUPERSEDED)
        );
    }

    #[test]
    fn at_claim_cancels_a_fire_of_a_job_paused_before_its_instant_only() {
        let mut j = job("0 * * * * *");
        let fire = queued(&j, T0 + 55_000);
        j.state = JobState::Paused;
        j.paused = Some((ms_to_dt(T0 + 5_000), None));
        assert_eq!(at_claim(Some(&j), None, &fire), Follow::Cancel(crate::execution::retry::codes::PAUSED));
        // resumed after its instant: it was paused then, still canceled
        j.state = JobState::Enabled;
        j.paused = Some((ms_to_dt(T0 + 5_000), Some(ms_to_dt(T0 + 70_000))));
        assert_eq!(at_claim(Some(&j), None, &fire), Follow::Cancel(crate::execution::retry::codes::PAUSED));
        // resumed before its instant: enabled then
        j.paused = Some((ms_to_dt(T0 + 5_000), Some(ms_to_dt(T0 + 30_000))));
        assert_eq!(at_claim(Some(&j), None, &fire), Follow::Keep);
        // paused after its instant: it was enabled then
        j.state = JobState::Paused;
        j.paused = Some((ms_to_dt(T0 + 60_000), None));
        assert_eq!(at_claim(Some(&j), None, &fire), Follow::Keep);
        assert_eq!(at_claim(None, None, &fire), Follow::Keep, "no job item: nothing to say");
    }

    #[test]
    fn at_claim_sees_an_edit_before_the_instant_even_behind_a_later_pause() {
        let v1 = job("0,30 * * * * *");
        let fire = queued(&v1, T0 + 55_000);
        let mut v2 = v1.clone();
        v2.definition = v2.definition.clone().with_params(serde_json::json!({"v": 2}));
        v2.edited_at = ms_to_dt(T0 + 10_000);
        v2.state = JobState::Paused;
        v2.paused = Some((ms_to_dt(T0 + 58_000), None)); // paused after the instant
        let s2 = Schedule::parse(&v2.definition.schedule, v2.anchor).ok();
        assert_eq!(at_claim(Some(&v2), s2.as_ref(), &fire), Follow::Amend);
    }
}
