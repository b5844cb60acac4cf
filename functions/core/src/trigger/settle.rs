//! The fires a job owes when it is changed: a pause, an edit or a delete decides by the instant
//! (docs/api.md), so every fire due while the job was enabled, up to the change, is the job's
//! even when the tick has not created it yet (an outage, a shard whose scans fail). Before the
//! change is written, those fires are planned from the job's position under its misfire policy,
//! with the definition they were due under, and put and sent like a scan's. The job is not
//! advanced: the change re-places it. Conditional puts make a race with a scan of the same fires
//! harmless, and a `fireOnce` batch walks around the executions already there.

use super::plan::{plan_job, CatchUpBudget};
use super::scan::{load_calendars_or_log, parse_or_log, Dispatch, Group, ScanError, ScanOptions, ScanReport};
use crate::keys;
use crate::model::{DueClass, Job, JobState};
use crate::store::watermarks;
use crate::Ctx;
use chrono::{DateTime, Duration, Utc};

/// Puts and sends the fires `job` owes at `now` (nothing when the tick is up to date).
pub async fn settle_owed(
    ctx: &Ctx,
    job: &Job,
    now: DateTime<Utc>,
    actor: &str,
) -> Result<ScanReport, ScanError> {
    let mut report = ScanReport::default();
    let (Some(next), JobState::Enabled) = (job.next_fire_at, job.state) else { return Ok(report) };
    let last_scheduled = position(ctx, job, next).await?;
    if last_scheduled >= now {
        return Ok(report);
    }
    if !load_calendars_or_log(ctx, job, &mut report).await? {
        return Ok(report);
    }
    let Some(schedule) = parse_or_log(job, &mut report) else { return Ok(report) };
    // Owed fires are not paced: the policy bounds them (one batch, `cap` fires, or none).
    let mut budget = CatchUpBudget::new(u64::MAX, u64::MAX);
    let plan = plan_job(job, &schedule, last_scheduled, now, now, &mut budget);
    if plan.fires.is_empty() {
        return Ok(report);
    }
    let opts = ScanOptions { actor: actor.to_string(), ..Default::default() };
    let dx = Dispatch { ctx, now, opts: &opts, class: Group::Admission, since_ms: now.timestamp_millis() };
    dx.put_and_send(&vec![(job.clone(), schedule, next, plan)], &mut report).await?;
    Ok(report)
}

/// The last instant the trigger plane has dispatched the job's fires through: its own position,
/// or for an every-minute or daily job the shard's planned minute when that is later (the scan's
/// `floor`).
async fn position(ctx: &Ctx, job: &Job, next: DateTime<Utc>) -> Result<DateTime<Utc>, ScanError> {
    let own = next - Duration::milliseconds(1);
    if !matches!(job.due_class, DueClass::Every | DueClass::Daily(_)) {
        return Ok(own);
    }
    let pos = watermarks::position(&ctx.ddb, &ctx.cfg.jobs_table, job.shard).await?;
    Ok(pos.map_or(own, |p| own.max(keys::minute_start(p.planned_through() + 1) - Duration::milliseconds(1))))
}
