//! Job definitions through the control plane: create, get, list, edit, pause, resume, delete.
//!
//! Every change goes through [`put_job_change`]: the definition item conditional on the version
//! the caller read, the new immutable `V#{version}` snapshot and the operations-log entry, in
//! one transaction. Bumping `ver` is also what keeps the trigger safe: a scan that read the job
//! before the change CAS-advances on the old `ver` and loses, so no fire computed from an old
//! definition or an old state can move the trigger position afterwards.
//!
//! After a create, resume or edit the job is re-admitted (`DueClass::Admission`, next fire =
//! the first after `now`) and dispatched at once ([`dispatch_one`]), so a fire in the current
//! minute is queued now rather than at the next tick. Resuming therefore never replays the
//! paused period: no misfire storm. Executions already queued ahead for later fires follow
//! every change ([`crate::trigger::follow`]): a pause holds them (they run only if a resume
//! comes before their instant), a resume releases them, an edit amends those whose instant the
//! new schedule keeps and cancels the others, a delete cancels them.

use super::page::{self, Page};
use super::{Caller, Control, ControlError};
use crate::execution::follow::{self, follow_change, Followed};
use crate::trigger::settle::dispatch_one;
use chrono::{DateTime, Utc};
use sundial_model::keys;
use sundial_model::{DueClass, Job, JobDefinition, JobState, OpsAction, OpsEntry};
use sundial_schedule::Schedule;
use sundial_store::jobs::{self as store, put_job_change, ChangeError, Expect};

/// How many upcoming fires a create, edit or resume returns.
pub const NEXT_FIRES: usize = 5;

/// A job and its upcoming fires.
#[derive(Debug, Clone, PartialEq)]
pub struct JobView {
    /// The job as stored by this change.
    pub job: Job,
    /// Its next [`NEXT_FIRES`] fires after `now` (empty unless enabled).
    pub next_fires: Vec<DateTime<Utc>>,
    /// Queued-ahead executions this change canceled (an edit removed their instant; delete; a
    /// resume: the fires its pause held through their instants that no catch-up replays).
    pub canceled: Vec<String>,
    /// Queued-ahead executions a pause held (they run only if resumed before their instant).
    pub held: Vec<String>,
    /// Queued-ahead executions an edit moved to the new definition.
    pub amended: Vec<String>,
    /// Held executions a resume released.
    pub released: Vec<String>,
}

impl JobView {
    fn new(job: Job, next_fires: Vec<DateTime<Utc>>, f: Followed) -> Self {
        JobView {
            job,
            next_fires,
            canceled: f.canceled,
            held: f.held,
            amended: f.amended,
            released: f.released,
        }
    }
}

fn valid_job_id(job_id: &str) -> Result<(), ControlError> {
    keys::validate_id("jobId", job_id).map_err(|e| ControlError::invalid(e.field, e.reason))
}

/// The next `count` fires of `job` after `now` (none unless it is enabled).
pub fn next_fires(job: &Job, now: DateTime<Utc>, count: usize) -> Vec<DateTime<Utc>> {
    if job.state != JobState::Enabled {
        return Vec::new();
    }
    match crate::schedules::schedule_of(job) {
        Ok(s) => s.preview(now, count),
        Err(_) => Vec::new(),
    }
}

/// Sets the job's trigger position to its first fire after `now` under the control plane's
/// tz database release ([`super::ControlSettings::tzdb`], the compiled one outside tests),
/// and records that release's version with it.
fn place(
    ctl: &Control,
    job: &mut Job,
    now: DateTime<Utc>,
    business: Option<std::sync::Arc<sundial_schedule::BusinessDays>>,
) -> Result<Schedule, ControlError> {
    let db = &ctl.settings.tzdb;
    let schedule = Schedule::parse_in(&job.definition.schedule, job.anchor, db, business)
        .map_err(|e| ControlError::invalid(format!("schedule.{}", e.field()), e.reason()))?;
    job.next_fire_at = schedule.next_after(now);
    job.tzdb_version = db.version().to_string();
    Ok(schedule)
}

/// Queues the job's fires up to the end of the next minute. A failure is not the caller's: the
/// change is stored and the next tick finds the job in its admission partition.
async fn dispatch(ctl: &Control, job: &Job, now: DateTime<Utc>, caller: &Caller) {
    if let Err(e) = dispatch_one(&ctl.ctx, job, now, &caller.actor()).await {
        tracing::warn!(tenant = %job.tenant, job = %job.job_id, error = %e, "dispatch after change failed; the next tick repeats it");
    }
}

fn change_error(e: ChangeError, current: u64) -> ControlError {
    match e {
        ChangeError::Exists => ControlError::Exists,
        ChangeError::VersionConflict { expected } => ControlError::VersionConflict { expected, current },
        ChangeError::Store(s) => ControlError::Store(s),
    }
}

/// Validates and stores a new job (version 1), dispatches it, and returns it with its next
/// fires.
pub async fn create(
    ctl: &Control,
    caller: &Caller,
    job_id: &str,
    def: JobDefinition,
    now: DateTime<Utc>,
) -> Result<JobView, ControlError> {
    let business = super::calendars::for_definition(ctl, &caller.tenant, &def).await?;
    let mut job = Job::new_with(ctl.cfg(), &caller.tenant, job_id, def, now, business.clone())?;
    super::resource_limits::check_declared(ctl, &job.definition).await?;
    super::dependencies::check(ctl, &caller.tenant, job_id, &job.definition).await?;
    place(ctl, &mut job, now, business)?;
    let schedule = crate::schedules::schedule_of(&job)
        .map_err(|e| ControlError::invalid(format!("schedule.{}", e.field()), e.reason()))?;
    super::quota::check_interval(ctl, &schedule, now)?;
    super::quota::check_saturation(ctl, &job.definition.pool, job.definition.priority.lane(), now).await?;
    let (committed, field) = super::quota::executions_per_hour(&job.definition, &schedule, now);
    super::quota::take_committed(ctl, &caller.tenant, committed, field).await?;
    if let Err(e) = super::quota::take_job(ctl, &caller.tenant).await {
        super::quota::give_back_committed(ctl, &caller.tenant, committed).await;
        return Err(e);
    }
    job.committed_per_hour = committed;
    let audit = OpsEntry::new(caller.actor(), OpsAction::Create, job_id, now).versions(None, Some(1));
    let retention = ctl.settings.ops_retention_secs;
    if let Err(e) = put_job_change(ctl.ddb(), ctl.cfg(), Expect::New, &job, None, &audit, retention).await {
        super::quota::give_back_job(ctl, &caller.tenant).await;
        super::quota::give_back_committed(ctl, &caller.tenant, committed).await;
        return Err(change_error(e, 0));
    }
    dispatch(ctl, &job, now, caller).await;
    let next_fires = next_fires(&job, now, NEXT_FIRES);
    Ok(JobView::new(job, next_fires, Followed::default()))
}

/// The caller's job (also when deleted and still retained).
pub async fn get(ctl: &Control, caller: &Caller, job_id: &str) -> Result<Job, ControlError> {
    ctl.job(caller, job_id).await
}

/// The scheduled fires `job` created so far, counted against its `maxRuns` (`None` without
/// one): one eventually consistent read of its `RUNS` item (docs/schedule.md).
pub async fn runs(ctl: &Control, job: &Job) -> Result<Option<u64>, ControlError> {
    if job.definition.max_runs.is_none() {
        return Ok(None);
    }
    Ok(Some(ctl.execs.runs(&job.tenant, &job.job_id, false).await?))
}

/// One immutable definition snapshot of the caller's job.
pub async fn get_version(
    ctl: &Control,
    caller: &Caller,
    job_id: &str,
    version: u64,
) -> Result<Job, ControlError> {
    valid_job_id(job_id)?;
    store::get_job_version(ctl.ddb(), ctl.cfg(), &caller.tenant, job_id, version)
        .await?
        .ok_or(ControlError::NotFound { what: "version" })
}

/// The caller's job's definition versions, newest first, one page at a time (404 for a job
/// that is not the caller's). Versions of a deleted job are kept until their retention ends.
pub async fn list_versions(
    ctl: &Control,
    caller: &Caller,
    job_id: &str,
    limit: Option<u32>,
    cursor: Option<&str>,
) -> Result<Page<Job>, ControlError> {
    ctl.job(caller, job_id).await?;
    let before = match cursor {
        Some(c) => Some(
            page::decode("versions", c)?
                .parse::<u64>()
                .map_err(|_| ControlError::invalid("cursor", "not a cursor returned by this list"))?,
        ),
        None => None,
    };
    let limit = page::limit(limit, ctl.settings.max_page);
    let found = store::list_job_versions(ctl.ddb(), ctl.cfg(), &caller.tenant, job_id, limit, before).await?;
    Ok(Page { items: found.items, next: found.next.map(|v| page::encode("versions", &v.to_string())) })
}

/// The caller's jobs in job-id order, one page at a time: a Query of the tenant's partition
/// of the `by_tenant` index (keys only, so trigger advances never write to it), then one
/// BatchGetItem of the definitions. Deleted jobs are left out unless `include_deleted`; a page
/// may then hold fewer items than `limit` while `next` is still set.
pub async fn list(
    ctl: &Control,
    caller: &Caller,
    limit: Option<u32>,
    cursor: Option<&str>,
    include_deleted: bool,
) -> Result<Page<Job>, ControlError> {
    let tenant = &caller.tenant;
    let after = match cursor {
        Some(c) => {
            let job_id = page::decode("jobs", c)?;
            valid_job_id(&job_id)
                .map_err(|_| ControlError::invalid("cursor", "not a cursor returned by this list"))?;
            Some(job_id)
        }
        None => None,
    };
    let limit = page::limit(limit, ctl.settings.max_page);
    let ids = store::list_job_ids(ctl.ddb(), ctl.cfg(), tenant, limit, after.as_deref()).await?;
    let next = ids.next.map(|id| page::encode("jobs", &id));
    let mut jobs = store::batch_get_jobs(ctl.ddb(), ctl.cfg(), tenant, &ids.items).await?;
    jobs.sort_by(|a, b| a.job_id.cmp(&b.job_id));
    jobs.retain(|j| include_deleted || j.state != JobState::Deleted);
    Ok(Page { items: jobs, next })
}

/// Replaces the definition of the caller's job if it is still at `expected` (If-Match). The
/// new version applies to fires after `now`; executions already created keep the version
/// they were created with.
pub async fn update(
    ctl: &Control,
    caller: &Caller,
    job_id: &str,
    expected: u64,
    def: JobDefinition,
    now: DateTime<Utc>,
) -> Result<JobView, ControlError> {
    let cur = get(ctl, caller, job_id).await?;
    if cur.state == JobState::Deleted {
        return Err(deleted());
    }
    // An invalid definition is refused as invalid whatever version it names: the version is
    // checked once the request is known to be valid (nothing is written before either).
    let anchor = def.schedule.start.unwrap_or(cur.anchor);
    let business = super::calendars::for_definition(ctl, &caller.tenant, &def).await?;
    let calendar_versions = business.as_ref().map(|b| b.chain().to_vec()).unwrap_or_default();
    let schedule = def.validate_with(ctl.cfg(), &caller.tenant, anchor, business.clone())?;
    super::resource_limits::check_declared(ctl, &def).await?;
    super::dependencies::check(ctl, &caller.tenant, job_id, &def).await?;
    if cur.version != expected {
        return Err(ControlError::VersionConflict { expected, current: cur.version });
    }
    super::quota::check_interval(ctl, &schedule, now)?;
    let (committed, field) = super::quota::executions_per_hour(&def, &schedule, now);
    let mut job = Job {
        calendar_versions,
        version: cur.version + 1,
        definition: def,
        anchor,
        next_fire_at: schedule.next_after(now),
        due_class: DueClass::Admission,
        updated_at: now,
        edited_at: now,
        committed_per_hour: committed,
        ..cur.clone()
    };
    place(ctl, &mut job, now, business)?;
    let audit = OpsEntry::new(caller.actor(), OpsAction::Update, job_id, now)
        .versions(Some(cur.version), Some(job.version));
    let retention = ctl.settings.ops_retention_secs;
    // The fires due while the job was enabled, up to now, are its own even when the tick has
    // not created them yet: put first, under the definition they were due under.
    crate::trigger::settle::settle_owed(&ctl.ctx, &cur, now, &caller.actor()).await?;
    crate::trigger::verify::before_leaving(&ctl.ctx, &cur, now).await?;
    // A busier job takes the difference first; a quieter one gives it back once stored.
    let more = committed.saturating_sub(cur.committed_per_hour);
    super::quota::take_committed(ctl, &caller.tenant, more, field).await?;
    if let Err(e) =
        put_job_change(ctl.ddb(), ctl.cfg(), Expect::Version(expected), &job, None, &audit, retention).await
    {
        super::quota::give_back_committed(ctl, &caller.tenant, more).await;
        return Err(conflict_with_current(ctl, caller, job_id, e).await);
    }
    super::quota::give_back_committed(ctl, &caller.tenant, cur.committed_per_hour.saturating_sub(committed))
        .await;
    let followed = follow_change(&ctl.execs, &job, now, &caller.actor()).await?;
    ctl.after_leaving(&cur, now).await;
    dispatch(ctl, &job, now, caller).await;
    let next_fires = next_fires(&job, now, NEXT_FIRES);
    Ok(JobView::new(job, next_fires, followed))
}

async fn conflict_with_current(ctl: &Control, caller: &Caller, job_id: &str, e: ChangeError) -> ControlError {
    match e {
        ChangeError::VersionConflict { expected } => {
            match store::get_job(ctl.ddb(), ctl.cfg(), &caller.tenant, job_id).await {
                Ok(Some(j)) => ControlError::VersionConflict { expected, current: j.version },
                Ok(None) => ControlError::NotFound { what: "job" },
                Err(s) => ControlError::Store(s),
            }
        }
        other => change_error(other, 0),
    }
}

/// Refuses what a completed job cannot do (docs/schedule.md, "A run-count limit"): a pause, and a
/// resume while its count is still at its `maxRuns` (an edit must raise the limit first).
async fn still_completed(ctl: &Control, cur: &Job, state: JobState) -> Result<(), ControlError> {
    let completed = |field: &'static str, message: String| ControlError::Conflict {
        code: sundial_model::ErrorCode::JobCompleted,
        field,
        message,
    };
    match (state, cur.definition.max_runs) {
        (JobState::Paused, _) => Err(completed(
            "jobId",
            "the job is completed: it does not trigger; raise maxRuns and resume it, or delete it".into(),
        )),
        (JobState::Enabled, Some(max)) => {
            let runs = ctl.execs.runs(&cur.tenant, &cur.job_id, true).await?;
            if runs >= max {
                return Err(completed(
                    "maxRuns",
                    format!("the job created {runs} of its {max} scheduled fires; raise maxRuns in an edit, then resume"),
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn deleted() -> ControlError {
    ControlError::Conflict {
        code: sundial_model::ErrorCode::JobDeleted,
        field: "jobId",
        message: "the job is deleted".into(),
    }
}

/// `job` as it resumes: on the calendar in force now (a paused job is re-planned by calendar
/// edits too, but a calendar deleted meanwhile is refused here), placed from `now`, and charged
/// its busiest hour again (the zone's rules or the calendar may have changed while it was
/// paused, and a charge stored before it was computed over the whole cycle may be short).
/// Returns the field a budget refusal names.
async fn resumed(
    ctl: &Control,
    caller: &Caller,
    cur: &Job,
    job: &mut Job,
    now: DateTime<Utc>,
) -> Result<&'static str, ControlError> {
    let business = super::calendars::for_definition(ctl, &caller.tenant, &job.definition).await?;
    job.calendar_versions = business.as_ref().map(|b| b.chain().to_vec()).unwrap_or_default();
    if job.calendar_versions != cur.calendar_versions {
        job.replanned_at = Some(now);
    }
    let schedule = place(ctl, job, now, business)?;
    job.due_class = DueClass::Admission;
    let (committed, field) = super::quota::executions_per_hour(&job.definition, &schedule, now);
    job.committed_per_hour = committed;
    Ok(field)
}

/// Pauses, resumes or deletes the caller's job (`expected`: an optional If-Match version).
/// Asking for the state the job is already in stores nothing and only sweeps its queued-ahead
/// executions again. Pause and delete take the job
/// out of the `due` index and cancel its READY executions for later fires; resume re-admits it
/// at its first fire after `now` and cancels the fires its pause held through their instants
/// (`Paused`, [`follow::close_window`]; a resume with a catch-up runs some instead:
/// [`super::catch_up`]). Delete is soft: the definition and its versions are kept for
/// [`super::ControlSettings::delete_retention_secs`], executions for their own retention.
pub async fn set_state(
    ctl: &Control,
    caller: &Caller,
    job_id: &str,
    state: JobState,
    expected: Option<u64>,
    now: DateTime<Utc>,
) -> Result<JobView, ControlError> {
    set_state_as(ctl, caller, &caller.actor(), job_id, state, expected, now).await
}

/// [`set_state`] recorded as `actor` (the auto-pause's `auto-pause:{executionId}`,
/// docs/outcomes.md) rather than the caller's `api:` actor.
pub async fn set_state_as(
    ctl: &Control,
    caller: &Caller,
    actor: &str,
    job_id: &str,
    state: JobState,
    expected: Option<u64>,
    now: DateTime<Utc>,
) -> Result<JobView, ControlError> {
    let mut view = change_state(ctl, caller, actor, job_id, state, expected, now).await?;
    if state == JobState::Enabled {
        view.canceled.extend(follow::close_window(&ctl.execs, &view.job, &[], now, actor).await?);
    }
    Ok(view)
}

/// [`set_state_as`], except that a resume leaves the fires its pause held through their
/// instants as they are: a catch-up replays some, then closes the window itself.
pub(super) async fn change_state(
    ctl: &Control,
    caller: &Caller,
    actor: &str,
    job_id: &str,
    state: JobState,
    expected: Option<u64>,
    now: DateTime<Utc>,
) -> Result<JobView, ControlError> {
    let cur = get(ctl, caller, job_id).await?;
    if let Some(v) = expected {
        if v != cur.version {
            return Err(ControlError::VersionConflict { expected: v, current: cur.version });
        }
    }
    if cur.state == JobState::Deleted && state != JobState::Deleted {
        return Err(deleted());
    }
    if cur.state == JobState::Completed {
        still_completed(ctl, &cur, state).await?;
    }
    if cur.state == state {
        // Nothing to store, but the sweep runs again (it is idempotent): the job write commits
        // before its sweep, so a client retrying a change whose sweep failed part-way repairs it.
        let followed = follow_change(&ctl.execs, &cur, now, actor).await?;
        let next_fires = next_fires(&cur, now, NEXT_FIRES);
        return Ok(JobView::new(cur, next_fires, followed));
    }
    let mut job = Job { state, version: cur.version + 1, updated_at: now, ..cur.clone() };
    match (cur.state, state) {
        (JobState::Enabled, JobState::Paused) => job.paused = Some((now, None)),
        (JobState::Paused, JobState::Enabled) => job.paused = cur.paused.map(|(from, _)| (from, Some(now))),
        _ => {}
    }
    let field = match state {
        JobState::Enabled => resumed(ctl, caller, &cur, &mut job, now).await?,
        _ => "schedule.expression",
    };
    let action = match state {
        JobState::Enabled => OpsAction::Resume,
        JobState::Paused => OpsAction::Pause,
        JobState::Deleted => OpsAction::Delete,
        JobState::Completed => OpsAction::Complete,
    };
    let expires = (state == JobState::Deleted).then(|| now.timestamp() + ctl.settings.delete_retention_secs);
    let audit = OpsEntry::new(actor, action, job_id, now).versions(Some(cur.version), Some(job.version));
    let retention = ctl.settings.ops_retention_secs;
    let expect = Expect::Version(cur.version);
    // The fires due while the job was enabled, up to now, are its own even when the tick has
    // not created them yet: put first, under the definition they were due under.
    crate::trigger::settle::settle_owed(&ctl.ctx, &cur, now, actor).await?;
    crate::trigger::verify::before_leaving(&ctl.ctx, &cur, now).await?;
    // A resume that makes the job busier takes the difference first, like an edit.
    let more = job.committed_per_hour.saturating_sub(cur.committed_per_hour);
    super::quota::take_committed(ctl, &caller.tenant, more, field).await?;
    if let Err(e) = put_job_change(ctl.ddb(), ctl.cfg(), expect, &job, expires, &audit, retention).await {
        super::quota::give_back_committed(ctl, &caller.tenant, more).await;
        return Err(conflict_with_current(ctl, caller, job_id, e).await);
    }
    let less = cur.committed_per_hour.saturating_sub(job.committed_per_hour);
    super::quota::give_back_committed(ctl, &caller.tenant, less).await;
    if state == JobState::Deleted {
        super::quota::give_back_job(ctl, &caller.tenant).await;
        super::quota::give_back_committed(ctl, &caller.tenant, cur.committed_per_hour).await;
    }
    let followed = follow_change(&ctl.execs, &job, now, actor).await?;
    ctl.after_leaving(&cur, now).await;
    if state == JobState::Enabled {
        // A resume starts the count of dead fires over (docs/outcomes.md, "Auto-pause").
        if let Err(e) = ctl.execs.reset_dead_fires(&caller.tenant, job_id).await {
            tracing::warn!(job = job_id, error = %e, "dead fires in a row not reset; the next dead fire may pause the job again");
        }
        dispatch(ctl, &job, now, caller).await;
    }
    if let Some(t) = expires {
        if let Err(e) = store::expire_versions(ctl.ddb(), ctl.cfg(), &job, t).await {
            // The definition item carries its TTL already; older snapshots are only clutter.
            tracing::warn!(job = %job.job_id, error = %e, "could not set the TTL of older versions");
        }
    }
    let next_fires = next_fires(&job, now, NEXT_FIRES);
    Ok(JobView::new(job, next_fires, followed))
}

/// A draft's preview: its lines, and with several expressions the one that makes each fire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    /// The fires, with the rolled and skipped ones explained.
    pub lines: Vec<sundial_schedule::PreviewFire>,
    /// The expression of each fire line, in order ([`super::upcoming::expressions_of`]).
    pub expressions: Option<Vec<usize>>,
}

/// A draft's next `count` fires after `after` (no job needed): the same parse as create, with
/// the business calendar in force when the draft names one; rolled and skipped fires are
/// explained.
pub async fn preview(
    ctl: &Control,
    caller: &Caller,
    spec: &sundial_schedule::ScheduleSpec,
    after: DateTime<Utc>,
    count: usize,
) -> Result<Preview, ControlError> {
    if !sundial_schedule::instant::in_range(after) {
        return Err(ControlError::invalid("after", sundial_schedule::instant::RANGE_MESSAGE));
    }
    for (field, t) in [("schedule.start", spec.start), ("schedule.end", spec.end)] {
        if t.is_some_and(|t| !sundial_schedule::instant::in_range(t)) {
            return Err(ControlError::invalid(field, sundial_schedule::instant::RANGE_MESSAGE));
        }
    }
    let business = match &spec.business_calendar {
        None => None,
        Some(r) => Some(
            super::calendars::resolve_latest(
                ctl,
                &caller.tenant,
                &r.calendar,
                "schedule.businessCalendar.calendar",
            )
            .await?,
        ),
    };
    let schedule = Schedule::parse_with(spec, spec.start.unwrap_or(after), business)
        .map_err(|e| ControlError::invalid(format!("schedule.{}", e.field()), e.reason()))?;
    let lines = schedule.preview_explained(after, count);
    let fires: Vec<DateTime<Utc>> = lines
        .iter()
        .filter(|l| matches!(l, sundial_schedule::PreviewFire::Fire { .. }))
        .map(sundial_schedule::PreviewFire::at)
        .collect();
    let expressions = super::upcoming::expressions_of(&schedule, &fires);
    Ok(Preview { lines, expressions })
}
