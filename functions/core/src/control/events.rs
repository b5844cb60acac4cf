//! Event triggers for the API (`POST /v1/jobs/{jobId}/events`; docs/dependencies.md, "Event
//! triggers"): an event becomes one execution of the job, with the same key, fencing, retries,
//! policies, audit and metrics as a scheduled fire. Which instant it is given, and how a repeat
//! is deduplicated, is `model::event`'s rule.

use super::ops;
use super::{Caller, Control, ControlError};
use chrono::{DateTime, Utc};
use sundial_model::event::{self, EVENT_CODE};
use sundial_model::{Execution, JobState, OpsAction, OpsEntry};
use sundial_store::executions::{ExecKey, PutOutcome};
use sundial_store::queue::Outgoing;

/// One event for a job.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventIn {
    /// Deduplication key: a repeat with the same key is the same execution.
    pub key: Option<String>,
    /// Per-run parameters, merged over the job's (RFC 7396).
    pub params: Option<serde_json::Value>,
    /// When the event happened (default: its arrival).
    pub at: Option<DateTime<Utc>>,
}

/// What an event did.
#[derive(Debug, Clone, PartialEq)]
pub struct EventOutcome {
    /// The execution it is (created now, or the one it was deduplicated onto).
    pub execution: Execution,
    /// False when the execution existed already (a repeated event, or with `oncePerPeriod` a
    /// fire the schedule or an earlier event already made).
    pub created: bool,
}

/// Turns an event into its execution (see the module doc): 400 when the job takes no events or
/// is paused, or on a bad `key`, `at` or `params`; 409 when it is deleted.
pub async fn fire(
    ctl: &Control,
    caller: &Caller,
    job_id: &str,
    ev: &EventIn,
    now: DateTime<Utc>,
) -> Result<EventOutcome, ControlError> {
    fire_as(ctl, caller, &caller.actor(), job_id, ev, now).await
}

/// [`fire`] for an event source other than the API: `actor` names the source in the audit
/// trail (`source:sqs:{queue}`, `source:events:{bus}`), `caller.tenant` is the source's tenant.
pub async fn fire_as(
    ctl: &Control,
    caller: &Caller,
    actor: &str,
    job_id: &str,
    ev: &EventIn,
    now: DateTime<Utc>,
) -> Result<EventOutcome, ControlError> {
    event::validate_event(ev.key.as_deref(), ev.at, now)?;
    let mut job = ctl.job(caller, job_id).await?;
    let schedule = super::executions::runnable_job(&job)?;
    let Some(trigger) = job.definition.events.clone() else {
        return Err(ControlError::invalid(
            "jobId",
            "the job takes no events: set events in its definition (docs/dependencies.md)",
        ));
    };
    if job.state != JobState::Enabled {
        return Err(ControlError::invalid("jobId", "the job is paused: resume it to take events"));
    }
    job.definition = job.definition.with_run_params(ev.params.as_ref())?;
    let at = ev.at.unwrap_or(now);
    let Some(mut instant) = event::event_instant(&trigger, &schedule, at) else {
        return Err(ControlError::invalid("jobId", "the job's schedule has no fire left for this event"));
    };
    // An event of its own (not `oncePerPeriod`) never takes an instant of the schedule.
    let distinct = !trigger.once_per_period;
    if distinct {
        instant = event::off_schedule(&schedule, instant);
    }
    if let Some(key) =
        ev.key.as_ref().filter(|_| !sundial_mutants::active(sundial_mutants::Mutant::EventSkipsKeyClaim))
    {
        let who = (caller.tenant.as_str(), job_id, key.as_str());
        instant = place_keyed(ctl, who, instant, distinct.then_some(&schedule), at, now).await?;
    }
    if trigger.once_per_period {
        if let Some(batch) = covering_batch(ctl, &caller.tenant, job_id, instant).await? {
            return Ok(EventOutcome { execution: batch, created: false });
        }
    }
    super::quota::check_saturation(ctl, &job.definition.pool, job.definition.priority.lane(), now).await?;
    // Metered like a trigger-now: one `exec` token per execution the fire makes.
    let tokens = super::executions::executions_per_fire(&job);
    super::quota::take_rate(ctl, &caller.tenant, "exec", tokens, now).await?;
    let e = event_execution(&job, &schedule, instant, actor, now);
    match ctl.execs.put_new(&e).await {
        Ok(PutOutcome::Created) => {}
        // This event's own execution (a redelivery: its key holds the instant), or a keyless
        // event's repeat, or the period's fire with `oncePerPeriod`.
        Ok(PutOutcome::Exists(_)) => {
            super::quota::give_back_rate(ctl, &caller.tenant, "exec", tokens, now).await;
            let Some(existing) = ctl.execs.get(&ExecKey::of(&e), true).await?.map(|s| s.exec) else {
                return Ok(EventOutcome { execution: e, created: false });
            };
            let existing = advance_if_ahead(ctl, actor, existing, now).await?;
            return Ok(EventOutcome { execution: existing, created: false });
        }
        Err(err) => {
            super::quota::give_back_rate(ctl, &caller.tenant, "exec", tokens, now).await;
            return Err(err.into());
        }
    }
    // A failed send leaves the execution READY and answers the error: the reconciler sends it
    // after its grace (it is in the `open` index like every READY execution), and the sender's
    // retry lands on it and is acknowledged with it, which is then true. It is never canceled
    // here: the event's key (or, with `oncePerPeriod`, the period's fire) would acknowledge a
    // canceled execution on the retry, and the event — and the scheduled fire it stands for —
    // would never run (simulator seed 5 on 7bc87a6).
    ctl.ctx.queues.send_all(&job.definition.pool, &[Outgoing::for_execution(&e, now)]).await?;
    let mut entry = OpsEntry::new(actor, OpsAction::Trigger, job_id, now)
        .versions(None, Some(job.version))
        .execution(e.id());
    if let Some(k) = &ev.key {
        entry = entry.detail(format!("event {k}"));
    } else {
        entry = entry.detail("event");
    }
    ops::record(ctl, &caller.tenant, &entry).await?;
    Ok(EventOutcome { execution: e, created: true })
}

/// With `oncePerPeriod`, the `fireOnce` batch that already stands for the period's fire at
/// `instant`, if one does (its cover is recorded at its first claim): the event is then
/// deduplicated onto it, as onto the fire's own execution. An event late for a fire that a
/// batch ran after an outage would otherwise run that fire a second time (the full mix's seed
/// 220, K14). A batch registered after this read is settled at the claims instead: the event's
/// execution, never claimed, is then canceled as covered (`CoveredByBatch`), or, already
/// claimed, excepted from the batch.
async fn covering_batch(
    ctl: &Control,
    tenant: &str,
    job_id: &str,
    instant: DateTime<Utc>,
) -> Result<Option<Execution>, ControlError> {
    let (_, covers) =
        sundial_store::jobs::get_job_and_covers(&ctl.ctx.ddb, &ctl.ctx.cfg, tenant, job_id).await?;
    for c in covers.iter().filter(|c| c.covers(instant)) {
        let key = ExecKey::new(tenant, job_id, c.first.timestamp_millis());
        // A batch that excepted the instant does not stand for it: whatever does is found by
        // the event's own put.
        if let Some(s) = ctl.execs.get(&key, true).await?.filter(|s| !s.exec.missed_except.contains(&instant))
        {
            return Ok(Some(s.exec));
        }
    }
    Ok(None)
}

/// The instant of the event `key`: the one it was given before (a redelivery), or `instant`, or,
/// for an event of its own (`schedule`: the job's, to pass over its instants), the first later
/// millisecond that no other event's key holds (protocol review N2: two events stamped alike
/// each run). The key's record (`EVT#{key}`) names the instant, and the instant's record
/// (`EVTI#{ms}`) names the key; a concurrent delivery of the same key converges on the same
/// pair, since only a conditional move changes the key's instant.
async fn place_keyed(
    ctl: &Control,
    (tenant, job_id, key): (&str, &str, &str),
    instant: DateTime<Utc>,
    schedule: Option<&sundial_schedule::Schedule>,
    at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<DateTime<Utc>, ControlError> {
    use sundial_store::events as ev;
    let (ddb, cfg, now_s) = (ctl.ddb(), ctl.cfg(), now.timestamp());
    let mut ms =
        ev::claim_event_key(ddb, cfg, tenant, job_id, key, instant.timestamp_millis(), now_s).await?;
    let Some(schedule) =
        schedule.filter(|_| !sundial_mutants::active(sundial_mutants::Mutant::EventsNotNudged))
    else {
        return Ok(sundial_store::items::ms_to_dt(ms));
    };
    loop {
        if ev::claim_event_instant(ddb, cfg, tenant, job_id, key, ms, now_s).await? {
            return Ok(sundial_store::items::ms_to_dt(ms));
        }
        let next = event::off_schedule(schedule, sundial_store::items::ms_to_dt(ms + 1));
        if next - at > chrono::Duration::milliseconds(event::MAX_EVENT_NUDGE_MS) {
            return Err(ControlError::Limited {
                code: sundial_model::ErrorCode::Throttled,
                field: "at",
                message: format!(
                    "more than {} events at {}: send it again",
                    event::MAX_EVENT_NUDGE_MS,
                    at.to_rfc3339()
                ),
                retry_after_secs: 1,
            });
        }
        ms = if ev::move_event_key(ddb, cfg, tenant, job_id, key, ms, next.timestamp_millis()).await? {
            next.timestamp_millis()
        } else {
            // Another delivery of this key moved it first: follow it.
            ev::claim_event_key(ddb, cfg, tenant, job_id, key, ms, now_s).await?
        };
    }
}

/// The execution an event at `instant` makes: READY, run now (an event before its fire's
/// instant, "whichever comes first", starts at once), its creation noted as an event.
fn event_execution(
    job: &sundial_model::Job,
    schedule: &sundial_schedule::Schedule,
    instant: DateTime<Utc>,
    actor: &str,
    now: DateTime<Utc>,
) -> Execution {
    let mut e = Execution::ready(job, schedule, instant, None, now, actor);
    e.fire_at = now;
    e.available_at = e.fire_at.timestamp_millis();
    if let Some(first) = e.timeline.first_mut() {
        first.code = Some(EVENT_CODE.into());
    }
    e
}

/// "Whichever comes first" inside the tick's queued-ahead window: the fire's execution was put
/// ahead of its instant and nothing has claimed it, so the event moves its start to now (one
/// conditional write, a note `AdvancedByEvent`) and sends it. Anything else is left as it is.
async fn advance_if_ahead(
    ctl: &Control,
    actor: &str,
    existing: Execution,
    now: DateTime<Utc>,
) -> Result<Execution, ControlError> {
    let now_ms = now.timestamp_millis();
    let ahead = existing.status == sundial_model::ExecStatus::Ready
        && existing.never_claimed()
        && existing.available_at > now_ms
        && existing.child.is_none();
    if !ahead {
        return Ok(existing);
    }
    let code = sundial_model::retry::codes::ADVANCED_BY_EVENT;
    if !ctl.execs.advance_ready(&existing, code, actor, now_ms).await? {
        return Ok(existing);
    }
    let key = ExecKey::of(&existing);
    let advanced = ctl.execs.get(&key, true).await?.map(|s| s.exec).unwrap_or(existing);
    ctl.ctx.queues.send_all(&advanced.definition.pool, &[Outgoing::for_execution(&advanced, now)]).await?;
    Ok(advanced)
}

/// Most refused events of one source (`actor`) logged one by one per minute: past it, one entry
/// says the rest of the minute's are counted, not logged (issue 49, N9). Anyone a tenant's queue
/// policy or bus admits can send refusable messages at SQS speed; each logged one is a write to
/// the shared table that would also bury the tenant's real audit entries.
pub const MAX_LOGGED_REJECTIONS_PER_MINUTE: u32 = 20;

/// Records in the tenant's operations log that an event from one of its sources could not fire
/// (`event_rejected`): a source has no one to answer, so the refusal is kept where the tenant
/// reads its audit trail (`GET /v1/operations`), with the error naming the field. `job_id` is what the
/// message named (`-` when it named none). At most [`MAX_LOGGED_REJECTIONS_PER_MINUTE`] a minute
/// per source, then one entry saying so; the rest are counted (the counter `rejected#…`).
pub async fn record_rejected(
    ctl: &Control,
    tenant: &str,
    actor: &str,
    job_id: &str,
    what: &str,
    err: &ControlError,
    now: DateTime<Utc>,
) -> Result<(), ControlError> {
    let job = if sundial_model::keys::validate_id("jobId", job_id).is_ok() { job_id } else { "-" };
    let detail = match err {
        ControlError::Invalid(e) => format!("{what}: {}: {}", e.field, e.reason),
        other => format!("{what}: {other}"),
    };
    let entry = match rejection_slot(ctl, tenant, actor, now).await? {
        Slot::Logged => OpsEntry::new(actor, OpsAction::EventRejected, job, now).detail(detail),
        Slot::FirstOver => OpsEntry::new(actor, OpsAction::EventRejected, "-", now).detail(format!(
            "more than {MAX_LOGGED_REJECTIONS_PER_MINUTE} events of this source were refused this minute: the rest of the minute's are counted, not logged"
        )),
        Slot::Counted => {
            tracing::info!(tenant, actor, "event rejected; past this minute's logged rejections, counted only");
            return Ok(());
        }
    };
    Ok(ops::record(ctl, tenant, &entry).await?)
}

/// Where one refused event of `actor` goes this minute.
enum Slot {
    /// Logged on its own.
    Logged,
    /// The first past the limit: one entry says so.
    FirstOver,
    /// Counted only.
    Counted,
}

async fn rejection_slot(
    ctl: &Control,
    tenant: &str,
    actor: &str,
    now: DateTime<Utc>,
) -> Result<Slot, ControlError> {
    use sundial_store::quota;
    let minute = now.timestamp().div_euclid(60);
    let expires = Some((minute + 2) * 60);
    let (ddb, table) = (ctl.ddb(), &ctl.cfg().jobs_table);
    let logged = format!("rejected#{actor}#{minute}");
    if quota::take(ddb, table, tenant, &logged, 1, MAX_LOGGED_REJECTIONS_PER_MINUTE, expires).await? {
        return Ok(Slot::Logged);
    }
    let over = format!("rejected-over#{actor}#{minute}");
    if quota::take(ddb, table, tenant, &over, 1, 1, expires).await? {
        return Ok(Slot::FirstOver);
    }
    // (the count of the rest, for an operator reading the table)
    let _ =
        quota::take(ddb, table, tenant, &format!("rejected-counted#{actor}#{minute}"), 1, u32::MAX, expires)
            .await;
    Ok(Slot::Counted)
}
