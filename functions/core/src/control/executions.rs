//! Executions through the control plane: list (by job, or by off-happy-path status), read with
//! the full timeline, cancel, trigger now, backfill, and the cancellation of fires queued ahead
//! when a job is paused or deleted.
//!
//! Listing by status uses the sparse `attention` index, which holds only RETRY_WAIT, FAILED,
//! DEAD and CANCELED executions (the happy path never writes to it). READY, RUNNING, SUCCEEDED
//! and SKIPPED are listed per job (a Query of the job's partition with a filter), never by a
//! scan of the table.
//!
//! Manual runs and backfills create executions exactly like the trigger does (same item, same
//! message, same unique key `(job, scheduled_at)`), then send them to the job's pool queue.
//! A backfill is idempotent: a fire that already has an execution is left alone (or re-sent if
//! it is still READY, like the scan does after a crash between put and send), except a fire
//! queued ahead of a pause that the pause kept from running (held, still READY): the backfill
//! takes it over and runs it as it would a fire it created (`follow::replays`).

use super::ops;
use super::page::{self, Page};
use super::{Caller, Control, ControlError};
use chrono::{DateTime, Duration, Utc};
use sundial_model::keys;
use sundial_model::{ExecStatus, Execution, Job, JobState, OpsAction, OpsEntry};
use sundial_schedule::Schedule;
use sundial_store::executions::{CancelOutcome, ExecKey, JobPage, PutOutcome};
use sundial_store::queue::Outgoing;

pub use sundial_model::{BACKFILL_CODE, MANUAL_CODE};
/// Largest backfill pacing (seconds between two backfilled executions).
pub const MAX_PACE_SECS: u32 = 3_600;

/// The key of an execution id of the caller's tenant: the API's `{job}@{ms}`, or the id a
/// target received (`{tenant}:{job}@{ms}`), whose tenant must be the caller's (another
/// tenant's execution is simply not found).
pub fn key_of(caller: &Caller, execution_id: &str) -> Result<ExecKey, ControlError> {
    let local = match execution_id.split_once(':') {
        Some((tenant, rest)) if tenant == caller.tenant => rest,
        Some(_) => return Err(ControlError::NotFound { what: "execution" }),
        None => execution_id,
    };
    let (job_id, ms, child) =
        keys::parse_execution_ref(local).map_err(|e| ControlError::invalid(e.field, e.reason))?;
    Ok(ExecKey { tenant: caller.tenant.clone(), job_id, scheduled_ms: ms, child })
}

/// The caller's execution, with its timeline.
pub async fn get(ctl: &Control, caller: &Caller, execution_id: &str) -> Result<Execution, ControlError> {
    let key = key_of(caller, execution_id)?;
    let snapshot = ctl.execs.get(&key, true).await?;
    snapshot.map(|s| s.exec).ok_or(ControlError::NotFound { what: "execution" })
}

/// [`get`] with what only the execution plane writes: the last checkpoint and the run time of
/// finished attempts (the console's progress of a long run).
pub async fn get_snapshot(
    ctl: &Control,
    caller: &Caller,
    execution_id: &str,
) -> Result<sundial_store::executions::Snapshot, ControlError> {
    let key = key_of(caller, execution_id)?;
    ctl.execs.get(&key, true).await?.ok_or(ControlError::NotFound { what: "execution" })
}

/// Children per page of [`children`] when the request names no `limit`.
pub const CHILDREN_PAGE_DEFAULT: u32 = 100;
/// Most children one page of [`children`] holds (a map-reduce parent has up to 100,000).
pub const CHILDREN_PAGE_MAX: u32 = 1_000;

/// One page of the children of one of the caller's sharded, broadcast or map-reduce fires, in
/// key order (shards by index, members by name), at most `limit` (default
/// [`CHILDREN_PAGE_DEFAULT`], at most [`CHILDREN_PAGE_MAX`]) read with DynamoDB's `Limit`;
/// empty for an execution that did not fan out (yet). `cursor`: the `next` of the page before.
pub async fn children(
    ctl: &Control,
    caller: &Caller,
    execution_id: &str,
    limit: Option<u32>,
    cursor: Option<&str>,
) -> Result<Page<Execution>, ControlError> {
    let key = key_of(caller, execution_id)?;
    if key.child.is_some() {
        return Err(ControlError::invalid(
            "executionId",
            "a child execution has no children; use its parent's id",
        ));
    }
    if limit.is_some_and(|l| l == 0 || l > CHILDREN_PAGE_MAX) {
        return Err(ControlError::invalid("limit", format!("must be 1 to {CHILDREN_PAGE_MAX}")));
    }
    let after = match cursor {
        Some(c) => {
            let part = page::decode("children", c)?;
            Some(
                sundial_model::children::ChildKey::parse(&part)
                    .ok_or_else(|| ControlError::invalid("cursor", "not a cursor returned by this list"))?,
            )
        }
        None => None,
    };
    if ctl.execs.get(&key, false).await?.is_none() {
        return Err(ControlError::NotFound { what: "execution" });
    }
    let limit = limit.unwrap_or(CHILDREN_PAGE_DEFAULT) as i32;
    let found = ctl.execs.children_page(&key, limit, after.as_ref()).await?;
    let next = found.next.map(|c| page::encode("children", &c.sort_part()));
    Ok(Page { items: found.items, next })
}

/// Filters of a per-job list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobExecFilter {
    /// Only this status.
    pub status: Option<ExecStatus>,
    /// Oldest first (default: newest first).
    pub oldest_first: bool,
    /// Page size.
    pub limit: Option<u32>,
    /// Cursor from the previous page.
    pub cursor: Option<String>,
    /// Only executions scheduled at or before this instant (the fires due by then; without it
    /// the newest are the fires the tick has already planned ahead, not yet due).
    pub until: Option<DateTime<Utc>>,
}

/// The executions of one of the caller's jobs (also of a deleted job still retained).
pub async fn list_for_job(
    ctl: &Control,
    caller: &Caller,
    job_id: &str,
    f: &JobExecFilter,
) -> Result<Page<Execution>, ControlError> {
    // 404 for a job that is not the caller's, rather than an empty list that would confirm
    // nothing but still differ from a real job's answer.
    ctl.job(caller, job_id).await?;
    let after_ms = match &f.cursor {
        Some(c) => Some(
            page::decode("execs", c)?
                .parse::<i64>()
                .map_err(|_| ControlError::invalid("cursor", "not a cursor returned by this list"))?,
        ),
        None => None,
    };
    let job_page = JobPage {
        status: f.status,
        oldest_first: f.oldest_first,
        limit: page::limit(f.limit, ctl.settings.max_page),
        after_ms,
        until_ms: f.until.map(|t| t.timestamp_millis()),
    };
    let found = ctl.execs.list_for_job(&caller.tenant, job_id, &job_page).await?;
    let next = found.next.map(|ms| page::encode("execs", &ms.to_string()));
    Ok(Page { items: found.items, next })
}

/// The caller's executions in an off-happy-path status (RETRY_WAIT, FAILED, DEAD, CANCELED),
/// newest first, from the `attention` index.
pub async fn list_by_status(
    ctl: &Control,
    caller: &Caller,
    status: ExecStatus,
    limit: Option<u32>,
    cursor: Option<&str>,
) -> Result<Page<Execution>, ControlError> {
    if !status.needs_attention() {
        return Err(ControlError::invalid(
            "status",
            format!(
                "{} executions are listed per job (GET /v1/jobs/{{jobId}}/executions?status={}); across jobs only RETRY_WAIT, FAILED, DEAD and CANCELED",
                status.as_str(),
                status.as_str()
            ),
        ));
    }
    let after = match cursor {
        Some(c) => {
            let id = page::decode("attention", c)?;
            Some(
                key_of(caller, &id)
                    .map_err(|_| ControlError::invalid("cursor", "not a cursor returned by this list"))?,
            )
        }
        None => None,
    };
    let limit = page::limit(limit, ctl.settings.max_page);
    let found = ctl.execs.list_attention(&caller.tenant, status, limit, after.as_ref()).await?;
    let next = found.next.map(|k| page::encode("attention", &k.id()));
    Ok(Page { items: found.items, next })
}

/// Cancels one of the caller's executions: READY or RETRY_WAIT become CANCELED at once; a
/// RUNNING one gets the cancel flag its runner sees at its next heartbeat or checkpoint.
/// Returns the execution after the request and whether it is already CANCELED.
pub async fn cancel(
    ctl: &Control,
    caller: &Caller,
    execution_id: &str,
    now: DateTime<Utc>,
) -> Result<(Execution, bool), ControlError> {
    let key = key_of(caller, execution_id)?;
    let outcome = ctl.execs.request_cancel(&key, &caller.actor(), now).await?;
    let done = match outcome {
        CancelOutcome::Missing => return Err(ControlError::NotFound { what: "execution" }),
        CancelOutcome::AlreadyFinal(st) => {
            return Err(ControlError::Conflict {
                code: sundial_model::ErrorCode::NotCancellable,
                field: "executionId",
                message: format!("the execution is already {}", st.as_str()),
            })
        }
        CancelOutcome::Canceled => true,
        CancelOutcome::Requested => false,
    };
    let entry = OpsEntry::new(caller.actor(), OpsAction::Cancel, &key.job_id, now)
        .execution(key.id())
        .detail(if done { "canceled" } else { "cancel requested while running" });
    ops::record(ctl, &caller.tenant, &entry).await?;
    Ok((get(ctl, caller, execution_id).await?, done))
}

fn message_of(e: &Execution, now: DateTime<Utc>) -> Outgoing {
    Outgoing::for_execution(e, now)
}

pub(super) fn runnable_job(job: &Job) -> Result<Schedule, ControlError> {
    if job.state == JobState::Deleted {
        return Err(ControlError::Conflict {
            code: sundial_model::ErrorCode::JobDeleted,
            field: "jobId",
            message: "the job is deleted".into(),
        });
    }
    crate::schedules::schedule_of(job)
        .map(|s| (*s).clone())
        .map_err(|e| ControlError::invalid(format!("schedule.{}", e.field()), e.reason()))
}

/// The executions one fire of `job` creates when it is made: itself and its fan-out children
/// (shards, broadcast members). A map-reduce fire's items are made later, by its map phase.
pub(super) fn executions_per_fire(job: &Job) -> u32 {
    let children = sundial_model::children::plan(&job.definition).map_or(0, |keys| keys.len());
    u32::try_from(children).unwrap_or(u32::MAX).saturating_add(1)
}

/// Runs the caller's job now, whatever its schedule and state (a paused job too, not a
/// deleted one): an execution scheduled at `now` with the current definition, sent at once.
pub async fn trigger_now(
    ctl: &Control,
    caller: &Caller,
    job_id: &str,
    now: DateTime<Utc>,
) -> Result<Execution, ControlError> {
    trigger_now_with(ctl, caller, job_id, None, now).await
}

/// [`trigger_now`] with per-run parameters merged over the job's
/// ([`sundial_model::merge_params`]; 400 on `params` when the result is too large).
pub async fn trigger_now_with(
    ctl: &Control,
    caller: &Caller,
    job_id: &str,
    params: Option<&serde_json::Value>,
    now: DateTime<Utc>,
) -> Result<Execution, ControlError> {
    let mut job = ctl.job(caller, job_id).await?;
    job.definition = job.definition.with_run_params(params)?;
    let schedule = runnable_job(&job)?;
    super::quota::check_saturation(ctl, &job.definition.pool, job.definition.priority.lane(), now).await?;
    super::quota::take_rate(ctl, &caller.tenant, "trigger", 1, now).await?;
    // Every execution the fire makes: the parent and its shards or broadcast members.
    super::quota::take_rate(ctl, &caller.tenant, "exec", executions_per_fire(&job), now).await?;
    let mut e = Execution::ready(&job, &schedule, now, None, now, &caller.actor());
    e.fire_at = now;
    e.available_at = now.timestamp_millis();
    if let Some(ev) = e.timeline.first_mut() {
        ev.code = Some(MANUAL_CODE.into());
    }
    match ctl.execs.put_new(&e).await? {
        PutOutcome::Created => {}
        PutOutcome::Exists(_) => {
            // Refused: nothing may stay written, the rate tokens included.
            super::quota::give_back_rate(ctl, &caller.tenant, "trigger", 1, now).await;
            super::quota::give_back_rate(ctl, &caller.tenant, "exec", 1, now).await;
            return Err(ControlError::Conflict {
                code: sundial_model::ErrorCode::AlreadyExists,
                field: "jobId",
                message: "an execution for this instant already exists; retry".into(),
            });
        }
    }
    if let Err(err) = ctl.ctx.queues.send_all(&job.definition.pool, &[message_of(&e, now)]).await {
        // Nothing will ever receive it: cancel it rather than leave a READY execution behind.
        let _ = ctl.execs.request_cancel(&ExecKey::of(&e), &caller.actor(), now).await;
        return Err(err.into());
    }
    let entry = OpsEntry::new(caller.actor(), OpsAction::Trigger, job_id, now)
        .versions(None, Some(job.version))
        .execution(e.id());
    ops::record(ctl, &caller.tenant, &entry).await?;
    Ok(e)
}

/// A backfill request: the job's scheduled fires in `[from, to]`, run `pace_secs` apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackfillRequest {
    /// First instant (inclusive).
    pub from: DateTime<Utc>,
    /// Last instant (inclusive); not after now.
    pub to: DateTime<Utc>,
    /// Seconds between two backfilled executions' start (0 = all at once).
    pub pace_secs: u32,
    /// Per-run parameters merged over the job's for every execution of the backfill.
    pub params: Option<serde_json::Value>,
}

/// What a backfill did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackfillReport {
    /// Fires of the schedule in the range.
    pub fires: usize,
    /// Executions created.
    pub created: usize,
    /// Fires that already had an execution (left alone; re-sent if still READY).
    pub existing: usize,
    /// Fires whose execution was queued ahead of a pause that kept it from running: taken over
    /// (hold released, noted `CaughtUp`) and paced like the created ones.
    pub released: usize,
    /// When the last created or released execution is due to start.
    pub last_start_at: Option<DateTime<Utc>>,
}

/// Creates executions for the caller's job's fires in a past range that have none, with the
/// current definition, starting `pace_secs` apart from `now` so a long range does not arrive
/// as one burst. Refused when the range is so old that workers would not start it (the job's
/// `retry.maxAgeSecs`, counted from each scheduled instant).
pub async fn backfill(
    ctl: &Control,
    caller: &Caller,
    job_id: &str,
    req: &BackfillRequest,
    now: DateTime<Utc>,
) -> Result<BackfillReport, ControlError> {
    check_backfill_range(req, now)?;
    let mut job = ctl.job(caller, job_id).await?;
    job.definition = job.definition.with_run_params(req.params.as_ref())?;
    let schedule = runnable_job(&job)?;
    let max = ctl.settings.max_backfill;
    let fires = schedule.fires_between(req.from - Duration::milliseconds(1), req.to, max + 1);
    if fires.len() > max {
        return Err(ControlError::invalid("to", format!("the range has more than {max} fires; split it")));
    }
    let pace = Duration::seconds(i64::from(req.pace_secs));
    let start_of = |i: usize| now + pace * (i as i32);
    check_backfill_age(&job, &fires, start_of)?;
    super::quota::check_saturation(ctl, &job.definition.pool, sundial_model::priority::backfill_lane(), now)
        .await?;
    let executions = u32::try_from(fires.len()).unwrap_or(u32::MAX).saturating_mul(executions_per_fire(&job));
    super::quota::take_rate(ctl, &caller.tenant, "exec", executions, now).await?;
    let mut report = BackfillReport { fires: fires.len(), ..BackfillReport::default() };
    let covered = batch_covered(ctl, &caller.tenant, job_id, &fires).await?;
    let mut out = Vec::new();
    for (i, f) in fires.iter().enumerate() {
        if covered.contains(f) {
            report.existing += 1;
            continue;
        }
        let mut e = Execution::ready(&job, &schedule, *f, None, now, &caller.actor());
        e.fire_at = start_of(i);
        e.available_at = e.fire_at.timestamp_millis();
        if let Some(ev) = e.timeline.first_mut() {
            ev.code = Some(BACKFILL_CODE.into());
        }
        if let Some(msg) = put_backfilled(ctl, &job, &e, &caller.actor(), now, &mut report).await? {
            out.push(msg);
        }
    }
    ctl.ctx.queues.send_all(&job.definition.pool, &out).await?;
    let entry = OpsEntry::new(caller.actor(), OpsAction::Backfill, job_id, now)
        .versions(None, Some(job.version))
        .detail(format!(
            "{} to {}: {} fires, {} created, {} existing, {} released, pace {} s",
            req.from.to_rfc3339(),
            req.to.to_rfc3339(),
            report.fires,
            report.created,
            report.existing,
            report.released,
            req.pace_secs
        ));
    ops::record(ctl, &caller.tenant, &entry).await?;
    Ok(report)
}

/// A backfill's range: both ends in range, in order, not in the future; its pace bounded.
pub(super) fn check_backfill_range(req: &BackfillRequest, now: DateTime<Utc>) -> Result<(), ControlError> {
    for (field, t) in [("from", req.from), ("to", req.to)] {
        if !sundial_schedule::instant::in_range(t) {
            return Err(ControlError::invalid(field, sundial_schedule::instant::RANGE_MESSAGE));
        }
    }
    if req.from > req.to {
        return Err(ControlError::invalid("to", "must not be before from"));
    }
    if req.to > now {
        return Err(ControlError::invalid(
            "to",
            "must not be in the future: future fires are the schedule's",
        ));
    }
    if req.pace_secs > MAX_PACE_SECS {
        return Err(ControlError::invalid("paceSecs", format!("must be at most {MAX_PACE_SECS}")));
    }
    // An instant older than the shortest retention may have run and had its execution expire:
    // putting it again would run it twice (store::executions::SUCCEEDED_RETENTION_SECS).
    let oldest = now - Duration::seconds(sundial_store::executions::SUCCEEDED_RETENTION_SECS);
    if req.from < oldest {
        return Err(ControlError::invalid(
            "from",
            format!(
                "must be within the last {} days: an older fire's execution may have succeeded and expired, and backfilling it would run it again",
                sundial_store::executions::SUCCEEDED_RETENTION_SECS / 86_400
            ),
        ));
    }
    Ok(())
}

/// Refuses a backfill whose paced starts would fall past the job's `retry.maxAgeSecs` (workers
/// would refuse those executions), naming `from` for the first fire and `paceSecs` otherwise.
pub(super) fn check_backfill_age(
    job: &Job,
    fires: &[DateTime<Utc>],
    start_of: impl Fn(usize) -> DateTime<Utc>,
) -> Result<(), ControlError> {
    let max_age = Duration::seconds(i64::from(job.definition.retry.max_age_secs));
    let Some((i, f)) = fires.iter().enumerate().find(|(i, f)| start_of(*i) - **f > max_age) else {
        return Ok(());
    };
    Err(ControlError::invalid(
        if i == 0 { "from" } else { "paceSecs" },
        format!(
            "the fire at {} would start more than retry.maxAgeSecs ({} s) after its scheduled instant, and workers refuse it; narrow the range or lower paceSecs",
            f.to_rfc3339(),
            job.definition.retry.max_age_secs
        ),
    ))
}

/// Puts one backfilled execution `e` of `job` for `actor`; its message if it must be sent
/// (created; found READY and kept from running by the job's pause, then taken over; or found
/// READY otherwise and possibly never sent: an earlier backfill failed between put and send).
/// The instants of `fires` a `fireOnce` batch of the job already stands for (its range covers
/// them and it did not except them; a canceled batch stands for nothing it could still run):
/// existing fires, as an event's on such an instant is (`events::covering_batch`, K14). A
/// batch registered after this read is settled at the claims (`CoveredByBatch`). The full
/// mix's seed 987: a backfill over a batch's range ran each of its instants again.
async fn batch_covered(
    ctl: &Control,
    tenant: &str,
    job_id: &str,
    fires: &[DateTime<Utc>],
) -> Result<Vec<DateTime<Utc>>, ControlError> {
    let (_, covers) =
        sundial_store::jobs::get_job_and_covers(&ctl.ctx.ddb, &ctl.ctx.cfg, tenant, job_id).await?;
    let mut out = Vec::new();
    for c in covers.iter().filter(|c| fires.iter().any(|f| c.covers(*f))) {
        let key = ExecKey::new(tenant, job_id, c.first.timestamp_millis());
        let Some(s) = ctl.execs.get(&key, true).await? else { continue };
        if s.exec.status == ExecStatus::Canceled {
            continue;
        }
        out.extend(fires.iter().filter(|f| c.covers(**f) && !s.exec.missed_except.contains(f)));
    }
    Ok(out)
}

async fn put_backfilled(
    ctl: &Control,
    job: &Job,
    e: &Execution,
    actor: &str,
    now: DateTime<Utc>,
    report: &mut BackfillReport,
) -> Result<Option<Outgoing>, ControlError> {
    match ctl.execs.put_new(e).await? {
        PutOutcome::Created => {
            report.created += 1;
            report.last_start_at = Some(e.fire_at);
            Ok(Some(message_of(e, now)))
        }
        PutOutcome::Exists(ExecStatus::Ready) => {
            let Some(cur) = ctl.execs.get(&ExecKey::of(e), true).await? else { return Ok(None) };
            if crate::execution::follow::replays(job, &cur) {
                if let Some(taken) = ctl.execs.catch_up(&cur, e, actor, now.timestamp_millis()).await? {
                    report.released += 1;
                    report.last_start_at = Some(e.fire_at);
                    return Ok(Some(current_message(&taken, now)));
                }
                // Changed since it was read (claimed, canceled): it is what it is now.
            }
            report.existing += 1;
            Ok(Some(current_message(&cur, now)))
        }
        PutOutcome::Exists(_) => {
            report.existing += 1;
            Ok(None)
        }
    }
}

/// The message of `s` as it is now: the copies of its current chain (a re-send or a wait raised
/// its generation, and older copies drop themselves).
fn current_message(s: &sundial_store::executions::Snapshot, now: DateTime<Utc>) -> Outgoing {
    let mut out = message_of(&s.exec, now);
    out.message.wait_gen = s.wait_gen;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_takes_the_tenant_relative_id_and_the_id_a_target_received() {
        let caller = Caller { tenant: "acme".into(), principal: "p".into() };
        let want = ExecKey { tenant: "acme".into(), job_id: "nightly".into(), scheduled_ms: 5, child: None };
        assert_eq!(key_of(&caller, "nightly@5").ok(), Some(want.clone()));
        assert_eq!(key_of(&caller, &want.global_id()).ok(), Some(want));
        // Another tenant's id is not found (never "forbidden": that would confirm it exists).
        assert!(matches!(key_of(&caller, "globex:nightly@5"), Err(ControlError::NotFound { .. })));
        assert!(matches!(key_of(&caller, "acme:nightly@x"), Err(ControlError::Invalid { .. })));
    }

    #[test]
    fn a_backfill_reaches_back_no_further_than_a_succeeded_execution_is_kept() {
        use chrono::TimeZone;
        let now = Utc.timestamp_opt(1_800_000_000, 0).unwrap();
        let range = |days_ago: i64| BackfillRequest {
            from: now - Duration::days(days_ago),
            to: now - Duration::days(days_ago) + Duration::hours(1),
            pace_secs: 1,
            params: None,
        };
        // Within the week: its fires' executions, if they ran, still exist and are left alone.
        assert!(check_backfill_range(&range(6), now).is_ok());
        // Past it: a fire may have succeeded and expired; putting it again would run it twice.
        match check_backfill_range(&range(8), now) {
            Err(ControlError::Invalid(v)) => {
                assert_eq!(v.field, "from");
                assert!(v.reason.contains("7 days"), "{}", v.reason);
            }
            other => panic!("{other:?}"),
        }
    }
}
