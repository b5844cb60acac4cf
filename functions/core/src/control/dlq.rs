//! Dead letters: executions whose retry budget ran out (DEAD), and their audited replay.
//!
//! The list reads the sparse `attention` index (DEAD partition of the caller's tenant), not the
//! pool's SQS dead-letter queue: the queue is shared by every tenant of a pool and is kept as a
//! copy for operators and alarms. A replay moves the *same* execution DEAD → READY (the one
//! transition out of a final status that [`ExecStatus::can_move_to`] allows), so its id — the
//! handler's idempotency key — is unchanged, and a handler that did finish the work before the
//! retries ran out sees the id again and does nothing twice. The replay resets the attempt count
//! and run-time budget, appends `{actor: api:<principal>, DEAD → READY, code: replay}` to the
//! timeline in the same conditional write, then sends the execution to its pool's queue. The
//! fencing token is never reset: the next claim takes it one higher, so a worker still holding
//! a pre-DEAD token can never write.
//!
//! If the send fails after the write, the execution is READY with no message; replaying it again
//! re-sends it ([`ReplayOutcome::Resent`]), so a failed replay is repaired by repeating it.
//!
//! Replays are metered (issue 28, M2): each replayed or re-sent execution takes one `exec`
//! token of the tenant's per-minute rate (as trigger-now and backfill do; a batch takes one per
//! named execution up front, all or nothing, and gives back those that sent nothing) and is
//! refused while its pool lane is saturated. A re-send is limited to one message per execution
//! per [`RESEND_GAP_SECS`] by a conditional write on the item's last-send instant (the replay's
//! own send counts): a repeated replay inside the gap is answered `resent` like the first and
//! puts nothing on the queue, and costs no token.

use super::executions::key_of;
use super::ops;
use super::page::Page;
use super::{Caller, Control, ControlError};
use chrono::{DateTime, Utc};
use sundial_model::{ExecMessage, ExecStatus, Execution, OpsAction, OpsEntry};
use sundial_store::queue::Outgoing;

/// Audit code of a replay's DEAD → READY event.
pub const REPLAY_CODE: &str = "replay";
/// Most executions one replay request may name.
pub const MAX_REPLAY_BATCH: usize = 25;
/// Shortest time between two messages a replay sends for one execution: a replay of a READY
/// replayed execution within it is answered `resent` and sends nothing (docs/api.md).
pub const RESEND_GAP_SECS: u32 = 60;
/// The per-minute rate a replay is charged to (executions created through the API).
const EXEC: &str = "exec";

/// How the replay of one execution ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayOutcome {
    /// DEAD → READY and sent.
    Replayed,
    /// Already READY from an earlier replay whose send may have failed: sent again.
    Resent,
    /// No such execution for this tenant.
    NotFound,
    /// Not DEAD (never was, or already replayed and running or finished).
    NotDead(ExecStatus),
    /// Older than the job's `retry.maxAgeSecs`: a worker would refuse to start it.
    TooOld,
}

impl ReplayOutcome {
    /// The API's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReplayOutcome::Replayed => "replayed",
            ReplayOutcome::Resent => "resent",
            ReplayOutcome::NotFound => "not_found",
            ReplayOutcome::NotDead(_) => "not_dead",
            ReplayOutcome::TooOld => "too_old",
        }
    }
}

/// The caller's dead executions, newest first.
pub async fn list(
    ctl: &Control,
    caller: &Caller,
    limit: Option<u32>,
    cursor: Option<&str>,
) -> Result<Page<Execution>, ControlError> {
    super::executions::list_by_status(ctl, caller, ExecStatus::Dead, limit, cursor).await
}

fn send_of(e: &Execution, now: DateTime<Utc>) -> Outgoing {
    Outgoing {
        message: ExecMessage {
            tenant: e.tenant.clone(),
            job_id: e.job_id.clone(),
            scheduled_ms: e.scheduled_at.timestamp_millis(),
            fire_ms: now.timestamp_millis(),
            enqueued_ms: now.timestamp_millis(),
            lane: sundial_model::priority::lane_of(e),
            child: e.child.as_ref().map(|c| c.sort_part()),
            wait_gen: 0,
        },
        delay_secs: 0,
    }
}

/// Replays one of the caller's dead executions (see the module doc).
pub async fn replay(
    ctl: &Control,
    caller: &Caller,
    execution_id: &str,
    now: DateTime<Utc>,
) -> Result<ReplayOutcome, ControlError> {
    replay_because(ctl, caller, execution_id, None, now).await
}

/// [`replay`] recording the caller's `reason` in the operations log entry (`detail`).
pub async fn replay_because(
    ctl: &Control,
    caller: &Caller,
    execution_id: &str,
    reason: Option<&str>,
    now: DateTime<Utc>,
) -> Result<ReplayOutcome, ControlError> {
    Ok(replay_metered(ctl, caller, execution_id, reason, now, false).await?.0)
}

/// Takes `amount` `exec` tokens for replays, naming `executionIds` when refused.
async fn take_tokens(
    ctl: &Control,
    tenant: &str,
    amount: u32,
    now: DateTime<Utc>,
) -> Result<(), ControlError> {
    super::quota::take_rate(ctl, tenant, EXEC, amount, now).await.map_err(|e| match e {
        ControlError::Limited { code, message, retry_after_secs, .. } => {
            let limit = ctl.settings.quotas.api_executions_per_minute;
            ControlError::Limited {
                code,
                field: "executionIds",
                message: if amount > limit {
                    format!("{amount} replays in one request; at most {limit} executions a minute: split the batch")
                } else {
                    message
                },
                retry_after_secs,
            }
        }
        other => other,
    })
}

/// One replay; with it, whether it sent a message (and so used an `exec` token). `prepaid`:
/// the caller (a batch) took the token already; else it is taken here, and given back when
/// nothing is sent.
async fn replay_metered(
    ctl: &Control,
    caller: &Caller,
    execution_id: &str,
    reason: Option<&str>,
    now: DateTime<Utc>,
    prepaid: bool,
) -> Result<(ReplayOutcome, bool), ControlError> {
    let key = key_of(caller, execution_id)?;
    let Some(snap) = ctl.execs.get(&key, true).await? else { return Ok((ReplayOutcome::NotFound, false)) };
    let e = snap.exec;
    let lane = sundial_model::priority::lane_of(&e);
    let from_replay = e.timeline.last().and_then(|ev| ev.code.as_deref()) == Some(REPLAY_CODE);
    if e.status == ExecStatus::Ready && from_replay {
        // At most one re-send per execution per gap: the others are answered alike, unsent.
        if !ctl.execs.take_resend(&key, i64::from(RESEND_GAP_SECS) * 1_000, now).await? {
            return Ok((ReplayOutcome::Resent, false));
        }
        if let Err(err) = admit(ctl, caller, &e.definition.pool, lane, now, prepaid).await {
            if let Err(e2) = ctl.execs.give_back_resend(&key, now).await {
                tracing::warn!(error = %e2, "could not give back a replay's re-send slot");
            }
            return Err(err);
        }
        ctl.ctx.queues.send_all(&e.definition.pool, &[send_of(&e, now)]).await?;
        return Ok((ReplayOutcome::Resent, true));
    }
    if !(e.status == ExecStatus::Dead && e.status.can_move_to(ExecStatus::Ready)) {
        return Ok((ReplayOutcome::NotDead(e.status), false));
    }
    let age_ms = now.timestamp_millis() - key.scheduled_ms;
    if age_ms > i64::from(e.definition.retry.max_age_secs) * 1_000 {
        return Ok((ReplayOutcome::TooOld, false));
    }
    admit(ctl, caller, &e.definition.pool, lane, now, prepaid).await?;
    if !ctl.execs.replay(&key, e.fencing_token, &caller.actor(), REPLAY_CODE, now).await? {
        if !prepaid {
            super::quota::give_back_rate(ctl, &caller.tenant, EXEC, 1, now).await;
        }
        // Someone replayed (or the TTL removed) it between our read and write.
        let now_status = ctl.execs.get(&key, true).await?.map(|s| s.exec.status);
        return Ok((
            match now_status {
                None => ReplayOutcome::NotFound,
                Some(st) => ReplayOutcome::NotDead(st),
            },
            false,
        ));
    }
    ctl.ctx.queues.send_all(&e.definition.pool, &[send_of(&e, now)]).await?;
    let entry = OpsEntry::new(caller.actor(), OpsAction::Replay, &key.job_id, now)
        .versions(None, Some(e.def_version))
        .execution(key.id());
    let entry = match reason {
        Some(r) => entry.detail(r),
        None => entry,
    };
    ops::record(ctl, &caller.tenant, &entry).await?;
    Ok((ReplayOutcome::Replayed, true))
}

/// Admits one replayed message: the pool lane is not saturated, and (unless `prepaid`) the
/// tenant has an `exec` token left this minute.
async fn admit(
    ctl: &Control,
    caller: &Caller,
    pool: &str,
    lane: sundial_model::priority::Lane,
    now: DateTime<Utc>,
    prepaid: bool,
) -> Result<(), ControlError> {
    super::quota::check_saturation(ctl, pool, lane, now).await?;
    if !prepaid {
        take_tokens(ctl, &caller.tenant, 1, now).await?;
    }
    Ok(())
}

/// Longest replay reason (characters), recorded in the operations log.
pub const MAX_REASON_CHARS: usize = 500;

/// Replays up to [`MAX_REPLAY_BATCH`] executions, one outcome each (in order).
pub async fn replay_many(
    ctl: &Control,
    caller: &Caller,
    execution_ids: &[String],
    now: DateTime<Utc>,
) -> Result<Vec<(String, ReplayOutcome)>, ControlError> {
    replay_many_because(ctl, caller, execution_ids, None, now).await
}

/// [`replay_many`] recording the caller's `reason` with each replay.
pub async fn replay_many_because(
    ctl: &Control,
    caller: &Caller,
    execution_ids: &[String],
    reason: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Vec<(String, ReplayOutcome)>, ControlError> {
    if reason.is_some_and(|r| r.chars().count() > MAX_REASON_CHARS) {
        return Err(ControlError::invalid(
            "reason",
            format!("must be at most {MAX_REASON_CHARS} characters"),
        ));
    }
    if execution_ids.is_empty() || execution_ids.len() > MAX_REPLAY_BATCH {
        return Err(ControlError::invalid(
            "executionIds",
            format!("must name 1 to {MAX_REPLAY_BATCH} executions"),
        ));
    }
    for (i, id) in execution_ids.iter().enumerate() {
        key_of(caller, id).map_err(|e| match e {
            ControlError::Invalid(v) => ControlError::invalid(format!("executionIds[{i}]"), v.reason),
            other => other,
        })?;
    }
    // All or nothing against the budget: one token per named execution up front, those that
    // sent nothing given back after.
    let asked = execution_ids.len() as u32;
    take_tokens(ctl, &caller.tenant, asked, now).await?;
    let mut out = Vec::with_capacity(execution_ids.len());
    let mut used = 0;
    for id in execution_ids {
        match replay_metered(ctl, caller, id, reason, now, true).await {
            Ok((outcome, sent)) => {
                used += u32::from(sent);
                out.push((id.clone(), outcome));
            }
            Err(err) => {
                // This one may have sent before failing: count it as used.
                let unused = asked - used - 1;
                if unused > 0 {
                    super::quota::give_back_rate(ctl, &caller.tenant, EXEC, unused, now).await;
                }
                return Err(err);
            }
        }
    }
    if asked > used {
        super::quota::give_back_rate(ctl, &caller.tenant, EXEC, asked - used, now).await;
    }
    Ok(out)
}
