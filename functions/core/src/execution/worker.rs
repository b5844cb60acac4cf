//! The worker core shared by both entry points (the SQS-triggered Lambda and the ECS long-poll
//! binary): one queue message in, one [`Disposition`] out.
//!
//! ```text
//! message ─> read execution ─> policy admission ─> claim (CAS, token+1) ─> run target
//!              (½ RU)            (non-ALLOW only)      (1 WU)               │  heartbeat every lease/3
//!                                                                            │  (extends lease + visibility)
//!            Delete <─ finish (CAS on token, 1 WU) <─ classify / budgets <───┘
//!            Retry{after} = RETRY_WAIT's backoff, carried by the *same* message's visibility
//! ```
//!
//! Rules that keep a repeated delivery harmless:
//! - Only the worker whose finish succeeded deletes the message. A worker whose finish was
//!   refused (taken over) leaves it alone: deleting with an old receipt handle could delete the
//!   message the new owner depends on.
//! - A message for an execution someone else holds, or that is not yet available, is made
//!   visible again when that changes (lease end, backoff end); it is never dropped while the
//!   execution is not final.
//! - DEAD executions are copied to the pool's DLQ before their message is deleted; a crash in
//!   between is repaired by the next delivery, which finds DEAD and copies again.

use super::claim::{next_step, Fence, Finish, LeaseTerms, Step};
use super::clock::{with_skew_probe, Clock, SkewGuard};
use super::metrics::{ExecMetrics, MetricsSink};
use super::policy::{Admission, JobSlots, TenantGate, TenantLimits};
use super::retry::{after_failure, codes, jitter_unit, Budget, Progress, RunError, Verdict};
use super::target::http::HttpTarget;
use super::target::in_process::{BoxFuture, Checkpointer, HandlerContext, Handlers};
use super::target::lambda::LambdaTarget;
use super::target::sqs::SqsTarget;
use super::target::{Invocation, RemoteTargets};
use crate::aws::Clients;
use crate::config::{Config, ConfigError};
use crate::model::{ExecMessage, ExecStatus, Execution, JobDefinition, Target};
use crate::resources::Resources;
use crate::store::executions::{
    CheckpointError, ClaimOutcome, Claimed, ExecKey, ExecStore, FinishResult, Heartbeat,
};
use aws_sdk_sqs::types::MessageAttributeValue;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Env variables of the worker's own settings (all optional; defaults in [`WorkerSettings::new`]).
/// The CDK construct sets the ones it wants to tune (`infra/lib/sundial-scheduler.ts`).
pub mod env {
    /// Worker id written as lease owner (default: host name + pid + start time).
    pub const WORKER_ID: &str = "SUNDIAL_WORKER_ID";
    /// Lease length in seconds (default 30).
    pub const LEASE_SECS: &str = "SUNDIAL_LEASE_SECS";
    /// Extra time after a lease's end before another worker may take it over (default 2000).
    pub const SKEW_MARGIN_MS: &str = "SUNDIAL_SKEW_MARGIN_MS";
    /// Per-tenant running limits: `5` or `5,acme=10` (default: none).
    pub const TENANT_MAX_RUNNING: &str = "SUNDIAL_TENANT_MAX_RUNNING";
    /// Total run time budget across attempts, seconds (default: maxAttempts × timeoutSecs).
    pub const MAX_TOTAL_RUN_SECS: &str = "SUNDIAL_MAX_TOTAL_RUN_SECS";
    /// Concurrent executions of one ECS worker (default 8).
    pub const SLOTS: &str = "SUNDIAL_WORKER_SLOTS";
    /// Seconds an ECS worker keeps finishing work after SIGTERM before it releases (default 25).
    pub const SHUTDOWN_GRACE_SECS: &str = "SUNDIAL_SHUTDOWN_GRACE_SECS";
}

/// How a worker behaves (beyond [`Config`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerSettings {
    /// Lease owner id (unique per process).
    pub worker_id: String,
    /// The pool this worker serves (ECS) or the default pool of messages (Lambda).
    pub pool: String,
    /// Lease length (ms). Heartbeats every third of it.
    pub lease_ms: i64,
    /// See [`LeaseTerms::skew_margin_ms`].
    pub skew_margin_ms: i64,
    /// Largest tolerated distance between this worker's clock and the service's (ms).
    pub max_skew_ms: i64,
    /// A message that arrives up to this early (SQS delays have 1 s resolution) is held until
    /// its execution is available instead of being returned to the queue (ms).
    pub early_hold_ms: i64,
    /// Whether webhooks may target loopback, link-local and private addresses.
    pub allow_private_targets: bool,
    /// Run-time budget across attempts (ms), if set.
    pub max_total_run_ms: Option<i64>,
    /// Per-tenant running limits.
    pub tenant_limits: TenantLimits,
    /// How long a handler may take to stop after its cancellation token fires (ms).
    pub cancel_grace_ms: i64,
}

impl WorkerSettings {
    /// Defaults: 30 s lease, 2 s skew margin, 1 s tolerated skew.
    pub fn new(worker_id: impl Into<String>, pool: impl Into<String>) -> Self {
        WorkerSettings {
            worker_id: worker_id.into(),
            pool: pool.into(),
            lease_ms: 30_000,
            skew_margin_ms: 2_000,
            max_skew_ms: 1_000,
            early_hold_ms: 1_500,
            allow_private_targets: false,
            max_total_run_ms: None,
            tenant_limits: TenantLimits::default(),
            cancel_grace_ms: 2_000,
        }
    }

    /// Reads the settings from the environment (the pool from `SUNDIAL_POOL`, else `default`).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// [`WorkerSettings::from_env`] with an injected lookup.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let r = Resources::get();
        let pool = get(&r.env.pool).filter(|p| !p.is_empty()).unwrap_or_else(|| "default".into());
        let id = get(env::WORKER_ID).filter(|v| !v.is_empty()).unwrap_or_else(default_worker_id);
        let mut s = WorkerSettings::new(id, pool);
        let int = |name: &str, lo: i64, hi: i64| -> Result<Option<i64>, ConfigError> {
            match get(name).filter(|v| !v.is_empty()) {
                None => Ok(None),
                Some(v) => {
                    v.parse::<i64>().ok().filter(|x| (lo..=hi).contains(x)).map(Some).ok_or_else(|| {
                        ConfigError::Invalid {
                            name: name.into(),
                            reason: format!("{v:?} is not an integer in {lo}..={hi}"),
                        }
                    })
                }
            }
        };
        if let Some(v) = int(env::LEASE_SECS, 2, 43_200)? {
            s.lease_ms = v * 1000;
        }
        if let Some(v) = int(env::SKEW_MARGIN_MS, 0, 60_000)? {
            s.skew_margin_ms = v;
            s.max_skew_ms = (v / 2).max(1_000);
        }
        if let Some(v) = int(env::MAX_TOTAL_RUN_SECS, 1, 10_000_000)? {
            s.max_total_run_ms = Some(v * 1000);
        }
        if let Some(v) = get(env::TENANT_MAX_RUNNING) {
            s.tenant_limits = TenantLimits::parse(&v)
                .map_err(|reason| ConfigError::Invalid { name: env::TENANT_MAX_RUNNING.into(), reason })?;
        }
        s.allow_private_targets = matches!(
            get(&r.env.allow_private_targets).as_deref().map(str::to_ascii_lowercase).as_deref(),
            Some("true" | "1" | "yes")
        );
        Ok(s)
    }

    fn heartbeat_every(&self) -> Duration {
        Duration::from_millis((self.lease_ms / 3).max(200) as u64)
    }

    /// The visibility timeout (s) that covers one lease plus the takeover margin.
    pub fn visibility_secs(&self) -> i32 {
        secs_ceil(self.lease_ms + self.skew_margin_ms).max(1)
    }
}

fn default_worker_id() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok().map(|h| h.trim().to_string()))
        .unwrap_or_else(|| "worker".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{host}-{}-{nanos:x}", std::process::id())
}

fn secs_ceil(ms: i64) -> i32 {
    (ms.max(0) as f64 / 1000.0).ceil().min(43_200.0) as i32
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

/// Why a run stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// A cancel was requested (user, REPLACE).
    Cancelled,
    /// The lease was taken over: publish nothing.
    Lost,
    /// The job's run timeout.
    Timeout,
    /// The worker is shutting down (SIGTERM, Lambda deadline): release the lease.
    Shutdown,
}

/// SHA-256 (first 16 bytes, hex) of the execution's input: parameters and their reference.
pub fn input_digest(def: &JobDefinition) -> String {
    let mut h = Sha256::new();
    h.update(def.params.to_string().as_bytes());
    h.update([0]);
    h.update(def.params_ref.as_deref().unwrap_or_default().as_bytes());
    h.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// The worker.
#[derive(Debug)]
pub struct Worker {
    cfg: Config,
    settings: WorkerSettings,
    store: ExecStore,
    slots: JobSlots,
    tenants: TenantGate,
    remote: RemoteTargets,
    handlers: Handlers,
    sqs: aws_sdk_sqs::Client,
    clock: Arc<dyn Clock>,
    skew: Arc<SkewGuard>,
    metrics: Arc<dyn MetricsSink>,
    urls: tokio::sync::Mutex<HashMap<String, String>>,
}

struct FencedCheckpointer {
    store: ExecStore,
    key: ExecKey,
    fence: Fence,
    lease_ms: i64,
    clock: Arc<dyn Clock>,
    rejected: Arc<Mutex<u64>>,
}

impl Checkpointer for FencedCheckpointer {
    fn save(&self, state: serde_json::Value) -> BoxFuture<'_, Result<bool, CheckpointError>> {
        Box::pin(async move {
            let lu = self.clock.now_ms() + self.lease_ms;
            let r = self.store.checkpoint(&self.key, &self.fence, &state, lu).await;
            if matches!(r, Err(CheckpointError::Stale { .. })) {
                if let Ok(mut n) = self.rejected.lock() {
                    *n += 1;
                }
            }
            r
        })
    }
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
        let ddb = with_skew_probe(&clients.ddb, skew.clone(), clock.clone());
        let store = ExecStore::new(ddb.clone(), cfg.executions_table.clone());
        Ok(Worker {
            slots: JobSlots::new(store.clone()),
            tenants: TenantGate::new(ddb, cfg.executions_table.clone()),
            store,
            remote: RemoteTargets {
                lambda: LambdaTarget::new(clients.lambda.clone()),
                http: HttpTarget::new(settings.allow_private_targets)?,
                sqs: SqsTarget::new(clients.sqs.clone()),
            },
            handlers,
            sqs: clients.sqs.clone(),
            clock,
            skew,
            metrics,
            cfg,
            settings,
            urls: tokio::sync::Mutex::new(HashMap::new()),
        })
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
        &self.sqs
    }

    /// The worker's clock.
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

    async fn url_of(&self, name: String) -> Result<String, String> {
        if let Some(u) = self.urls.lock().await.get(&name) {
            return Ok(u.clone());
        }
        let out = self
            .sqs
            .get_queue_url()
            .queue_name(&name)
            .send()
            .await
            .map_err(|e| format!("GetQueueUrl {name}: {}", aws_sdk_sqs::error::DisplayErrorContext(e)))?;
        let url = out.queue_url().unwrap_or_default().to_string();
        self.urls.lock().await.insert(name, url.clone());
        Ok(url)
    }

    /// The URL of a pool's queue.
    pub async fn queue_url(&self, pool: &str) -> Result<String, String> {
        self.url_of(self.cfg.queue_name(pool)).await
    }

    /// The URL of a pool's dead-letter queue.
    pub async fn dlq_url(&self, pool: &str) -> Result<String, String> {
        self.url_of(self.cfg.dlq_name(pool)).await
    }

    /// The pool of a queue ARN or URL (its name minus the configured prefix).
    pub fn pool_of_queue(&self, arn_or_url: &str) -> String {
        let name = arn_or_url.rsplit([':', '/']).next().unwrap_or_default();
        name.strip_prefix(&self.cfg.queue_prefix)
            .map(str::to_string)
            .unwrap_or_else(|| self.settings.pool.clone())
    }

    fn terms(&self) -> LeaseTerms {
        LeaseTerms {
            duration_ms: self.settings.lease_ms,
            skew_margin_ms: self.settings.skew_margin_ms,
            may_take_over: self.skew.trusted(),
        }
    }

    async fn dead_letter(&self, pool: &str, body: &str, code: &str, execution_id: &str) -> bool {
        let url = match self.dlq_url(pool).await {
            Ok(u) => u,
            Err(e) => {
                tracing::error!(pool, error = %e, "no DLQ for pool");
                return false;
            }
        };
        let attr =
            |v: &str| MessageAttributeValue::builder().data_type("String").string_value(v).build().ok();
        let res = self
            .sqs
            .send_message()
            .queue_url(url)
            .message_body(body)
            .set_message_attributes(Some(
                [("sundial-error-code", attr(code)), ("sundial-execution-id", attr(execution_id))]
                    .into_iter()
                    .filter_map(|(k, v)| Some((k.to_string(), v?)))
                    .collect(),
            ))
            .send()
            .await;
        match res {
            Ok(_) => true,
            Err(e) => {
                tracing::error!(pool, error = %aws_sdk_sqs::error::DisplayErrorContext(e), "DLQ send failed");
                false
            }
        }
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
        let msg: ExecMessage = match serde_json::from_str(body) {
            Ok(m) => m,
            Err(e) => {
                tracing::error!(pool, error = %e, "message is not an execution message");
                return if self.dead_letter(pool, body, "BadMessage", "").await {
                    Disposition::Delete
                } else {
                    Disposition::Leave
                };
            }
        };
        let key = ExecKey::of_message(&msg);
        let mut m = ExecMetrics { pool: pool.to_string(), execution_id: key.id(), ..Default::default() };
        let d = match self.handle_inner(pool, body, &msg, &key, msgctl, stop, &mut m).await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(execution = %key.id(), error = %e, retryable = e.is_retryable(), "store error");
                if e.is_retryable() {
                    Disposition::RetryAfter(2)
                } else {
                    Disposition::Leave
                }
            }
        };
        m.clock_skew = u64::from(!self.skew.trusted());
        self.metrics.record(&m, self.clock.now_ms());
        d
    }

    #[allow(clippy::too_many_arguments)]
    async fn handle_inner(
        &self,
        pool: &str,
        body: &str,
        msg: &ExecMessage,
        key: &ExecKey,
        msgctl: &dyn MessageControl,
        stop: &CancellationToken,
        m: &mut ExecMetrics,
    ) -> Result<Disposition, crate::store::error::StoreError> {
        let owner = self.settings.worker_id.clone();
        let actor = format!("worker:{owner}");
        let mut snap = self.store.get(key, false).await?;
        let mut now = self.clock.now();
        // Early delivery (SQS delays are whole seconds, rounded down): hold briefly, then claim.
        if let Some(s) = &snap {
            if let Step::NotYet(at) = next_step(&s.exec, &self.terms(), now.timestamp_millis()) {
                let wait = at - now.timestamp_millis();
                if wait <= self.settings.early_hold_ms {
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(wait.max(0) as u64)) => {}
                        _ = stop.cancelled() => return Ok(Disposition::RetryAfter(0)),
                    }
                    now = self.clock.now();
                }
            }
        }
        // Policy admission (only for executions this worker would claim).
        let mut tenant_limited = false;
        if let Some(s) = &snap {
            if matches!(next_step(&s.exec, &self.terms(), now.timestamp_millis()), Step::Claim { .. }) {
                match self.slots.admit(&s.exec, &actor, now).await? {
                    Admission::Admit => {}
                    Admission::Skip { reason } => {
                        if self.store.skip(key, &s.exec, &actor, &reason, now).await? {
                            m.outcome = Some(ExecStatus::Skipped);
                            tracing::info!(execution = %key.id(), reason, "skipped");
                        }
                        return Ok(Disposition::Delete);
                    }
                    Admission::Wait { until_ms, reason } => {
                        tracing::debug!(execution = %key.id(), reason, "policy wait");
                        return Ok(Disposition::RetryAfter(
                            secs_ceil(until_ms - now.timestamp_millis()).max(1),
                        ));
                    }
                }
                if let Some(limit) = self.settings.tenant_limits.of(&key.tenant) {
                    let lu = now.timestamp_millis() + self.settings.lease_ms;
                    let waited = self
                        .tenants
                        .acquire(key, limit, lu, self.settings.skew_margin_ms, now.timestamp_millis())
                        .await?;
                    if let Some(until) = waited {
                        return Ok(Disposition::RetryAfter(secs_ceil(until - now.timestamp_millis()).max(1)));
                    }
                    tenant_limited = true;
                }
            }
        }
        let outcome = self.store.claim_from(key, snap.take(), &owner, &self.terms(), now).await?;
        let c = match outcome {
            ClaimOutcome::Claimed(c) => c,
            other => {
                if tenant_limited {
                    self.tenants.release(key).await?;
                }
                return Ok(match other {
                    ClaimOutcome::Missing => {
                        tracing::warn!(execution = %key.id(), "no such execution; dropping its message");
                        Disposition::Delete
                    }
                    ClaimOutcome::Finished(ExecStatus::Dead) => {
                        // DEAD but its message still here: the DLQ copy may be missing.
                        if self.dead_letter(pool, body, codes::ATTEMPTS_EXHAUSTED, &key.id()).await {
                            Disposition::Delete
                        } else {
                            Disposition::Leave
                        }
                    }
                    ClaimOutcome::Finished(st) => {
                        if st == ExecStatus::Canceled {
                            if let Some(s) = self.store.get(key, false).await? {
                                self.slots.release(key, s.exec.definition.concurrency).await?;
                            }
                        }
                        Disposition::Delete
                    }
                    ClaimOutcome::NotYet { available_at } => {
                        Disposition::RetryAfter(secs_ceil(available_at - now.timestamp_millis()).max(1))
                    }
                    ClaimOutcome::Held { expires_at } => {
                        Disposition::RetryAfter(secs_ceil(expires_at - now.timestamp_millis()).max(1) + 1)
                    }
                    ClaimOutcome::Claimed(_) => Disposition::Leave,
                });
            }
        };
        let d = self.run_claimed(pool, body, msg, key, *c, msgctl, stop, m, tenant_limited).await?;
        Ok(d)
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_claimed(
        &self,
        pool: &str,
        body: &str,
        msg: &ExecMessage,
        key: &ExecKey,
        c: Claimed,
        msgctl: &dyn MessageControl,
        stop: &CancellationToken,
        m: &mut ExecMetrics,
        tenant_limited: bool,
    ) -> Result<Disposition, crate::store::error::StoreError> {
        let Claimed { snapshot, fence, from, takeover, .. } = c;
        let e = &snapshot.exec;
        let claim_ms = self.clock.now_ms();
        let sched_ms = key.scheduled_ms;
        m.takeovers = u64::from(takeover);
        if from == ExecStatus::Ready {
            m.queue_wait_ms = Some((claim_ms - msg.enqueued_ms.max(msg.fire_ms).max(e.available_at)).max(0));
            if fence.attempt == 1 {
                m.start_lag_ms = Some(claim_ms - sched_ms);
            }
        } else if from == ExecStatus::RetryWait {
            m.queue_wait_ms = Some((claim_ms - e.available_at).max(0));
        }
        let policy = e.definition.concurrency;
        let budget = Budget::of(&e.definition, self.settings.max_total_run_ms);
        if let Some(reason) = budget.may_start(fence.attempt, sched_ms, snapshot.total_run_ms, claim_ms) {
            let last = match (&e.last_error, takeover) {
                (_, true) => {
                    RunError::retryable(codes::LEASE_EXPIRED, "the previous attempt's lease expired")
                }
                (Some((c, msg)), false) => RunError::retryable(c.clone(), msg.clone()),
                (None, false) => RunError::retryable(reason, "budget exhausted before the attempt"),
            };
            let fin =
                Finish::Dead { reason: reason.into(), error: last, digest: input_digest(&e.definition) };
            return self.conclude(pool, body, key, &fence, fin, policy, tenant_limited, m, 0).await;
        }

        // Run with heartbeats, a timeout, and cooperative cancellation.
        let cancel = CancellationToken::new();
        let stop_reason: Mutex<Option<Stop>> = Mutex::new(None);
        let set_stop = |s: Stop| {
            if let Ok(mut g) = stop_reason.lock() {
                g.get_or_insert(s);
            }
        };
        let rejected = Arc::new(Mutex::new(0u64));
        let inv = Invocation::of(e, fence.token, fence.attempt);
        let in_process = matches!(e.definition.target, Target::InProcess { .. });
        let run =
            self.call_target(e, inv, snapshot.checkpoint.clone(), key, &fence, &cancel, rejected.clone());
        tokio::pin!(run);
        let heartbeat = async {
            let every = self.settings.heartbeat_every();
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            loop {
                tick.tick().await;
                let lu = self.clock.now_ms() + self.settings.lease_ms;
                match self.store.heartbeat(key, &fence, lu).await {
                    Ok(Heartbeat::Extended { cancel_requested }) => {
                        msgctl.extend(self.settings.visibility_secs()).await;
                        if tenant_limited {
                            if let Err(e) = self.tenants.extend(key, lu).await {
                                tracing::warn!(error = %e, "tenant lease extension failed");
                            }
                        }
                        if cancel_requested && !cancel.is_cancelled() {
                            set_stop(Stop::Cancelled);
                            cancel.cancel();
                        }
                    }
                    Ok(Heartbeat::Lost) => {
                        set_stop(Stop::Lost);
                        cancel.cancel();
                        return;
                    }
                    Err(err) => {
                        tracing::warn!(execution = %key.id(), error = %err, "heartbeat failed; lease still valid until its end")
                    }
                }
            }
        };
        tokio::pin!(heartbeat);
        let timeout = tokio::time::sleep(Duration::from_secs(u64::from(e.definition.timeout_secs.max(1))));
        tokio::pin!(timeout);
        let early: Option<Result<(), RunError>> = tokio::select! {
            r = &mut run => Some(r),
            _ = &mut heartbeat => None,
            _ = &mut timeout => { set_stop(Stop::Timeout); None }
            _ = stop.cancelled() => { set_stop(Stop::Shutdown); None }
            _ = cancel.cancelled() => None,
        };
        let result = match early {
            Some(r) => r,
            None => {
                cancel.cancel();
                // In-process handlers get a grace period to reach a safe point; remote calls
                // cannot be interrupted mid-flight, so the worker stops waiting for them.
                let graced = if in_process {
                    tokio::time::timeout(
                        Duration::from_millis(self.settings.cancel_grace_ms as u64),
                        &mut run,
                    )
                    .await
                    .ok()
                } else {
                    None
                };
                graced.unwrap_or_else(|| Err(RunError::cancelled()))
            }
        };
        let stopped = stop_reason.lock().ok().and_then(|g| *g);
        let duration = self.clock.now_ms() - claim_ms;
        m.duration_ms = Some(duration);
        m.stale_rejections += rejected.lock().map(|g| *g).unwrap_or(0);

        let result = match (stopped, result) {
            (Some(Stop::Lost), _) => {
                m.stale_rejections += 1;
                tracing::warn!(execution = %key.id(), token = fence.token, "lease lost; result discarded");
                return Ok(Disposition::Leave);
            }
            (Some(Stop::Shutdown), Err(_)) => {
                self.store.release(key, &fence).await?;
                if tenant_limited {
                    self.tenants.release(key).await?;
                }
                return Ok(Disposition::RetryAfter(0));
            }
            (Some(Stop::Cancelled), Err(_)) => {
                return self
                    .conclude(pool, body, key, &fence, Finish::Canceled, policy, tenant_limited, m, duration)
                    .await;
            }
            (Some(Stop::Timeout), Err(_)) => Err(RunError::retryable(
                codes::TIMEOUT,
                format!("run exceeded timeoutSecs = {}", e.definition.timeout_secs),
            )),
            (_, r) => r,
        };
        let fin = match result {
            Ok(()) => Finish::Succeeded,
            Err(err) => {
                let total = snapshot.total_run_ms + duration;
                let now_ms = self.clock.now_ms();
                let unit = jitter_unit(&key.id(), fence.attempt);
                let at = Progress { attempt: fence.attempt, scheduled_ms: sched_ms, total_run_ms: total };
                match after_failure(&err, &at, &e.definition.retry, &budget, unit, now_ms) {
                    Verdict::Retry { available_at, .. } => {
                        Finish::RetryWait { available_at, error: err, total_run_ms: total }
                    }
                    Verdict::Fail => Finish::Failed { error: err },
                    Verdict::Dead { reason } => Finish::Dead {
                        reason: reason.into(),
                        error: err,
                        digest: input_digest(&e.definition),
                    },
                }
            }
        };
        self.conclude(pool, body, key, &fence, fin, policy, tenant_limited, m, duration).await
    }

    /// Calls the target (remote, or an in-process handler with a fenced checkpointer).
    #[allow(clippy::too_many_arguments)]
    async fn call_target(
        &self,
        e: &Execution,
        inv: Invocation,
        resumed_from: Option<serde_json::Value>,
        key: &ExecKey,
        fence: &Fence,
        cancel: &CancellationToken,
        rejected: Arc<Mutex<u64>>,
    ) -> Result<(), RunError> {
        match &e.definition.target {
            Target::InProcess { handler } => {
                let Some(h) = self.handlers.get(handler) else {
                    return Err(RunError::permanent(
                        codes::UNKNOWN_HANDLER,
                        format!(
                            "this worker has no in-process handler {handler:?} (is the job in an ECS pool?)"
                        ),
                    ));
                };
                let cp = Arc::new(FencedCheckpointer {
                    store: self.store.clone(),
                    key: key.clone(),
                    fence: fence.clone(),
                    lease_ms: self.settings.lease_ms,
                    clock: self.clock.clone(),
                    rejected,
                });
                h.run(HandlerContext::new(inv, resumed_from, cancel.clone(), cp)).await
            }
            t => self.remote.call(t, &inv).await,
        }
    }

    /// Records the finish and turns it into a disposition (and the metrics, DLQ copy, slot and
    /// tenant releases that go with it).
    #[allow(clippy::too_many_arguments)]
    async fn conclude(
        &self,
        pool: &str,
        body: &str,
        key: &ExecKey,
        fence: &Fence,
        fin: Finish,
        policy: crate::model::ConcurrencyPolicy,
        tenant_limited: bool,
        m: &mut ExecMetrics,
        _duration: i64,
    ) -> Result<Disposition, crate::store::error::StoreError> {
        let now = self.clock.now();
        let status = fin.status();
        match self.store.finish(key, fence, &fin, now).await? {
            FinishResult::TakenOver { status: cur, token } => {
                m.stale_rejections += 1;
                tracing::warn!(execution = %key.id(), mine = fence.token, current = ?token, status = ?cur, "finish refused: taken over");
                return Ok(Disposition::Leave);
            }
            FinishResult::Done => {}
        }
        m.outcome = Some(status);
        if tenant_limited {
            self.tenants.release(key).await?;
        }
        if status.is_terminal() {
            self.slots.release(key, policy).await?;
        }
        Ok(match fin {
            Finish::RetryWait { available_at, .. } => {
                m.retries = 1;
                Disposition::RetryAfter(secs_ceil(available_at - now.timestamp_millis()).max(1))
            }
            Finish::Dead { reason, .. } => {
                if self.dead_letter(pool, body, &reason, &key.id()).await {
                    Disposition::Delete
                } else {
                    // The next delivery finds DEAD and retries the DLQ copy.
                    Disposition::RetryAfter(5)
                }
            }
            _ => Disposition::Delete,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_from_env_name_the_bad_variable() {
        let env: HashMap<&str, &str> = [(env::LEASE_SECS, "1")].into();
        let e = WorkerSettings::from_lookup(|k| env.get(k).map(|v| v.to_string())).err();
        assert!(matches!(e, Some(ConfigError::Invalid { ref name, .. }) if name == env::LEASE_SECS), "{e:?}");
        let env: HashMap<&str, &str> = [
            (env::LEASE_SECS, "4"),
            (env::WORKER_ID, "w1"),
            ("SUNDIAL_POOL", "slow"),
            ("SUNDIAL_ALLOW_PRIVATE_TARGETS", "true"),
            (env::TENANT_MAX_RUNNING, "3"),
        ]
        .into();
        let s = WorkerSettings::from_lookup(|k| env.get(k).map(|v| v.to_string()))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((s.lease_ms, s.worker_id.as_str(), s.pool.as_str()), (4_000, "w1", "slow"));
        assert!(s.allow_private_targets);
        assert_eq!(s.tenant_limits.of("any"), Some(3));
        assert_eq!(s.visibility_secs(), 6);
    }

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
