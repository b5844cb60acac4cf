//! Queued-ahead executions follow their job's changes (issue 13 scenarios 5 and 9).
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

use crate::model::{ExecStatus, Job, JobState, BACKFILL_CODE, MANUAL_CODE};
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

/// Decides what the job as it is now (`schedule`: its parsed schedule) does to `s`, for a change
/// at `changed_at`. Pure.
pub fn decide(job: &Job, schedule: Option<&Schedule>, s: &Snapshot, changed_at: DateTime<Utc>) -> Follow {
    let e = &s.exec;
    let first_code = e.timeline.first().and_then(|ev| ev.code.as_deref());
    if e.status != ExecStatus::Ready
        || e.fire_at <= changed_at
        || matches!(first_code, Some(MANUAL_CODE) | Some(BACKFILL_CODE))
    {
        return Follow::Keep;
    }
    match job.state {
        JobState::Deleted => Follow::Cancel(crate::execution::retry::codes::CANCELED),
        JobState::Paused if s.held.is_some() => Follow::Keep,
        JobState::Paused => Follow::Hold,
        JobState::Enabled if s.held.is_some() => Follow::Release,
        JobState::Enabled if e.definition != job.definition => match schedule {
            Some(sch) if fires_at(sch, e.scheduled_at) => Follow::Amend,
            _ => Follow::Cancel(crate::execution::retry::codes::SUPERSEDED),
        },
        JobState::Enabled => Follow::Keep,
    }
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
    let schedule = Schedule::parse(&job.definition.schedule, job.anchor).ok();
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
