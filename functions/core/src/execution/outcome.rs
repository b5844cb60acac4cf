//! Per-job outcome events (docs/outcomes.md): which events a finish makes due, and the flush
//! that sends an execution's outbox.
//!
//! ```text
//! finish write (fenced)   st = …, ADD ob {entries}       one write: the transition and its events
//! flush (worker, at once) for each entry:
//!                           ExecutionDead   → ADD ds {execution} on the job's OUTCOMES item;
//!                                             at autoPauseAfterDeadFires: claim apb, ADD ob {JobAutoPaused}
//!                           JobAutoPaused   → pause the job (actor auto-pause:{execution}), idempotent
//!                           JobRecovered    → claim rby (REMOVE ds); lost the claim: nothing to send
//!                           PutEvents (detail.eventId = {tenant}/{execution}/{entry})
//!                           DELETE ob {entry}
//! crash anywhere          → the entry stays: the next worker to claim the execution, or the
//!                           reconciler (a final execution with entries stays in the `open`
//!                           index, due a grace after its finish), flushes it
//! ```
//!
//! So an event is never lost once its transition is written, and each is sent once per
//! (execution, transition): a flush that crashes between its PutEvents and its DELETE sends
//! that one event again on the retry, with the same `eventId`.

use crate::missed::{MissReporter, ReportError};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use std::sync::Arc;
use sundial_model::claim::Finish;
use sundial_model::outcome::{
    event_id, members, NotifyEntry, NotifyMessage, OutboxEntry, OutcomeKind, MAX_NOTIFY_FAILURES,
};
use sundial_model::retry::{ErrorClass, RunError};
use sundial_model::{ExecStatus, Execution};
use sundial_store::executions::{ExecKey, ExecStore};
use sundial_store::StoreError;

/// A boxed future (the [`AutoPause`] hook is a trait object): the handlers' own.
pub use super::target::in_process::BoxFuture;

/// Pauses a job for its dead fires: the control plane's pause (`control::outcomes`), injected
/// by the entry points, since the execution plane sits below the control plane.
pub trait AutoPause: Send + Sync + std::fmt::Debug {
    /// Pauses `job_id` of `tenant` as the actor `auto-pause:{execution_id}`; a job already
    /// paused (by this or anything else) or deleted is left as it is.
    fn pause<'a>(
        &'a self,
        tenant: &'a str,
        job_id: &'a str,
        execution_id: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<(), OutcomeError>>;
}

/// An outbox flush stopped: the entries not sent stay for the next flush.
#[derive(Debug, thiserror::Error)]
pub enum OutcomeError {
    /// A DynamoDB read or write failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The bus refused or failed the event.
    #[error(transparent)]
    Events(#[from] ReportError),
    /// The pause failed (its message).
    #[error("auto-pause: {0}")]
    Pause(String),
    /// This process cannot pause jobs (no [`AutoPause`] wired): the reconciler will.
    #[error("auto-pause: this process has no pause hook; the reconciler pauses the job")]
    NoPause,
}

impl OutcomeError {
    /// Whether a later flush may succeed (every case but a bus that refuses the event).
    pub fn is_retryable(&self) -> bool {
        match self {
            OutcomeError::Store(e) => e.is_retryable(),
            OutcomeError::Events(e) => e.is_retryable(),
            OutcomeError::Pause(_) | OutcomeError::NoPause => true,
        }
    }
}

/// The `detail` of an outcome event (docs/outcomes.md, "Events").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutcomeEvent {
    /// The same for every send of one event: `{tenant}/{executionId}/{entry}`.
    pub event_id: String,
    /// The job's tenant.
    pub tenant: String,
    /// The job.
    pub job_id: String,
    /// The execution (`{jobId}@{scheduled ms}`).
    pub execution_id: String,
    /// The fire's scheduled instant (RFC 3339, ms).
    pub scheduled_at: String,
    /// The attempt the transition ended.
    pub attempt: u32,
    /// The execution's status the transition wrote (`SUCCEEDED`, `RETRY_WAIT`, `FAILED`,
    /// `DEAD`).
    pub status: String,
    /// The error's class (`retryable`, `permanent`), for a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_class: Option<String>,
    /// The error's code (`Http503`, `Timeout`, ...), for a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// `ExecutionDead` and `JobAutoPaused`: dead fires in a row so far; `JobRecovered`: how
    /// many the success ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead_fires: Option<usize>,
    /// `FinishDeadlineMissed`: the instant by which it should have finished (RFC 3339, ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<String>,
    /// The worker pool.
    pub pool: String,
    /// The definition version the fire ran under.
    pub def_version: u64,
}

/// Whether `e`'s job tracks its dead fires in a row (`JobRecovered`, the auto-pause, `deadFires`):
/// only a job that asks, with `outcomeEvents` (even `{}`) or `autoPauseAfterDeadFires`. Others
/// spend nothing on a success and keep no streak.
pub fn tracks_streak(e: &Execution) -> bool {
    e.definition.outcome_events.is_some() || e.definition.auto_pause_after_dead_fires.is_some()
}

/// The entries a top-level execution's finish makes due (none for a child, a cancel, or a
/// success nobody asked about). `recovering`: the job had dead fires before this success.
pub fn due_on_finish(e: &Execution, fin: &Finish, attempt: u32, recovering: bool) -> Vec<OutboxEntry> {
    if e.child.is_some() {
        return Vec::new();
    }
    let class = |c: ErrorClass| match c {
        ErrorClass::Retryable => "retryable".to_string(),
        ErrorClass::Permanent => "permanent".to_string(),
    };
    let with = |kind, err: &sundial_model::retry::RunError| OutboxEntry {
        kind,
        attempt,
        error_class: Some(class(err.class)),
        error_code: Some(err.code.replace('#', "_")),
    };
    match fin {
        Finish::Succeeded => {
            let mut out = Vec::new();
            if e.definition.outcome_events.as_ref().is_some_and(|o| o.succeeded) {
                out.push(OutboxEntry::new(OutcomeKind::ExecutionSucceeded, attempt));
            }
            if recovering {
                out.push(OutboxEntry::new(OutcomeKind::JobRecovered, attempt));
            }
            out
        }
        Finish::RetryWait { error, .. } => vec![with(OutcomeKind::ExecutionFailed, error)],
        Finish::Failed { .. } | Finish::Dead { .. }
            if sundial_mutants::active(sundial_mutants::Mutant::OutcomeDeadDropped) =>
        {
            Vec::new()
        }
        Finish::Failed { error } | Finish::Dead { error, .. } => {
            vec![with(OutcomeKind::ExecutionDead, error)]
        }
        Finish::Canceled => Vec::new(),
    }
}

/// Sends outboxes: the bus (through the start-deadline reporter's client) and the pause hook.
#[derive(Clone)]
pub struct Outcomes {
    store: ExecStore,
    bus: MissReporter,
    pause: Option<Arc<dyn AutoPause>>,
    queues: Option<Arc<sundial_store::queue::PoolQueues>>,
}

impl std::fmt::Debug for Outcomes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outcomes")
            .field("bus", &self.bus.bus())
            .field("pause", &self.pause.is_some())
            .field("notify_queues", &self.queues.is_some())
            .finish()
    }
}

/// What one flush did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flushed {
    /// Events put on the bus.
    pub sent: Vec<OutcomeKind>,
    /// Entries done without an event (a recovery another success claimed; no bus).
    pub dropped: usize,
    /// HTTPS notifications (`outcomeNotify`) moved to their pool's notification queue, whose
    /// consumer delivers them (docs/outcomes.md).
    pub notify_queued: Vec<OutcomeKind>,
    /// Notifications that could not be queued this time (or, in a process without the queues,
    /// counted a failed delivery) and stay in the outbox for the next flush.
    pub notify_failed: usize,
    /// Notifications given up after [`MAX_NOTIFY_FAILURES`] failures (a timeline note each).
    pub notify_given_up: usize,
}

impl Outcomes {
    /// A flusher writing through `store`, sending through `bus`, pausing through `pause`.
    pub fn new(store: ExecStore, bus: MissReporter, pause: Option<Arc<dyn AutoPause>>) -> Self {
        Outcomes { store, bus, pause, queues: None }
    }

    /// This flusher, pausing jobs through `pause`.
    pub fn with_pause(mut self, pause: Arc<dyn AutoPause>) -> Self {
        self.pause = Some(pause);
        self
    }

    /// This flusher, moving `outcomeNotify` notifications to their pool's notification queue
    /// through `queues` (the flush never calls a receiver). Without them, each pending
    /// notification counts a failed delivery (so it is given up, not kept forever).
    pub fn with_queues(mut self, queues: Arc<sundial_store::queue::PoolQueues>) -> Self {
        self.queues = Some(queues);
        self
    }

    /// Whether this flusher can pause jobs.
    pub fn can_pause(&self) -> bool {
        self.pause.is_some()
    }

    /// Sends `entries` (encoded) of execution `e` whose transition wrote `status`, in order,
    /// deleting each from the outbox once it is done. Stops at the first failure: the rest
    /// stay for the next flush. `held`: the caller's own write holds the outbox (the finish
    /// that wrote them); otherwise the outbox is claimed first, and a flush someone else holds
    /// sends nothing.
    pub async fn flush(
        &self,
        e: &Execution,
        status: ExecStatus,
        entries: &[String],
        held: bool,
        now: DateTime<Utc>,
    ) -> Result<Flushed, OutcomeError> {
        let key = ExecKey::of(e);
        if !held && !self.store.claim_outbox(&key, now.timestamp_millis()).await? {
            return Ok(Flushed::default());
        }
        let r = self.send_all(e, &key, status, entries, now).await;
        if r.as_ref().map_or(true, |f| f.notify_failed > 0) {
            // Whoever comes next (a claim, the reconciler) need not wait for the lease.
            if let Err(err) = self.store.release_outbox(&key).await {
                tracing::warn!(execution = %e.id(), error = %err, "outbox lease kept until it runs out");
            }
        }
        r
    }

    async fn send_all(
        &self,
        e: &Execution,
        key: &ExecKey,
        status: ExecStatus,
        entries: &[String],
        now: DateTime<Utc>,
    ) -> Result<Flushed, OutcomeError> {
        let key = key.clone();
        let mut queue: Vec<OutboxEntry> = entries.iter().filter_map(|s| OutboxEntry::parse(s)).collect();
        let mut twins: Vec<NotifyEntry> = entries.iter().filter_map(|s| NotifyEntry::parse(s)).collect();
        let notifies = e.definition.outcome_notify.is_some();
        // Unknown entries (a newer version's) are left alone; job-level ones go last.
        queue.sort_by_key(|x| x.kind == OutcomeKind::JobAutoPaused);
        let mut done = Flushed::default();
        let mut i = 0;
        while i < queue.len() {
            let entry = queue[i].clone();
            i += 1;
            let mut dead_fires = None;
            let send = match entry.kind {
                OutcomeKind::ExecutionDead if !tracks_streak(e) => true,
                OutcomeKind::ExecutionDead => {
                    let d = self.store.add_dead_fire(&e.tenant, &e.job_id, &e.id()).await?;
                    dead_fires = Some(d.in_a_row);
                    let threshold = e.definition.auto_pause_after_dead_fires;
                    if threshold.is_some_and(|n| d.in_a_row >= n as usize)
                        && d.auto_paused_by.as_deref().is_none_or(|by| by == e.id())
                        && self.store.claim_auto_pause(&e.tenant, &e.job_id, &e.id()).await?
                    {
                        let paused = OutboxEntry::new(OutcomeKind::JobAutoPaused, entry.attempt);
                        self.store
                            .outbox_add(&key, &members(std::slice::from_ref(&paused), notifies))
                            .await?;
                        if notifies && !twins.iter().any(|t| t.entry == paused) {
                            twins.push(NotifyEntry::of(&paused));
                        }
                        if !queue.contains(&paused) {
                            queue.push(paused);
                        }
                    }
                    true
                }
                OutcomeKind::JobAutoPaused => {
                    dead_fires = self.auto_pause(e, now).await?;
                    dead_fires.is_some()
                }
                OutcomeKind::JobRecovered => {
                    match self.store.claim_recovery(&e.tenant, &e.job_id, &e.id()).await? {
                        Some(r) => {
                            dead_fires = Some(r.after);
                            true
                        }
                        None => false,
                    }
                }
                OutcomeKind::ExecutionSucceeded
                | OutcomeKind::ExecutionFailed
                | OutcomeKind::FinishDeadlineMissed => true,
            };
            let detail = event_detail(e, &entry, status, dead_fires);
            let put = send && {
                let json = serde_json::to_string(&detail).unwrap_or_else(|_| "{}".into());
                self.bus.put_event(entry.kind.as_str(), json, now).await?
            };
            if put {
                done.sent.push(entry.kind);
                tracing::info!(execution = %e.id(), event = entry.kind.as_str(), "outcome event sent");
            } else {
                done.dropped += 1;
            }
            // Its notification goes whenever the event is due, bus or no bus.
            self.bus_done(&key, &entry, send, dead_fires, &mut twins).await?;
        }
        for group in same_event(twins) {
            self.notify_one(e, &key, status, &group, now, &mut done).await?;
        }
        Ok(done)
    }

    /// Pauses `e`'s job for its dead fires: the dead fires in a row it paused for, or `None`
    /// when the streak that claimed the pause is over (an owner's resume reset it), so a flush
    /// retried after the resume does not pause the job again (protocol review N3).
    async fn auto_pause(&self, e: &Execution, now: DateTime<Utc>) -> Result<Option<usize>, OutcomeError> {
        let Some(p) = &self.pause else { return Err(OutcomeError::NoPause) };
        if self.store.auto_paused_by(&e.tenant, &e.job_id).await?.as_deref() != Some(&e.id()) {
            tracing::info!(execution = %e.id(), "auto-pause dropped: the job was resumed since its streak claimed it");
            return Ok(None);
        }
        p.pause(&e.tenant, &e.job_id, &e.id(), now).await?;
        Ok(Some(self.store.dead_in_a_row(&e.tenant, &e.job_id).await?))
    }

    /// Deletes a done bus entry: `due` when its event was due (sent, or no bus to send it to),
    /// false when it was not (a recovery another success claimed). Its notification twins go
    /// with one not due; a due one's twin is rewritten first with the event's `deadFires` (only
    /// this flush knows it), so the notification tells what the bus event told.
    async fn bus_done(
        &self,
        key: &ExecKey,
        entry: &OutboxEntry,
        due: bool,
        dead_fires: Option<usize>,
        twins: &mut Vec<NotifyEntry>,
    ) -> Result<(), OutcomeError> {
        let mine: Vec<NotifyEntry> = twins.iter().filter(|t| &t.entry == entry).cloned().collect();
        let mut gone = vec![entry.encode()];
        if !due {
            gone.extend(mine.iter().map(NotifyEntry::encode));
            twins.retain(|t| &t.entry != entry);
        } else if dead_fires.is_some() && !mine.is_empty() && mine.iter().all(|t| t.dead_fires != dead_fires)
        {
            let failures = mine.iter().map(|t| t.failures).max().unwrap_or(0);
            let told = NotifyEntry { entry: entry.clone(), failures, dead_fires };
            gone.extend(mine.iter().map(NotifyEntry::encode));
            self.store.outbox_replace(key, &[told.encode()], &gone).await?;
            twins.retain(|t| &t.entry != entry);
            twins.push(told);
            return Ok(());
        }
        self.store.outbox_sent(key, &gone).await?;
        Ok(())
    }

    /// Moves one event's notification (`group`: its twins, more than one only after a crash
    /// between a rewrite's two writes) to its pool's notification queue, then deletes the twins:
    /// the queue's consumer delivers it ([`crate::execution::worker::Worker::deliver_notification`]).
    /// A crash between the two sends it again with the same `webhook-id`. Never a wait for the
    /// receiver: a dead receiver holds back nothing.
    async fn notify_one(
        &self,
        e: &Execution,
        key: &ExecKey,
        status: ExecStatus,
        group: &[NotifyEntry],
        now: DateTime<Utc>,
        done: &mut Flushed,
    ) -> Result<(), OutcomeError> {
        let Some(best) = group.iter().max_by_key(|t| (t.failures, t.dead_fires.is_some())) else {
            return Ok(());
        };
        let all: Vec<String> = group.iter().map(NotifyEntry::encode).collect();
        let (queues, to) = match (&self.queues, &e.definition.outcome_notify) {
            // A definition without a receiver has nothing to deliver.
            (_, None) => {
                done.count(record(&self.store, e, key, best, &all, Ok(()), now).await?);
                return Ok(());
            }
            (None, _) => {
                let err = RunError::retryable("NoNotifier", "this process cannot deliver notifications");
                done.count(record(&self.store, e, key, best, &all, Err(err), now).await?);
                return Ok(());
            }
            (Some(q), Some(to)) => (q, to.clone()),
        };
        let detail = event_detail(e, &best.entry, status, best.dead_fires);
        let mut body = serde_json::to_value(&detail).unwrap_or_default();
        body["detailType"] = best.entry.kind.as_str().into();
        let msg = NotifyMessage {
            tenant: e.tenant.clone(),
            job_id: e.job_id.clone(),
            scheduled_ms: key.scheduled_ms,
            kind: best.entry.kind,
            event_id: detail.event_id,
            to,
            body: body.to_string(),
            failures: best.failures,
        };
        match queues.send_notify(&e.definition.pool, &msg, 0).await {
            Ok(()) => {
                self.store.outbox_sent(key, &all).await?;
                done.notify_queued.push(best.entry.kind);
            }
            Err(err) => {
                tracing::warn!(execution = %e.id(), event = best.entry.kind.as_str(), error = %err, "outcome notification not queued; the next flush queues it");
                done.notify_failed += 1;
            }
        }
        Ok(())
    }
}

impl Flushed {
    fn count(&mut self, r: Recorded) {
        match r {
            Recorded::Delivered(kind) => self.notify_queued.push(kind),
            Recorded::Failed => self.notify_failed += 1,
            Recorded::GivenUp => self.notify_given_up += 1,
        }
    }
}

/// What one delivery's result did to the outbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recorded {
    Delivered(OutcomeKind),
    Failed,
    GivenUp,
}

/// Writes one notification's result back. Accepted: its twins (`all`) are deleted. Failed:
/// rewritten with one failure more for the next flush, or given up (with a timeline note) at
/// [`MAX_NOTIFY_FAILURES`].
async fn record(
    store: &ExecStore,
    e: &Execution,
    key: &ExecKey,
    best: &NotifyEntry,
    all: &[String],
    r: Result<(), RunError>,
    now: DateTime<Utc>,
) -> Result<Recorded, OutcomeError> {
    let kind = best.entry.kind.as_str();
    Ok(match r {
        Ok(()) => {
            store.outbox_sent(key, all).await?;
            tracing::info!(execution = %e.id(), event = kind, "outcome notification delivered");
            Recorded::Delivered(best.entry.kind)
        }
        Err(err) if best.failures + 1 >= MAX_NOTIFY_FAILURES => {
            tracing::warn!(execution = %e.id(), event = kind, code = %err.code, error = %err.message, "outcome notification given up");
            let code = sundial_model::retry::codes::OUTCOME_NOTIFY_ABANDONED;
            let actor = format!("notify:{kind}");
            store.outbox_give_up(key, e, all, &actor, code, now.timestamp_millis()).await?;
            Recorded::GivenUp
        }
        Err(err) => {
            tracing::warn!(execution = %e.id(), event = kind, code = %err.code, error = %err.message, "outcome notification failed; the next flush retries it");
            let next = NotifyEntry { failures: best.failures + 1, ..best.clone() };
            store.outbox_replace(key, &[next.encode()], all).await?;
            Recorded::Failed
        }
    })
}

/// Twins grouped by the event they deliver.
fn same_event(mut twins: Vec<NotifyEntry>) -> Vec<Vec<NotifyEntry>> {
    twins.sort();
    let mut out: Vec<Vec<NotifyEntry>> = Vec::new();
    for t in twins {
        match out.last_mut() {
            Some(g) if g[0].entry == t.entry => g.push(t),
            _ => out.push(vec![t]),
        }
    }
    out
}

/// The `detail` of `entry`'s event for `e`, whose transition wrote `status`.
fn event_detail(
    e: &Execution,
    entry: &OutboxEntry,
    status: ExecStatus,
    dead_fires: Option<usize>,
) -> OutcomeEvent {
    let status = match entry.kind {
        OutcomeKind::ExecutionFailed => ExecStatus::RetryWait,
        OutcomeKind::ExecutionSucceeded | OutcomeKind::JobRecovered => ExecStatus::Succeeded,
        _ => status,
    };
    OutcomeEvent {
        event_id: event_id(&e.tenant, &e.id(), entry),
        tenant: e.tenant.clone(),
        job_id: e.job_id.clone(),
        execution_id: e.id(),
        scheduled_at: e.scheduled_at.to_rfc3339_opts(SecondsFormat::Millis, true),
        attempt: entry.attempt,
        status: status.as_str().to_string(),
        error_class: entry.error_class.clone(),
        error_code: entry.error_code.clone(),
        dead_fires,
        deadline: (entry.kind == OutcomeKind::FinishDeadlineMissed)
            .then(|| sundial_model::reconcile::finish_deadline(e))
            .flatten()
            .map(|d| sundial_store::items::ms_to_dt(d).to_rfc3339_opts(SecondsFormat::Millis, true)),
        pool: e.definition.pool.clone(),
        def_version: e.def_version,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(def: serde_json::Value) -> Execution {
        let definition: sundial_model::JobDefinition =
            serde_json::from_value(def).unwrap_or_else(|e| panic!("{e}"));
        let at = sundial_store::items::ms_to_dt(1_764_579_600_000);
        Execution {
            tenant: "acme".into(),
            job_id: "nightly".into(),
            scheduled_at: at,
            fire_at: at,
            created_at: at,
            status: ExecStatus::Running,
            attempt: 1,
            fencing_token: 1,
            lease_owner: None,
            lease_until: None,
            available_at: at.timestamp_millis(),
            def_version: 1,
            definition,
            missed_range: None,
            missed_except: Vec::new(),
            last_error: None,
            cancel_requested: false,
            timeline: vec![],
            child: None,
            children: None,
            map_reduce: None,
        }
    }

    #[test]
    fn a_finish_makes_due_what_the_job_asks_for_and_a_child_nothing() {
        let base = serde_json::json!({
            "schedule": {"expression": "rate(1 minute)", "timezone": "UTC"},
            "target": {"type": "http", "url": "https://x"}
        });
        let e = exec(base.clone());
        let err = RunError::retryable("Http503", "busy");
        let kinds = |v: Vec<OutboxEntry>| v.into_iter().map(|x| x.encode()).collect::<Vec<_>>();
        assert!(
            due_on_finish(&e, &Finish::Succeeded, 1, false).is_empty(),
            "a success is silent unless asked"
        );
        assert_eq!(kinds(due_on_finish(&e, &Finish::Succeeded, 2, true)), ["JobRecovered#2##"]);
        let retry = Finish::RetryWait { available_at: 0, error: err.clone(), total_run_ms: 0 };
        assert_eq!(kinds(due_on_finish(&e, &retry, 1, false)), ["ExecutionFailed#1#retryable#Http503"]);
        let dead =
            Finish::Dead { reason: "AttemptsExhausted".into(), error: err.clone(), digest: "d".into() };
        assert_eq!(kinds(due_on_finish(&e, &dead, 3, false)), ["ExecutionDead#3#retryable#Http503"]);
        let failed = Finish::Failed { error: RunError::permanent("Http400", "no") };
        assert_eq!(kinds(due_on_finish(&e, &failed, 1, false)), ["ExecutionDead#1#permanent#Http400"]);
        assert!(due_on_finish(&e, &Finish::Canceled, 1, true).is_empty());
        let mut asked = base;
        asked["outcomeEvents"] = serde_json::json!({"succeeded": true});
        let e = exec(asked);
        assert_eq!(
            kinds(due_on_finish(&e, &Finish::Succeeded, 1, true)),
            ["ExecutionSucceeded#1##", "JobRecovered#1##"]
        );
        let mut child = e.clone();
        child.child = Some(sundial_model::children::ChildKey::Shard(0));
        assert!(due_on_finish(&child, &dead, 3, false).is_empty(), "a child's parent speaks for the fire");
    }
}
