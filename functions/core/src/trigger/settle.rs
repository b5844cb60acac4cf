//! The fires a job owes when it is changed: a pause, an edit or a delete decides by the instant
//! (docs/api.md), so every fire due while the job was enabled, up to the change, is the job's
//! even when the tick has not created it yet (an outage, a shard whose scans fail). Before the
//! change is written, those fires are planned from the job's position under its misfire policy,
//! with the definition they were due under, and put and sent like a scan's. The job is not
//! advanced: the change re-places it. Conditional puts make a race with a scan of the same fires
//! harmless, and a `fireOnce` batch walks around the executions already there.

use super::plan::{plan_job, CatchUpBudget};
use super::scan::{load_calendars_or_log, parse_or_log, Dispatch, Group, ScanError, ScanOptions, ScanReport};
use crate::Ctx;
use chrono::{DateTime, Duration, Utc};
use sundial_model::keys;
use sundial_model::{DueClass, Job, JobState};
use sundial_store::watermarks;

/// Puts and sends the fires `job` owes at `now` (nothing when the tick is up to date).
pub async fn settle_owed(
    ctx: &Ctx,
    job: &Job,
    now: DateTime<Utc>,
    actor: &str,
) -> Result<ScanReport, ScanError> {
    let mut report = ScanReport::default();
    if sundial_mutants::active(sundial_mutants::Mutant::SettleDropsOwed) {
        return Ok(report);
    }
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

/// Dispatches one job right away (the API calls it after creating, resuming or editing a job,
/// so fires in the current minute are not late): the same put → send → CAS-advance as a scan,
/// over the job's fires up to the end of the next minute. Racing a scan is safe (conditional
/// puts, CAS on the read position); if this call fails or the process dies, the next tick
/// finds the job in its admission partition and does the same work.
pub async fn dispatch_one(
    ctx: &Ctx,
    job: &Job,
    now: DateTime<Utc>,
    actor: &str,
) -> Result<ScanReport, ScanError> {
    let mut report = ScanReport::default();
    let (Some(next), true) = (job.next_fire_at, job.state == sundial_model::JobState::Enabled) else {
        return Ok(report);
    };
    if !load_calendars_or_log(ctx, job, &mut report).await? {
        return Ok(report);
    }
    let Some(schedule) = parse_or_log(job, &mut report) else { return Ok(report) };
    // A shard never scanned has no watermark, and its first tick would start from its own
    // present: the job about to move into a later bucket would never be read there.
    watermarks::start_if_never(&ctx.ddb, &ctx.cfg.jobs_table, job.shard, keys::minute_of(now) - 1).await?;
    let window_end = keys::minute_start(keys::minute_of(now) + 2) - Duration::milliseconds(1);
    // Only on-time fires here: a job admitted now has no missed fires to pace.
    let mut budget = CatchUpBudget::new(0, 0);
    let plan = plan_job(job, &schedule, next - Duration::milliseconds(1), window_end, now, &mut budget);
    let opts = ScanOptions { actor: actor.to_string(), ..Default::default() };
    let group = (vec![(job.clone(), schedule, next, plan)], Vec::new());
    Dispatch { ctx, now, opts: &opts, class: Group::Admission, since_ms: now.timestamp_millis() }
        .run(group, &mut report)
        .await?;
    Ok(report)
}
