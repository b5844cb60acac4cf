//! Scanning one range of logical shards: the trigger plane's I/O loop.
//!
//! For each shard: read its watermark (last minute fully scanned), walk the time buckets from
//! there to `now + horizon`, and for every job found: put its executions (conditional), send
//! them to the job's pool queue with per-message delays, CAS-advance the job to its next
//! bucket, and finally move the watermark. That order makes the job's trigger position the
//! outbox (docs/trigger.md, "Why each step is safe to repeat"): a crash at any point leaves the
//! position where it was, and the next tick repeats idempotent steps — the unique key absorbs the
//! repeated put, the worker's claim absorbs the repeated message.

use super::batch::{self, Put};
use super::limit::JobRef;
use super::plan::{plan_job, policy_name, CatchUpBudget, JobPlan};
pub use super::report::{CrashPoint, ScanError, ScanReport};
use crate::Ctx;
use chrono::{DateTime, Duration, Utc};
use futures_util::stream::{self, StreamExt};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::Arc;
use sundial_model::keys;
use sundial_model::{DueClass, ExecStatus, Execution, Job};
use sundial_schedule::Schedule;
use sundial_store::executions::{ExecStore, PutOutcome};
use sundial_store::jobs;
use sundial_store::queue::Outgoing;
use sundial_store::watermarks;
use sundial_store::StoreError;
use tokio::sync::Mutex;

/// (job, position read, new position, new class: `None` = completed at its `maxRuns`).
pub(super) type Move = (Job, DateTime<Utc>, Option<DateTime<Utc>>, Option<DueClass>);

/// Conditional writes in flight at once per scanner.
pub const WRITE_CONCURRENCY: usize = 32;

/// Scan settings.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// Who writes the audit events (`tick:<request id>`).
    pub actor: String,
    /// Queue ahead: fires up to the end of the minute containing `now + horizon`.
    pub horizon_secs: u32,
    /// Most buckets one shard walks per tick (a long outage is caught up over several ticks).
    pub max_buckets: i64,
    /// Fault injection for tests; `None` in production.
    pub crash_at: Option<CrashPoint>,
    /// Where the instant of each send comes from, for the lag metric (the scan's `now` when
    /// `None`). Benches pass the wall clock to measure real enqueue times.
    pub send_clock: Option<SendClock>,
    /// Fault injection for tests: runs between the reads of a shard's two class partitions
    /// (admission and every-minute), with the shard; `None` in production.
    pub between_class_reads: Option<PartitionHook>,
    /// Fault injection for tests: runs right after the read of a shard's every-minute
    /// partition, before anything read there is put, with the shard; `None` in production.
    pub after_class_reads: Option<PartitionHook>,
    /// How long after the end of its minute an every-minute or daily fire must be final before
    /// the verification pass puts it into the reconciler's `open` index (ms).
    pub verify_grace_ms: i64,
    /// Back-pressure thresholds: low-priority fires are deferred while the pool is busy
    /// (docs/priority.md); `None` turns deferral off.
    pub backpressure: Option<sundial_model::priority::Backpressure>,
}

/// A test hook run with the shard number between a scan's two class-partition reads.
#[derive(Clone)]
#[allow(clippy::type_complexity)]
pub struct PartitionHook(
    pub  std::sync::Arc<
        dyn Fn(u32) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> + Send + Sync,
    >,
);

impl std::fmt::Debug for PartitionHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PartitionHook")
    }
}

/// A clock read after each send.
#[derive(Clone)]
pub struct SendClock(pub std::sync::Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>);

impl std::fmt::Debug for SendClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SendClock")
    }
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            actor: "tick".into(),
            horizon_secs: 60,
            max_buckets: 240,
            crash_at: None,
            send_clock: None,
            between_class_reads: None,
            after_class_reads: None,
            verify_grace_ms: sundial_model::reconcile::GRACE_MS,
            backpressure: Some(sundial_model::priority::Backpressure::default()),
        }
    }
}

/// Scans `shards` at `now`. Each shard is scanned on its own: one that fails (a store or queue
/// error, a job in a removed pool, an injected crash) is logged and counted, and the scan goes
/// on with the next, so one shard never holds back another's on-time fires. If any failed, the
/// result is [`ScanError::Shards`], which carries the report of the rest.
pub async fn scan_shards(
    ctx: &Ctx,
    shards: Range<u32>,
    now: DateTime<Utc>,
    budget: &Mutex<CatchUpBudget>,
    opts: &ScanOptions,
) -> Result<ScanReport, ScanError> {
    let mut report = ScanReport::default();
    let mut first: Option<ScanError> = None;
    for shard in shards {
        match scan_shard(ctx, shard, now, budget, opts).await {
            Ok(r) => report.merge(r),
            Err(e) => {
                tracing::error!(shard, error = %e, retryable = e.is_retryable(), "shard scan failed; its position is kept for the next tick");
                report.shards += 1;
                report.shards_failed += 1;
                first.get_or_insert(e);
            }
        }
    }
    match first {
        None => Ok(report),
        Some(first) => Err(ScanError::Shards {
            failed: report.shards_failed,
            first: Box::new(first),
            report: Box::new(report),
        }),
    }
}

async fn scan_shard(
    ctx: &Ctx,
    shard: u32,
    now: DateTime<Utc>,
    budget: &Mutex<CatchUpBudget>,
    opts: &ScanOptions,
) -> Result<ScanReport, ScanError> {
    let mut report = ScanReport { shards: 1, ..Default::default() };
    let scan = ShardScan { ctx, shard, now, budget, opts };
    let w = scan.window().await?;
    let (every_jobs, mut class_reads) = scan.classes(&w, &mut report).await?;
    let held_at = scan.buckets(&w, &mut class_reads, &mut report).await?;
    // A job that left its class while this scan ran: fires put from the older read get indexed.
    super::verify::catch_racing_leaves(ctx, shard, w.pos, &class_reads, w.since_ms, now).await?;
    if opts.crash_at == Some(CrashPoint::BeforeWatermark) {
        return Err(ScanError::Crash(CrashPoint::BeforeWatermark));
    }
    scan.advance(&w, held_at, &every_jobs, &mut report).await?;
    Ok(report)
}

/// One shard's scan at `now`: what each of its phases reads.
struct ShardScan<'a> {
    ctx: &'a Ctx,
    shard: u32,
    now: DateTime<Utc>,
    budget: &'a Mutex<CatchUpBudget>,
    opts: &'a ScanOptions,
}

/// Where one shard's scan starts and stops (epoch minutes), from its stored position.
struct Window {
    pos: Option<watermarks::Position>,
    /// The watermark: the last minute fully scanned.
    wm: i64,
    verified: i64,
    planned: i64,
    /// The first instant verification looks at.
    since_ms: i64,
    /// The last minute of the horizon.
    target: i64,
    /// The buckets this scan walks.
    first: i64,
    last: i64,
    window_end: DateTime<Utc>,
    planned_end: DateTime<Utc>,
}

impl ShardScan<'_> {
    /// Reads the shard's position and derives the minutes this scan walks.
    async fn window(&self) -> Result<Window, ScanError> {
        let (now, opts) = (self.now, self.opts);
        let now_min = keys::minute_of(now);
        let target = keys::minute_of(now + Duration::seconds(i64::from(opts.horizon_secs)));
        let pos = watermarks::position(&self.ctx.ddb, &self.ctx.cfg.jobs_table, self.shard).await?;
        let wm = pos.map_or(now_min - 1, |p| p.through);
        // Verification resumes from its own position; the first time (a new shard, or a shard
        // scanned by a version without it), from the watermark: earlier fires were put with their
        // `open` index entry.
        let verified = pos.and_then(|p| p.verified).unwrap_or(wm);
        // Every-minute and daily fires are planned after the last minute a scan already dispatched
        // them for, which is past the watermark while a deferred bucket job holds it. Planned from
        // the watermark, their existing fires would be counted against the catch-up budget again on
        // every tick: a large `fireAll` catch-up would go "alone" each time and starve the deferred
        // job that holds the watermark, for good.
        let planned = pos.map_or(wm, |p| p.planned_through());
        let since_ms = keys::minute_start(verified + 1).timestamp_millis();
        // Re-read the current minute even when the watermark is past it: a job created or resumed
        // after the previous tick may have landed in it (reads are cheap; the CAS makes it safe).
        let first = (wm + 1).min(now_min);
        let last = target.min(first + opts.max_buckets - 1);
        let window_end = keys::minute_start(last + 1) - Duration::milliseconds(1);
        let planned_end = keys::minute_start(planned + 1) - Duration::milliseconds(1);
        Ok(Window { pos, wm, verified, planned, since_ms, target, first, last, window_end, planned_end })
    }

    /// The admission and every-minute phases; returns the every-minute jobs read, and the class
    /// reads that `catch_racing_leaves` checks.
    async fn classes(
        &self,
        w: &Window,
        report: &mut ScanReport,
    ) -> Result<(Vec<Job>, super::verify::ClassReads), ScanError> {
        let (ctx, shard, now, opts, budget) = (self.ctx, self.shard, self.now, self.opts, self.budget);
        let since_ms = w.since_ms;
        // Admission first, then every-minute: a job that moves from the one to the other between
        // the two reads (the API's `dispatch_one` promoting it) is then seen in the second read.
        // In the other order it would be in neither, and the watermark would move past its fires.
        // Admission: jobs just created, resumed or edited, wherever their first fire falls.
        let admitted = due_jobs(ctx, &keys::admission_bucket(shard), report).await?;
        report.buckets += 1;
        if let Some(hook) = &opts.between_class_reads {
            (hook.0)(shard).await;
        }
        // Jobs that fire every minute: never moved between buckets; their position is the
        // watermark (and their stored `next`, the first fire after creation or resume).
        let every = due_jobs(ctx, &keys::every_bucket(shard), report).await?;
        report.buckets += 1;
        if let Some(hook) = &opts.after_class_reads {
            (hook.0)(shard).await;
        }
        let every_jobs = every.clone();
        let class_reads =
            super::verify::ClassReads { buckets: vec![keys::every_bucket(shard)], jobs: every.clone() };
        let group = plan_group(ctx, admitted, None, w.window_end, now, budget, report).await?;
        // A deferred admission job stays in the admission partition, which every tick reads: it
        // does not hold the watermark back.
        Dispatch { ctx, now, opts, class: Group::Admission, since_ms }.run(group, report).await?;
        let group = plan_group(ctx, every, Some(w.planned_end), w.window_end, now, budget, report).await?;
        // A deferred every-minute job moves to the admission partition at its first unplanned
        // fire (its own position from then on), so it never holds the shard's watermark: with a
        // fixed query order the same job would be deferred every tick and, past `max_buckets`, the
        // walk would never reach the present for any job of the shard.
        Dispatch { ctx, now, opts, class: Group::Every, since_ms }.run(group, report).await?;
        Ok((every_jobs, class_reads))
    }

    /// The bucket walk, with the daily phase of each minute; returns the first minute whose
    /// bucket still holds a deferred job.
    async fn buckets(
        &self,
        w: &Window,
        class_reads: &mut super::verify::ClassReads,
        report: &mut ScanReport,
    ) -> Result<Option<i64>, ScanError> {
        let (ctx, shard, now, opts, budget) = (self.ctx, self.shard, self.now, self.opts, self.budget);
        let since_ms = w.since_ms;
        // Every bucket of the walk is read even after one keeps a deferred job: on-time fires in
        // later minutes (of other jobs and tenants) must not wait behind a catch-up backlog, where
        // a `skip` job would pass its misfire threshold and lose its fire. Only the watermark
        // stops before the first bucket that still holds a deferred job.
        let mut held_at: Option<i64> = None;
        for minute in w.first..=w.last {
            let due = match due_jobs(ctx, &keys::due_bucket(minute, shard), report).await {
                Err(_) if sundial_mutants::active(sundial_mutants::Mutant::TickSkipsFailedBucket) => continue,
                r => r?,
            };
            report.buckets += 1;
            let group = plan_group(ctx, due, None, w.window_end, now, budget, report).await?;
            if !(Dispatch { ctx, now, opts, class: Group::Bucket, since_ms }).run(group, report).await?
                && held_at.is_none()
            {
                held_at = Some(minute);
            }
            // Daily jobs of this minute of the day: like every-minute jobs their position is the
            // planned minute (a minute at or before it was dispatched already), and a deferred one
            // moves to admission instead of holding the watermark.
            if minute > w.planned {
                let slot = keys::minute_of_day(minute);
                let daily = due_jobs(ctx, &keys::daily_bucket(slot, shard), report).await?;
                report.buckets += 1;
                class_reads.buckets.push(keys::daily_bucket(slot, shard));
                class_reads.jobs.extend(daily.iter().cloned());
                let minute_end = keys::minute_start(minute + 1) - Duration::milliseconds(1);
                let group =
                    plan_group(ctx, daily, Some(w.planned_end), minute_end, now, budget, report).await?;
                Dispatch { ctx, now, opts, class: Group::Daily(slot), since_ms }.run(group, report).await?;
            }
        }
        Ok(held_at)
    }

    /// Verifies the minutes up to the new watermark, and moves the shard's position.
    async fn advance(
        &self,
        w: &Window,
        held_at: Option<i64>,
        every_jobs: &[Job],
        report: &mut ScanReport,
    ) -> Result<(), ScanError> {
        let (ctx, shard, now, table) = (self.ctx, self.shard, self.now, &self.ctx.cfg.jobs_table);
        let (wm, verified, last) = (w.wm, w.verified, w.last);
        // Deferred bucket jobs keep the watermark before their bucket (deferred every-minute jobs
        // moved to the admission partition above).
        let through = held_at.map_or(last, |m| m - 1);
        if held_at.is_none() && last >= w.target {
            report.shards_complete += 1;
        }
        let grace = Duration::milliseconds(self.opts.verify_grace_ms);
        let verify_to = through.max(wm).min(keys::minute_of(now - grace) - 1);
        let new_verified =
            super::verify::verify_minutes(ctx, shard, every_jobs, verified, verify_to, now, report).await?;
        // Written the first time too: a verified minute derived from a moving watermark would move
        // past fires it never checked.
        let moved_verified =
            (new_verified > verified || w.pos.is_none_or(|p| p.verified.is_none())).then_some(new_verified);
        if through > wm {
            watermarks::advance(&ctx.ddb, table, shard, through, moved_verified).await?;
        } else if let Some(v) = moved_verified {
            watermarks::advance_verified(&ctx.ddb, table, shard, v).await?;
        }
        // The walk dispatched every-minute and daily fires through `last`; recorded only while the
        // watermark stays behind it (otherwise the watermark says as much).
        if last > through && last > w.planned {
            watermarks::advance_planned(&ctx.ddb, table, shard, last).await?;
        }
        Ok(())
    }
}

/// The jobs of one `due` partition; undecodable items (poison) are counted as invalid and
/// skipped, so they never stop the rest of the shard.
async fn due_jobs(ctx: &Ctx, due_pk: &str, report: &mut ScanReport) -> Result<Vec<Job>, ScanError> {
    let due = jobs::query_due(&ctx.ddb, &ctx.cfg.jobs_table, due_pk).await?;
    report.invalid += due.undecodable;
    Ok(due.jobs)
}

/// Plans each job's fires up to `window_end`, from its stored position (or from `floor`, for
/// every-minute and daily jobs whose position is the shard's, when that is later). A job that
/// cannot be planned now (its calendar chain is not stored or no longer valid, its schedule no
/// longer parses) is returned apart with where it resumes: see [`Dispatch::park`]. A transient
/// store error loading a calendar fails the shard instead, which keeps every position for the
/// next tick.
async fn plan_group(
    ctx: &Ctx,
    jobs: Vec<Job>,
    floor: Option<DateTime<Utc>>,
    window_end: DateTime<Utc>,
    now: DateTime<Utc>,
    budget: &Mutex<CatchUpBudget>,
    report: &mut ScanReport,
) -> Result<(Planned, Vec<Parked>), ScanError> {
    let mut group = Vec::new();
    let mut parked = Vec::new();
    for job in jobs {
        let Some(next) = job.next_fire_at else { continue };
        let from = next - Duration::milliseconds(1);
        let last_scheduled = floor.map_or(from, |f| f.max(from));
        // A business calendar job: its chain's versions, one GetItem per level the first time
        // this process sees them, nothing afterwards (see `calendars`).
        let schedule = match load_calendars_or_log(ctx, &job, report).await? {
            true => parse_or_log(&job, report),
            false => None,
        };
        let Some(schedule) = schedule else {
            // Resumes after the last fire this scan would have planned from: its own position,
            // or the first instant after the shard's for an every-minute or daily job.
            parked.push((job, next, last_scheduled + Duration::milliseconds(1)));
            continue;
        };
        let mut plan = plan_job(&job, &schedule, last_scheduled, window_end, now, &mut *budget.lock().await);
        if plan.deferred && floor.is_some() {
            // Where a deferred every-minute job resumes from the admission partition.
            plan.new_next = schedule.next_after(last_scheduled);
        }
        group.push((job, schedule, next, plan));
    }
    Ok((group, parked))
}

/// Which `due` partition a group of jobs was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Group {
    /// `A#{shard}`.
    Admission,
    /// `E#{shard}`.
    Every,
    /// `D#{minute of day}#{shard}`.
    Daily(u32),
    /// `{minute}#{shard}`.
    Bucket,
}

impl Group {
    /// Whether the group's position is the watermark, so the verification pass finds its fires
    /// again and they need no `open` index entry while the job stays in it.
    pub(super) fn verified(self) -> bool {
        matches!(self, Group::Every | Group::Daily(_))
    }
}

/// Where a job goes after its fires of this dispatch: `None` = it stays where it is (no
/// write); `Some(class)` = advance it into `class` (or out of the index when its plan has no
/// next fire).
fn decide(group: Group, schedule: &Schedule, plan: &JobPlan, now: DateTime<Utc>) -> Option<DueClass> {
    let class_for = |next: DateTime<Utc>| {
        if group == Group::Every || schedule.fires_every_minute(now) {
            DueClass::Every
        } else if let Some(slot) = schedule.daily_slot(next) {
            DueClass::Daily(slot)
        } else {
            DueClass::Bucket
        }
    };
    match (group, plan.deferred, plan.new_next) {
        // A deferred every-minute or daily job moves to admission (its own position from then
        // on); other deferred jobs stay put.
        (Group::Every | Group::Daily(_), true, Some(_)) => Some(DueClass::Admission),
        (_, true, _) => None,
        // Every-minute jobs are not advanced (their position is the watermark) unless done.
        (Group::Every, false, Some(_)) => None,
        // Daily jobs stay while their next fire is in the same minute of the day.
        (Group::Daily(slot), false, Some(n)) if keys::minute_of_day(keys::minute_of(n)) == slot => None,
        (_, false, Some(n)) => Some(class_for(n)),
        // Done: out of the index (the class is not written).
        (_, false, None) => Some(DueClass::Bucket),
    }
}

/// Loads the business calendar versions `job` names; false (logged, counted invalid) when they
/// are not stored or not valid, an error when the store failed transiently (the shard is then
/// retried as a whole, with every position kept).
pub(super) async fn load_calendars_or_log(
    ctx: &Ctx,
    job: &Job,
    report: &mut ScanReport,
) -> Result<bool, ScanError> {
    use crate::schedules::calendars::LoadError;
    match crate::schedules::calendars::ensure(&ctx.ddb, &ctx.cfg.jobs_table, job).await {
        Ok(()) => Ok(true),
        Err(LoadError::Store(e)) if e.is_retryable() => Err(e.into()),
        Err(e) => {
            tracing::error!(tenant = %job.tenant, job = %job.job_id, error = %e, "business calendar not loaded");
            report.invalid += 1;
            Ok(false)
        }
    }
}

pub(super) fn parse_or_log(job: &Job, report: &mut ScanReport) -> Option<Arc<Schedule>> {
    match crate::schedules::schedule_of(job) {
        Ok(s) => Some(s),
        Err(e) => {
            // Validated at creation; only a tzdb or parser change can get here. The job is
            // parked in the admission partition (retried every tick, see `Dispatch::park`).
            tracing::error!(tenant = %job.tenant, job = %job.job_id, error = %e, "stored schedule no longer parses");
            report.invalid += 1;
            None
        }
    }
}

/// One group of jobs planned for dispatch: job, schedule, the position it was read at, plan.
pub(super) type Planned = Vec<(Job, Arc<Schedule>, DateTime<Utc>, JobPlan)>;

/// A job that could not be planned: job, the position it was read at, where it resumes.
pub(super) type Parked = (Job, DateTime<Utc>, DateTime<Utc>);

/// Where a group is dispatched from: the shard scan's context, its instant and options, the
/// group's due class and the shard's verified minute (`since_ms`).
pub(super) struct Dispatch<'a> {
    pub(super) ctx: &'a Ctx,
    pub(super) now: DateTime<Utc>,
    pub(super) opts: &'a ScanOptions,
    pub(super) class: Group,
    pub(super) since_ms: i64,
}

/// The messages to send per pool, and per pool the dispatch instants of the executions this
/// dispatch created (for the schedule-lag figure).
#[derive(Default)]
struct Sends {
    outgoing: BTreeMap<String, Vec<Outgoing>>,
    created_fire_ms: BTreeMap<String, Vec<i64>>,
    /// `maxRuns` jobs that created a fire, and ones a limit refused: [`super::limit::completed`].
    counted: BTreeSet<JobRef>,
    limited: BTreeSet<JobRef>,
}

impl Dispatch<'_> {
    /// Put → send → advance for one group of jobs, then parks the ones that could not be
    /// planned. Returns false if any job was deferred.
    pub(super) async fn run(
        &self,
        (group, parked): (Planned, Vec<Parked>),
        report: &mut ScanReport,
    ) -> Result<bool, ScanError> {
        let (dx, ctx, now, opts, class) = (self, self.ctx, self.now, self.opts, self.class);
        // Each job's destination, decided before the puts: a fire of a job that stays in a
        // verified class (every-minute, daily) is put without an `open` index entry (the
        // verification pass finds it again); every other fire is put with one.
        let decisions: Vec<Option<DueClass>> =
            group.iter().map(|(_, schedule, _, plan)| decide(class, schedule, plan, now)).collect();
        let (executions, all_done) = dx.executions(&group, &decisions, report);
        let execs = ctx.execs();
        let mut sends = dx.put_all(&execs, executions, report).await?;
        let (counted, limited) = (std::mem::take(&mut sends.counted), std::mem::take(&mut sends.limited));
        // Injected crashes only fire where there was work, like a real crash mid-dispatch.
        let crash = if group.iter().any(|(_, _, _, p)| !p.fires.is_empty()) { opts.crash_at } else { None };
        if crash == Some(CrashPoint::AfterPut) {
            return Err(ScanError::Crash(CrashPoint::AfterPut));
        }
        dx.hold_back_low(&mut sends.outgoing, report).await;
        dx.send(sends, report).await?;
        if crash == Some(CrashPoint::AfterSend) {
            return Err(ScanError::Crash(CrashPoint::AfterSend));
        }
        if crash == Some(CrashPoint::BeforeAdvance) {
            return Err(ScanError::Crash(CrashPoint::BeforeAdvance));
        }
        let jobs: Vec<&Job> = group.iter().map(|(job, ..)| job).collect();
        let done = super::limit::completed(&execs, &jobs, &counted, &limited).await?;
        dx.advance(&execs, &group, &decisions, &done, report).await?;
        dx.park(parked, report).await?;
        Ok(all_done)
    }
    /// Put → send for one group, without the advance: the change that settles a job's owed
    /// fires re-places the job itself (`settle`).
    pub(super) async fn put_and_send(
        &self,
        group: &Planned,
        report: &mut ScanReport,
    ) -> Result<(), ScanError> {
        let (executions, _) = self.executions(group, &vec![None; group.len()], report);
        let mut sends = self.put_all(&self.ctx.execs(), executions, report).await?;
        self.hold_back_low(&mut sends.outgoing, report).await;
        self.send(sends, report).await
    }

    /// The READY executions of the group's planned fires, each with whether it is put with an
    /// `open` index entry; counts deferred jobs and missed fires. False if any job was deferred.
    fn executions(
        &self,
        group: &Planned,
        decisions: &[Option<DueClass>],
        report: &mut ScanReport,
    ) -> (Vec<Put>, bool) {
        let mut all_done = true;
        let mut planned = Vec::new();
        for ((job, schedule, _, plan), decision) in group.iter().zip(decisions) {
            if plan.deferred {
                all_done = false;
                report.deferred += 1;
                continue;
            }
            if plan.missed > 0 {
                *report
                    .missed
                    .entry((job.definition.pool.clone(), policy_name(&job.definition.misfire)))
                    .or_default() += plan.missed;
            }
            // A job with a start or finish deadline is indexed at the put whatever its class: the
            // verification pass would index its open fires only a grace after their minute,
            // past a short deadline; the index entry makes the reconciler look at the deadline.
            let indexed = !(self.class.verified() && decision.is_none())
                || job.definition.start_deadline_secs.is_some()
                || job.definition.finish_deadline_secs.is_some();
            for fire in &plan.fires {
                let e = Execution::ready(
                    job,
                    schedule,
                    fire.scheduled_at,
                    fire.missed_range,
                    self.now,
                    &self.opts.actor,
                );
                let batch_of = fire.missed_range.map(|_| (job.clone(), schedule.clone()));
                planned.push(Put { exec: e, indexed, batch_of });
            }
        }
        (planned, all_done)
    }

    /// Puts the executions, concurrently (bounded): one scanner must keep up with thousands
    /// of fires a minute on DynamoDB, where each put is a few ms of network round trip. The
    /// per-job order put → send → advance still holds: sends start after every put of the
    /// group returned. (Owned data in the futures: borrowed closures here make the whole scan
    /// future fail the higher-ranked `Send` bound that a boxed handler future needs.)
    async fn put_all(
        &self,
        execs: &ExecStore,
        planned: Vec<Put>,
        report: &mut ScanReport,
    ) -> Result<Sends, ScanError> {
        // `fireOnce` batches walk their range around the executions already there (see `batch`);
        // they follow outages only, so they go one by one after the ordinary puts. The fires of
        // a job with `maxRuns` are counted in order: one after another per job (jobs side by
        // side), so a limit always keeps the earliest fires.
        let (counted, planned): (Vec<Put>, Vec<Put>) =
            planned.into_iter().partition(|p| p.exec.definition.max_runs.is_some());
        let (batches, planned): (Vec<Put>, Vec<Put>) =
            planned.into_iter().partition(|p| p.batch_of.is_some());
        let puts: Vec<Result<(Execution, PutOutcome), StoreError>> = stream::iter(planned)
            .map(|p| {
                let execs = execs.clone();
                async move { Ok((p.exec.clone(), p.put_plain(&execs).await?)) }
            })
            .buffer_unordered(WRITE_CONCURRENCY)
            .collect()
            .await;
        let mut outcomes = puts.into_iter().collect::<Result<Vec<_>, _>>()?;
        let mut sends = Sends::default();
        for p in &batches {
            outcomes.extend(batch::put_batch(execs, p, self.now, &self.opts.actor).await?.0);
        }
        let counted =
            super::limit::put_in_order(execs, counted, self.now, &self.opts.actor, WRITE_CONCURRENCY).await?;
        report.over_limit += counted.limited.len() as u64;
        outcomes.extend(counted.outcomes);
        (sends.counted, sends.limited) = (counted.counted, counted.limited);
        for (e, r) in outcomes {
            let pool = e.definition.pool.clone();
            let status = match r {
                PutOutcome::Created => {
                    report.created += 1;
                    sends.created_fire_ms.entry(pool.clone()).or_default().push(e.fire_at.timestamp_millis());
                    ExecStatus::Ready
                }
                PutOutcome::Exists(s) => {
                    report.duplicates += 1;
                    s
                }
            };
            // An existing READY execution may never have been sent (a crash between put and
            // send): send again; the worker's claim absorbs a duplicate. Anything past READY
            // has been received already.
            if status == ExecStatus::Ready {
                sends.outgoing.entry(pool).or_default().push(Outgoing::for_execution(&e, self.now));
            }
        }
        Ok(sends)
    }

    /// Back-pressure: a busy pool's low-priority fires are put (durable, listed as READY) but
    /// their messages held back; the lane depths are read only when such a fire is due.
    async fn hold_back_low(&self, outgoing: &mut BTreeMap<String, Vec<Outgoing>>, report: &mut ScanReport) {
        let Some(bp) = &self.opts.backpressure else { return };
        for (pool, msgs) in outgoing.iter_mut() {
            if !msgs.iter().any(|m| m.message.lane == sundial_model::priority::Lane::Low) {
                continue;
            }
            let depths = self.ctx.queues.depths(pool, self.now.timestamp_millis()).await;
            for m in msgs.iter_mut() {
                let (delay, deferred) =
                    sundial_model::priority::tick_delay(m.message.lane, m.delay_secs, &depths, bp);
                m.delay_secs = delay;
                if deferred {
                    *report.low_deferred.entry(pool.clone()).or_default() += 1;
                }
            }
        }
    }

    /// Sends each pool's messages in batches and records the schedule lag of the fires this
    /// dispatch created: when the fire was enqueued minus when it is due (negative = ahead).
    async fn send(&self, mut sends: Sends, report: &mut ScanReport) -> Result<(), ScanError> {
        for (pool, msgs) in &sends.outgoing {
            self.ctx.queues.send_all(pool, msgs).await?;
            report.sent += msgs.len() as u64;
            let sent_at =
                self.opts.send_clock.as_ref().map(|c| (c.0)()).unwrap_or(self.now).timestamp_millis();
            if let Some(fires) = sends.created_fire_ms.remove(pool) {
                report.lag_ms.entry(pool.clone()).or_default().extend(fires.into_iter().map(|f| sent_at - f));
            }
        }
        Ok(())
    }
}
