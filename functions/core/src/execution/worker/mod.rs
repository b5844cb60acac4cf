//! The worker core shared by both entry points (the SQS-triggered Lambda and the ECS long-poll
//! binary): one queue message in, one [`Disposition`] out.
//!
//! ```text
//! message ─> read execution ─> policy admission ─> claim (CAS, token+1) ─> run target
//!              (½ RU)            (non-ALLOW only)      (1 WU)               │  heartbeat every lease/3
//!                                                                            │  (extends lease + visibility)
//!            Delete <─ finish (CAS on token, 1 WU) <─ classify / budgets <───┘
//!            waits (policy, tenant limit, retry backoff, early or duplicate delivery): a fresh copy
//!            of the message, delayed, and the delivered one deleted (no receive toward the DLQ)
//! ```
//!
//! Rules that keep a repeated delivery harmless:
//! - Only the worker whose finish succeeded deletes the message. A worker whose finish was
//!   refused (taken over) leaves it alone: deleting with an old receipt handle could delete the
//!   message the new owner depends on.
//! - A message for an execution someone else holds, or that is not yet available, is replaced
//!   by a fresh copy delayed until that changes (lease end, backoff end); it is never dropped
//!   while the execution is not final, and a wait never counts toward the DLQ.
//! - DEAD executions are copied to the pool's DLQ before their message is deleted; a crash in
//!   between is repaired by the next delivery, which finds DEAD and copies again.

//!
//! ## Layout
//! - this file: the [`Worker`] value, its construction, and [`Worker::handle`], which reads one
//!   delivery through the steps below.
//! - `settings`: the timings derived from [`WorkerSettings`] (heartbeat period, visibility).
//! - `admission`: early-delivery hold, the job's concurrency policy, the tenant's running
//!   limit and the job's resource limits, before any claim.
//! - `attempt`: `Holds`, the one value that owns what an attempt holds besides its
//!   lease (tenant gate entry, job slot); every way out of an attempt ends it.
//! - `run`: the claimed attempt: target call, heartbeats, timeout, cancellation, checkpoints.
//! - `fanout`: a sharded or broadcast parent's claim creates its children; a child's final
//!   finish counts on its parent (`docs/children.md`).
//! - `mapreduce`: a map-reduce parent's emits, seal and reduce start; an item's counted
//!   finish (`docs/mapreduce.md`).
//! - `conclusion`: the finish write and what follows it (releases, DLQ copy, disposition).

mod admission;
mod attempt;
mod batch;
mod conclusion;
mod dependencies;
mod fanout;
mod in_flight;
mod mapreduce;
mod notifications;
mod run;
mod settings;

/// The name of the span around the handling of one message; its field `global_id` is the
/// execution's id with its tenant (`{tenant}:{job}@{ms}`), so a log layer can file every line
/// logged inside under the right tenant's execution.
pub const EXECUTION_SPAN: &str = "execution";

use super::clock::{with_skew_probe, Clock, ServiceClock, SkewGuard};
use super::metrics::{ExecMetrics, MetricsSink};
use super::policy::{JobSlots, TenantGate};
use super::resource_limits::ResourceGates;
use super::target::identity::{TenantClients, TenantSessions};
use super::target::in_process::{BoxFuture, Handlers};
use super::target::Remotes;
use crate::aws::Clients;
use crate::config::{Config, WorkerSettings};
use crate::missed::{FireMissed, MissReason, MissReporter};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use sundial_model::claim::LeaseTerms;
use sundial_model::{ConcurrencyPolicy, ExecMessage, ExecStatus, JobDefinition};
use sundial_store::error::StoreError;
use sundial_store::executions::{Claimed, ExecKey, ExecStore, Snapshot};
use sundial_store::queue::{Outgoing, PoolQueues, QueueError, MAX_DELAY_SECS};
use tokio_util::sync::CancellationToken;

/// Whole seconds covering `ms` (SQS visibility and delays have 1 s resolution), capped at
/// SQS's 12-hour visibility limit.
fn secs_ceil(ms: i64) -> i32 {
    (ms.max(0) as f64 / 1000.0).ceil().min(f64::from(sundial_model::limits::SQS_MAX_VISIBILITY_SECS)) as i32
}

/// What to do with a message after handling it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Done with it (final status recorded, or nothing left to do): delete it.
    Delete,
    /// Keep it; make it visible again after this many seconds (SQS `ChangeMessageVisibility`).
    RetryAfter(i32),
    /// Keep it and leave its visibility alone (another worker owns the execution now, or the
    /// store failed transiently).
    Leave,
}

/// Lets the core extend a message's visibility while it works (ECS); a no-op for Lambda,
/// whose event source mapping holds messages for the function's whole timeout.
pub trait MessageControl: Send + Sync {
    /// Makes the message invisible for `secs` more seconds.
    fn extend(&self, secs: i32) -> BoxFuture<'_, ()>;
}

/// A [`MessageControl`] that does nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoExtend;

impl MessageControl for NoExtend {
    fn extend(&self, _secs: i32) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// SHA-256 (first 16 bytes, hex) of the execution's input: parameters and their reference.
pub fn input_digest(def: &JobDefinition) -> String {
    let mut h = Sha256::new();
    h.update(def.params.to_string().as_bytes());
    h.update([0]);
    h.update(def.params_ref.as_deref().unwrap_or_default().as_bytes());
    h.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// One delivery of a queue message, as the steps of [`Worker::handle`] see it.
struct Delivery<'a> {
    /// The pool whose queue delivered it.
    pool: &'a str,
    /// The raw body (copied as is to the DLQ).
    body: &'a str,
    /// The decoded message.
    msg: ExecMessage,
    /// The execution it stands for.
    key: ExecKey,
    /// Visibility extension while the attempt runs.
    msgctl: &'a dyn MessageControl,
    /// Fires on shutdown (SIGTERM, Lambda deadline).
    stop: &'a CancellationToken,
}

/// The worker.
#[derive(Debug)]
pub struct Worker {
    cfg: Config,
    settings: WorkerSettings,
    store: ExecStore,
    slots: JobSlots,
    tenants: TenantGate,
    resources: ResourceGates,
    remote: Arc<Remotes>,
    handlers: Handlers,
    queues: Arc<PoolQueues>,
    clock: Arc<dyn Clock>,
    skew: Arc<SkewGuard>,
    metrics: Arc<dyn MetricsSink>,
    missed: MissReporter,
    /// Outcome events: the bus and, when wired, the pause hook (docs/outcomes.md).
    outcomes: crate::execution::outcome::Outcomes,
    /// Caps on the outcome notifications this process delivers (docs/outcomes.md).
    notify: crate::execution::notify_pool::NotifyPool,
    /// Admissions so far: each one's gate entries are keyed `{worker}.{n}` ([`Worker::admission_id`]).
    admissions: std::sync::atomic::AtomicU64,
    /// The executions this process runs right now (`in_flight`).
    in_flight: in_flight::InFlight,
}

impl Worker {
    /// A worker. `clients.lambda` is the client Lambda *targets* are invoked with.
    pub fn new(
        cfg: Config,
        settings: WorkerSettings,
        clients: &Clients,
        handlers: Handlers,
        clock: Arc<dyn Clock>,
        metrics: Arc<dyn MetricsSink>,
    ) -> std::io::Result<Self> {
        let skew = Arc::new(SkewGuard::new(settings.max_skew_ms));
        // The probe compares the local clock with the service's; everything else reads the
        // service's time (leases, gate entries, availability), so a skewed host neither writes
        // leases that are already over nor judges others' by its own error.
        let ddb = with_skew_probe(&clients.ddb, skew.clone(), clock.clone());
        let clock: Arc<dyn Clock> = Arc::new(ServiceClock::new(clock, skew.clone()));
        let store = ExecStore::new(ddb.clone(), cfg.executions_table.clone());
        let remote = Arc::new(
            Remotes::new(
                TenantSessions::new(TenantClients::of(clients), settings.tenant_roles.clone()),
                cfg.targets.clone(),
            )
            .with_run_names(crate::execution::target::ecs::RunNames::keyed(&settings.run_name_key)),
        );
        // Outcome notifications go out through the same per-tenant webhook clients as targets,
        // on the worker's own pool: a finish hands them over and never waits for a receiver.
        let notifier: Arc<dyn crate::execution::notify::Notifier> =
            Arc::new(crate::execution::notify::HttpNotifier::new(remote.clone(), cfg.clone()));
        let notify = crate::execution::notify_pool::NotifyPool::new(notifier);
        // The worker only resolves URLs, copies dead letters and queues notifications.
        let queues = Arc::new(PoolQueues::new(clients.sqs.clone(), cfg.clone()));
        Ok(Worker {
            missed: MissReporter::new(ddb.clone(), Some(clients.events.clone()), &cfg),
            outcomes: crate::execution::outcome::Outcomes::new(
                store.clone(),
                MissReporter::new(ddb.clone(), Some(clients.events.clone()), &cfg),
                None,
            )
            .with_queues(queues.clone()),
            notify,
            slots: JobSlots::new(store.clone()),
            resources: ResourceGates::new(ddb.clone(), cfg.jobs_table.clone(), cfg.executions_table.clone()),
            tenants: TenantGate::new(ddb, cfg.executions_table.clone()),
            store,
            remote,
            handlers,
            queues,
            clock,
            skew,
            metrics,
            cfg,
            settings,
            admissions: std::sync::atomic::AtomicU64::new(0),
            in_flight: in_flight::InFlight::default(),
        })
    }

    /// This worker, pausing jobs for their dead fires through `pause` (the control plane's,
    /// `control::outcomes::ControlPause`). Without it, a job's auto-pause waits for the
    /// reconciler, which has one.
    pub fn with_auto_pause(mut self, pause: Arc<dyn crate::execution::outcome::AutoPause>) -> Self {
        self.outcomes = self.outcomes.clone().with_pause(pause);
        self
    }

    /// The settings.
    pub fn settings(&self) -> &WorkerSettings {
        &self.settings
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The execution store (fenced writes).
    pub fn store(&self) -> &ExecStore {
        &self.store
    }

    /// The SQS client.
    pub fn sqs(&self) -> &aws_sdk_sqs::Client {
        self.queues.client()
    }

    /// The worker's clock: the local clock it was built with, corrected to the service's time
    /// (see [`ServiceClock`]).
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The latest comparison of this worker's clock with the service's (`Date` header).
    pub fn clock_check(&self) -> Option<super::clock::OffsetBounds> {
        self.skew.last()
    }

    /// Whether this worker's clock may judge other workers' leases.
    pub fn clock_trusted(&self) -> bool {
        self.skew.trusted()
    }

    /// The URL of a pool's queue (resolved once, then cached).
    pub async fn queue_url(&self, pool: &str) -> Result<String, QueueError> {
        self.queues.url(pool).await
    }

    /// The URL of one lane of a pool (the main queue or the low lane, docs/priority.md).
    pub async fn lane_url(
        &self,
        pool: &str,
        lane: sundial_model::priority::Lane,
    ) -> Result<String, QueueError> {
        self.queues.lane_url(pool, lane).await
    }

    /// The pool and lane of a queue ARN or URL (this worker's pool's main queue if it is none
    /// of Sundial's).
    pub fn lane_of_queue(&self, arn_or_url: &str) -> (String, sundial_model::priority::Lane) {
        self.queues
            .lane_of_queue(arn_or_url)
            .unwrap_or_else(|| (self.settings.pool.clone(), sundial_model::priority::Lane::Main))
    }

    /// The pool of a queue ARN or URL (its name minus the configured prefix).
    pub fn pool_of_queue(&self, arn_or_url: &str) -> String {
        self.queues.pool_of_queue(arn_or_url).unwrap_or_else(|| self.settings.pool.clone())
    }

    fn terms(&self) -> LeaseTerms {
        LeaseTerms {
            duration_ms: self.settings.lease_ms,
            skew_margin_ms: self.settings.skew_margin_ms,
            may_take_over: self.skew.trusted(),
        }
    }

    /// A wait (a concurrency policy, the tenant limit, a retry backoff, an early delivery, a
    /// live lease elsewhere): instead of returning the delivered message with a visibility
    /// change, whose every receive counts toward the DLQ's `maxReceiveCount`, send a fresh copy
    /// delayed by `secs` (at most SQS's 15 minutes: an early copy simply waits again) and let
    /// the delivered one be deleted. Waiting never moves a live execution's message to the DLQ.
    /// If the send fails, fall back to the visibility change (the reconciler covers the rest).
    async fn wait(&self, d: &Delivery<'_>, secs: i32) -> Disposition {
        self.requeue(d, d.msg.wait_gen, secs).await
    }

    /// A wait at admission (a concurrency policy, the tenant limit, a resource limit) of READY
    /// `s`: as [`Worker::wait`], and it tells the reconciler, which would otherwise take the
    /// overdue READY execution for a lost delivery and re-send it (a second chain of copies
    /// each time, for as long as the wait lasts). About once a grace, one conditional write moves
    /// its look past the wait and raises its wait generation, and the copy carries the new one:
    /// every older copy then drops itself (`docs/reconciler.md`, "Waiting is not lost").
    ///
    /// The raise is the CAS that lets one of two concurrent waits start a chain; it is pending
    /// until the copy is sent, and only then marked sent ([`ExecStore::note_wait_sent`]): a copy
    /// is stale only below the sent generation. A worker that dies between its raise and its
    /// send (killed, its Lambda timed out, during the SDK's pause between two attempts of the
    /// send) leaves the copy it was handed standing when SQS gives it back, instead of a raise
    /// that makes it drop itself with nothing queued (the full mix's seed 218, K15); a failed
    /// send, likewise, leaves nothing to undo.
    ///
    /// [`ExecStore::note_wait_sent`]: sundial_store::executions::ExecStore::note_wait_sent
    async fn wait_admission(&self, d: &Delivery<'_>, s: &Snapshot, secs: i32) -> Disposition {
        let retry_at = self.clock.now_ms() + i64::from(secs) * 1_000;
        let reported = s.missed_at.is_some() || s.held.is_some();
        let mut raised = None;
        if let Some(at) = sundial_model::reconcile::wait_look(&s.exec, s.open_due, reported, retry_at) {
            match self.store.note_wait(&d.key, s, at).await {
                Ok(g) => raised = g,
                Err(e) => {
                    tracing::warn!(execution = %d.key.id(), error = %e, "could not move a waiting execution's reconciler look; it may be re-sent")
                }
            }
        }
        // `None`: changed since it was read; whoever changed it decides, and this copy goes on.
        let disposition = self.requeue(d, raised.unwrap_or(d.msg.wait_gen), secs).await;
        if let (Some(gen), Disposition::Delete) = (raised, disposition) {
            self.mark_sent(&d.key, gen).await;
        }
        disposition
    }

    /// Marks the copy of wait generation `gen` of `key` sent (see [`Worker::wait_admission`]).
    /// A failure is logged: the older copies then stand beside the new one, two chains the
    /// claim's CAS decides between, until the next wait's mark.
    async fn mark_sent(&self, key: &ExecKey, gen: u64) {
        if let Err(e) = Box::pin(self.store.note_wait_sent(key, gen)).await {
            tracing::warn!(execution = %key.id(), error = %e, "could not mark a wait's copy sent; older copies still stand");
        }
    }

    /// Wakes the first READY fire of `key`'s job scheduled after it and due by now, once `key`
    /// has released the job's slot under `policy` (`SERIALIZE`, `REPLACE`; nothing waits for a
    /// slot otherwise). The waiting fire's own copy looks again only as a backstop
    /// ([`crate::execution::policy::SLOT_WAIT_BACKSTOP_MS`]); this is what starts it, at once. A
    /// new chain: the wait generation is raised with the reconciler's look moved past the wake
    /// (so the older copies drop themselves, and a lost wake is re-sent by the reconciler), then
    /// one copy is sent. A failure is logged, not returned: the backstop and the reconciler
    /// still come.
    pub(super) async fn wake_next(&self, key: &ExecKey, policy: ConcurrencyPolicy) {
        if !matches!(policy, ConcurrencyPolicy::Serialize | ConcurrencyPolicy::Replace) {
            return;
        }
        if let Err(e) = self.try_wake_next(key).await {
            tracing::warn!(execution = %key.id(), error = %e, "could not wake the next fire waiting for the job's slot; its backstop look will");
        }
    }

    async fn try_wake_next(&self, key: &ExecKey) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let now_ms = self.clock.now_ms();
        let Some(next) = self.store.first_pending_between(key, key.scheduled_ms, now_ms + 1).await? else {
            return Ok(());
        };
        let nk = ExecKey { scheduled_ms: next, child: None, ..key.clone() };
        if self.wake_ready(&nk).await? {
            tracing::debug!(execution = %nk.id(), "woke the next fire waiting for the job's slot");
        }
        Ok(())
    }

    /// Sends a fresh copy of the delivered message, generation `gen`, delayed by `secs`. If the
    /// send fails, the delivered copy is returned instead: a raise is marked sent only once its
    /// copy is out ([`Worker::wait_admission`]), so it still stands for the execution.
    async fn requeue(&self, d: &Delivery<'_>, gen: u64, secs: i32) -> Disposition {
        let mut message = d.msg.clone();
        message.wait_gen = gen;
        let fresh = Outgoing { message, delay_secs: secs.clamp(0, MAX_DELAY_SECS as i32) };
        match self.queues.send_all(d.pool, &[fresh]).await {
            Ok(()) => Disposition::Delete,
            Err(e) => {
                tracing::warn!(execution = %d.key.id(), error = %e, "could not re-queue a waiting execution; returning its message instead");
                Disposition::RetryAfter(secs)
            }
        }
    }

    /// A new admission's id, unique among this worker's (and, with the worker id, among all):
    /// the key its gate entries are held under ([`sundial_model::keys::gate_entry`]).
    fn admission_id(&self) -> String {
        let n = self.admissions.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{}.{n}", self.settings.worker_id)
    }

    fn actor(&self) -> String {
        format!("worker:{}", self.settings.worker_id)
    }

    /// Handles one queue message of `pool`. `stop` fires on shutdown (SIGTERM, Lambda deadline):
    /// a running execution is then released for another worker.
    pub async fn handle(
        &self,
        pool: &str,
        body: &str,
        msgctl: &dyn MessageControl,
        stop: &CancellationToken,
    ) -> Disposition {
        crate::access::scope(self.access_scope(pool), self.handle_message(pool, body, msgctl, stop)).await
    }

    /// Whose calls these are, for the IAM recording ([`crate::access`]): the worker of `pool`.
    pub fn access_scope(&self, pool: &str) -> crate::access::Scope {
        crate::access::Scope::new(crate::access::Role::Worker, &self.cfg).pool(pool)
    }

    async fn handle_message(
        &self,
        pool: &str,
        body: &str,
        msgctl: &dyn MessageControl,
        stop: &CancellationToken,
    ) -> Disposition {
        let msg: ExecMessage = match serde_json::from_str(body) {
            Ok(m) => m,
            Err(e) => {
                tracing::error!(pool, error = %e, "message is not an execution message");
                return match self.queues.dead_letter(pool, body, "BadMessage", "").await {
                    Ok(()) => Disposition::Delete,
                    Err(_) => Disposition::Leave,
                };
            }
        };
        let key = ExecKey::of_message(&msg);
        let d = Delivery { pool, body, msg, key, msgctl, stop };
        let mut m = ExecMetrics { pool: pool.to_string(), execution_id: d.key.id(), ..Default::default() };
        // Every line logged while handling this message names the execution with its tenant
        // (the local run keeps each execution's lines for the console: `docs/console.md`).
        let span = tracing::info_span!(EXECUTION_SPAN, global_id = %d.key.global_id());
        let disposition = match tracing::Instrument::instrument(self.deliver(&d, &mut m), span).await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(execution = %d.key.id(), error = %e, retryable = e.is_retryable(), "store error");
                if sundial_mutants::active(sundial_mutants::Mutant::WorkerAcksStoreError) {
                    Disposition::Delete
                } else if e.is_retryable() {
                    Disposition::RetryAfter(2)
                } else {
                    Disposition::Leave
                }
            }
        };
        m.clock_skew = u64::from(!self.skew.trusted());
        self.metrics.record(&m, self.clock.now_ms());
        disposition
    }
}

impl Worker {
    /// A first start that is past its job's start deadline, unreported so far (the
    /// reconciler had not looked yet, or lost to this claim): record the miss once (the
    /// conditional write decides between this worker and any reconciler) and report it. The
    /// run goes on either way: the deadline is an alert, not a budget.
    async fn report_late_start(
        &self,
        key: &ExecKey,
        c: &Claimed,
        now: chrono::DateTime<chrono::Utc>,
        m: &mut ExecMetrics,
    ) {
        let snap = &c.snapshot;
        // The first start only: a reduce's or a replay's claim (attempt 1 again) started late
        // by design.
        if c.from != ExecStatus::Ready
            || !c.fence.is_first_start()
            || snap.missed_at.is_some()
            || snap.held.is_some()
        {
            return;
        }
        let Some(deadline) = sundial_model::reconcile::start_deadline(&snap.exec) else { return };
        let now_ms = now.timestamp_millis();
        if now_ms <= deadline {
            return;
        }
        match self.store.mark_started_late(key, &snap.exec, &self.actor(), now_ms).await {
            Ok(true) => {
                m.fires_missed = 1;
                let report = FireMissed::of(&snap.exec, deadline, now, MissReason::StartedLate);
                if let Err(e) = self.missed.report(&report, &self.actor(), now).await {
                    tracing::error!(execution = %key.id(), error = %e, "start deadline miss recorded but not reported");
                }
            }
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(execution = %key.id(), error = %e, "could not record a late start; this miss goes unreported")
            }
        }
    }
}

/// The job's parsed schedule on the calendar chain it records (the chain loaded into this
/// process's calendar cache first; the schedule itself is parsed, not cached: a worker sees each
/// job's first claims only): what "does the job still fire at this instant" is asked of. `None`
/// when it cannot be evaluated (a recorded calendar version no longer loadable, a schedule that
/// no longer parses).
async fn job_schedule(
    w: &Worker,
    job: &sundial_model::Job,
) -> Result<Option<sundial_schedule::Schedule>, StoreError> {
    match crate::schedules::calendars::ensure(w.store.client(), &w.cfg.jobs_table, job).await {
        Ok(()) => {}
        Err(crate::schedules::calendars::LoadError::Store(e)) => return Err(e),
        Err(e @ crate::schedules::calendars::LoadError::Missing { .. }) => {
            tracing::warn!(job = %job.job_id, error = %e, "the job's calendar chain cannot be loaded: its schedule is not checked before the claim");
            return Ok(None);
        }
    }
    let business = match job.calendar_versions.as_slice() {
        [] => None,
        chain => crate::schedules::calendars::cached(&job.tenant, chain),
    };
    Ok(sundial_schedule::Schedule::parse_with(&job.definition.schedule, job.anchor, business).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_input_digest_depends_on_params_only() {
        let mut def: JobDefinition = serde_json::from_value(serde_json::json!({
            "schedule": {"expression": "rate(1 minute)", "timezone": "UTC"},
            "target": {"type": "http", "url": "https://x"}, "params": {"a": 1}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let d1 = input_digest(&def);
        assert_eq!(d1.len(), 32);
        def.timeout_secs = 5;
        assert_eq!(input_digest(&def), d1);
        def.params = serde_json::json!({"a": 2});
        assert_ne!(input_digest(&def), d1);
    }
}
