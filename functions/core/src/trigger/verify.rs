//! The verification pass: how every-minute and daily fires reach the reconciler without an
//! `open` index entry each.
//!
//! The reconciler (`crate::reconcile`) finds stranded executions through the sparse `open`
//! index; entering and leaving it costs two index writes per execution, which would take an
//! every-minute job from 3 to 5 write units a run (docs/performance.md, "Targets", budgets 3). But
//! the fires of jobs whose position is the shard watermark (the every-minute class `E#{shard}` and
//! the daily class `D#{minute of day}#{shard}`) can be found again from the job items themselves:
//! the fires of minute `v` are the schedule's fires in `v` of the jobs in those partitions. So the
//! scan puts them without the index entry, and once their minute is a grace in the past
//! (`ScanOptions::verify_grace_ms`, the reconciler's grace), this pass looks them up (one
//! eventually consistent BatchGetItem read per fire, no write) and puts each one that is not
//! final into the `open` index, due now: from there the reconciler judges it as any other
//! (re-send, back off, close). Its position, the last minute verified, sits on the shard's
//! watermark item and moves in the watermark's own write.
//!
//! What keeps the set complete: a job that leaves those classes (pause, edit, delete via the
//! API; deferral, a DST move or its end in the scan) has its open executions since the
//! verified minute indexed before it leaves (`ExecStore::track_job_since`). A fire that does
//! not exist (a `skip` misfire, a job created later) is simply not found. A business-calendar
//! job's chain is loaded here when this process has not seen it (the walk loads only the chains
//! of the minutes it plans, and the tick that verifies a minute may run in another container);
//! a job whose fires still cannot be computed has its open executions since the verified minute
//! indexed instead of being skipped.
//!
//! A scan that read the job *before* such a change may put its fires *after* it (catch-up
//! fires of minutes the job was enabled in, or later ones the worker will cancel), unindexed,
//! for a job the pass no longer reads. So the control plane indexes again after its change
//! commits, and counts the leave on the shard's watermark item first ([`after_leaving`]); the
//! scan reads that count with its position and again after its puts ([`catch_racing_leaves`]).
//! A put before the second indexing pass is indexed by it; a put after it belongs to a scan
//! whose second read comes later still, sees the count moved, and indexes the fires of every
//! job it read that is no longer in its partition as read.

use super::report::{ScanError, ScanReport};
use crate::context::Ctx;
use crate::schedules as cache;
use chrono::{DateTime, Duration, Utc};
use sundial_model::keys;
use sundial_model::{DueClass, Job, JobState};
use sundial_store::error::StoreError;
use sundial_store::executions::ExecKey;
use sundial_store::{jobs, watermarks};

/// Minutes one tick verifies per shard at most (a backlog after an outage is worked off over
/// several ticks, like the watermark's walk).
pub const MAX_MINUTES_PER_TICK: i64 = 30;

/// The executions the every-minute jobs `every` and the daily jobs `daily` should have in
/// `minute`: each job's schedule fires in it, from its stored position on. Pure.
pub fn expected_fires(every: &[Job], daily: &[Job], minute: i64) -> Vec<ExecKey> {
    let start = keys::minute_start(minute) - Duration::milliseconds(1);
    let end = keys::minute_start(minute + 1) - Duration::milliseconds(1);
    let mut out = Vec::new();
    for job in every.iter().chain(daily) {
        let (Some(next), Ok(schedule)) = (job.next_fire_at, cache::schedule_of(job)) else { continue };
        let mut cursor = start.max(next - Duration::milliseconds(1));
        while let Some(f) = schedule.next_after(cursor) {
            if f > end {
                break;
            }
            out.push(ExecKey {
                tenant: job.tenant.clone(),
                job_id: job.job_id.clone(),
                scheduled_ms: f.timestamp_millis(),
                child: None,
            });
            cursor = f;
        }
    }
    out
}

/// Verifies the minutes after `verified` up to `to` (at most [`MAX_MINUTES_PER_TICK`]) of
/// `shard`, given the every-minute jobs this tick read; returns the new verified minute.
pub async fn verify_minutes(
    ctx: &Ctx,
    shard: u32,
    every: &[Job],
    verified: i64,
    to: i64,
    now: DateTime<Utc>,
    report: &mut ScanReport,
) -> Result<i64, ScanError> {
    let execs = ctx.execs();
    let now_ms = now.timestamp_millis();
    let since_ms = keys::minute_start(verified + 1).timestamp_millis();
    let mut v = verified;
    if v >= to {
        return Ok(v);
    }
    let every = evaluable(ctx, every.to_vec(), since_ms, now_ms, report).await?;
    while v < to && v - verified < MAX_MINUTES_PER_TICK {
        let minute = v + 1;
        let daily = jobs::query_due(
            &ctx.ddb,
            &ctx.cfg.jobs_table,
            &keys::daily_bucket(keys::minute_of_day(minute), shard),
        )
        .await?;
        report.buckets += 1;
        let daily = evaluable(ctx, daily.jobs, since_ms, now_ms, report).await?;
        let expected = expected_fires(&every, &daily, minute);
        report.verified += expected.len() as u64;
        for snap in execs.snapshots(&expected).await? {
            if !snap.exec.status.is_terminal()
                && !sundial_mutants::active(sundial_mutants::Mutant::VerifyTracksNothing)
                && snap.open_due.is_none()
                && execs.track(&ExecKey::of(&snap.exec), &snap, now_ms).await?
            {
                report.verify_tracked += 1;
            }
        }
        v = minute;
    }
    Ok(v)
}

/// The jobs whose fires this process can compute, after loading the business calendar chains
/// it has not seen (one GetItem per level the first time). A transient store error fails the
/// shard's tick, which keeps the verified minute. A job that still cannot be evaluated (a chain
/// not stored or no longer valid, a schedule that no longer parses) is left out, and its open
/// executions since the verified minute go into the `open` index instead: skipped, they were
/// never indexed, and a lost message of theirs was never repaired.
async fn evaluable(
    ctx: &Ctx,
    jobs: Vec<Job>,
    since_ms: i64,
    now_ms: i64,
    report: &mut ScanReport,
) -> Result<Vec<Job>, ScanError> {
    use crate::schedules::calendars::{ensure, LoadError};
    let mut out = Vec::with_capacity(jobs.len());
    for job in jobs {
        let loaded = match ensure(&ctx.ddb, &ctx.cfg.jobs_table, &job).await {
            Ok(()) => cache::schedule_of(&job).map_err(|e| e.to_string()),
            Err(LoadError::Store(e)) if e.is_retryable() => return Err(e.into()),
            Err(e) => Err(e.to_string()),
        };
        match loaded {
            Ok(_) => out.push(job),
            Err(error) => {
                tracing::error!(tenant = %job.tenant, job = %job.job_id, %error, "cannot verify the job's fires; indexing its open ones");
                // Not counted in `invalid` again: the walk counts the job when it meets it.
                report.verify_tracked +=
                    u64::from(ctx.execs().track_job_since(&job.tenant, &job.job_id, since_ms, now_ms).await?);
            }
        }
    }
    Ok(out)
}

/// Called by the control plane before a change takes an enabled every-minute or daily job out
/// of its class (pause, edit, delete): indexes its open executions since its shard's verified
/// minute, which the verification pass would no longer find. Before the change, so a crash in
/// between leaves them indexed (harmless: the reconciler closes final ones), never unindexed.
pub async fn before_leaving(ctx: &Ctx, job: &Job, now: DateTime<Utc>) -> Result<u32, StoreError> {
    if !in_class(job) {
        return Ok(0);
    }
    track_since_verified(ctx, job, now).await
}

/// Called by the control plane after the change that took `job` (as it was before) out of the
/// every-minute or daily class committed: counts the leave on the shard's watermark item, then
/// indexes the job's open executions again. A scan that read the job before the change may put
/// fires after [`before_leaving`] ran: those it put before this second pass are indexed here,
/// and a scan still putting afterwards sees the count move ([`catch_racing_leaves`]).
pub async fn after_leaving(ctx: &Ctx, job: &Job, now: DateTime<Utc>) -> Result<u32, StoreError> {
    if !in_class(job) {
        return Ok(0);
    }
    watermarks::note_leaving(&ctx.ddb, &ctx.cfg.jobs_table, job.shard).await?;
    track_since_verified(ctx, job, now).await
}

/// An enabled job whose fires the verification pass finds (every-minute or daily class).
fn in_class(job: &Job) -> bool {
    job.state == JobState::Enabled && matches!(job.due_class, DueClass::Every | DueClass::Daily(_))
}

/// The every-minute and daily jobs a scan read from `buckets`, whose fires it put unindexed.
#[derive(Debug, Default)]
pub struct ClassReads {
    /// The partitions read (`E#{shard}`, `D#{minute of day}#{shard}`).
    pub buckets: Vec<String>,
    /// The jobs read in them.
    pub jobs: Vec<Job>,
}

/// After a scan's puts: if a job left the shard's every-minute or daily class since the scan
/// read its position (`seen`), the jobs it read that are no longer in their partition as read
/// (gone, or at another version) may have had fires put from the old read after the control
/// plane's second indexing pass; their open executions since `since_ms` are indexed now. One
/// strongly consistent read of the watermark item a scan; the partitions are read again only
/// when the count moved. Returns how many executions it indexed.
pub async fn catch_racing_leaves(
    ctx: &Ctx,
    shard: u32,
    seen: Option<watermarks::Position>,
    reads: &ClassReads,
    since_ms: i64,
    now: DateTime<Utc>,
) -> Result<u32, StoreError> {
    if reads.jobs.is_empty() {
        return Ok(0);
    }
    let table = &ctx.cfg.jobs_table;
    let left = |p: Option<watermarks::Position>| p.map_or(0, |p| p.left);
    if left(watermarks::position(&ctx.ddb, table, shard).await?) == left(seen) {
        return Ok(0);
    }
    let mut still = std::collections::HashSet::new();
    for bucket in &reads.buckets {
        for j in jobs::query_due(&ctx.ddb, table, bucket).await?.jobs {
            still.insert((j.tenant, j.job_id, j.version));
        }
    }
    let execs = ctx.execs();
    let mut tracked = 0;
    for j in &reads.jobs {
        if !still.contains(&(j.tenant.clone(), j.job_id.clone(), j.version)) {
            tracked += execs.track_job_since(&j.tenant, &j.job_id, since_ms, now.timestamp_millis()).await?;
        }
    }
    Ok(tracked)
}

/// Indexes `job`'s open executions since its shard's verified minute.
async fn track_since_verified(ctx: &Ctx, job: &Job, now: DateTime<Utc>) -> Result<u32, StoreError> {
    let pos = watermarks::position(&ctx.ddb, &ctx.cfg.jobs_table, job.shard).await?;
    let since_ms =
        pos.map_or(0, |p| keys::minute_start(p.verified.unwrap_or(p.through) + 1).timestamp_millis());
    let execs = ctx.execs();
    execs.track_job_since(&job.tenant, &job.job_id, since_ms, now.timestamp_millis()).await
}
