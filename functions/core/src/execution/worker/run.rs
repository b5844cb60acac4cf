//! A claimed attempt: the target call under heartbeats, a timeout and cooperative cancellation.
//!
//! Heartbeats renew the lease (and the message's visibility, and the tenant gate entry) every
//! third of the lease; a refused heartbeat means another worker took over, and this attempt
//! publishes nothing. In-process handlers save checkpoints through a fenced checkpointer, so a
//! stale attempt cannot overwrite the new owner's progress.

use super::attempt::{Exit, Holds};
use super::conclusion::Outcome;
use super::{Delivery, Disposition, Worker};
use crate::execution::claim::{Fence, Finish};
use crate::execution::clock::Clock;
use crate::execution::metrics::ExecMetrics;
use crate::execution::retry::{after_failure, codes, jitter_unit, Budget, Progress, RunError, Verdict};
use crate::execution::target::in_process::{BoxFuture, Checkpointer, HandlerContext};
use crate::execution::target::Invocation;
use crate::model::{ExecStatus, Execution, Target};
use crate::store::error::StoreError;
use crate::store::executions::{CheckpointError, Claimed, ExecKey, ExecStore, Heartbeat};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

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

/// Saves an in-process handler's checkpoints while its fence holds; counts refusals.
struct FencedCheckpointer {
    store: ExecStore,
    key: ExecKey,
    fence: Fence,
    lease_ms: i64,
    clock: Arc<dyn Clock>,
    rejected: Arc<Mutex<u64>>,
    /// The worker's scope: a checkpoint is the worker's write even when the handler's code
    /// (recorded as `handler`, [`crate::access::user_code`]) asks for it.
    scope: Option<Arc<crate::access::Scope>>,
}

impl Checkpointer for FencedCheckpointer {
    fn save(&self, state: serde_json::Value) -> BoxFuture<'_, Result<bool, CheckpointError>> {
        Box::pin(async move {
            let lu = self.clock.now_ms() + self.lease_ms;
            let write = self.store.checkpoint(&self.key, &self.fence, &state, lu);
            let r = crate::access::within(self.scope.clone(), write).await;
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
    pub(super) async fn run_claimed(
        &self,
        d: &Delivery<'_>,
        c: Claimed,
        holds: Holds,
        m: &mut ExecMetrics,
    ) -> Result<Disposition, StoreError> {
        let Claimed { snapshot, fence, from, takeover, .. } = c;
        let (key, msg) = (&d.key, &d.msg);
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
            let fin = Finish::Dead {
                reason: reason.into(),
                error: last,
                digest: super::input_digest(&e.definition),
            };
            return self.conclude(d, &fence, fin, policy, holds, m).await;
        }

        // A sharded or broadcast parent is not run: its children are (`fanout`).
        if crate::execution::children::fans_out(e) {
            return self.fan_out(d, e, &fence, policy, holds, m).await;
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
        let checkpointer = FencedCheckpointer {
            store: self.store.clone(),
            key: key.clone(),
            fence: fence.clone(),
            lease_ms: self.settings.lease_ms,
            clock: self.clock.clone(),
            rejected: rejected.clone(),
            scope: crate::access::current(),
        };
        // The run, its heartbeats and its timeout live in this block: they borrow the holds,
        // which the exits below consume.
        let result = {
            let inputs = HandlerInputs {
                inv,
                resumed_from: snapshot.checkpoint.clone(),
                cancel: cancel.clone(),
                checkpointer,
            };
            let run = self.call_target(d, e, &fence, inputs);
            tokio::pin!(run);
            let heartbeat = async {
                let every = self.settings.heartbeat_every();
                let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
                loop {
                    tick.tick().await;
                    let lu = self.clock.now_ms() + self.settings.lease_ms;
                    match self.store.heartbeat(key, &fence, lu).await {
                        Ok(Heartbeat::Extended { cancel_requested }) => {
                            d.msgctl.extend(self.settings.visibility_secs()).await;
                            if let Err(e) = holds.extend(self, lu).await {
                                tracing::warn!(error = %e, "tenant or resource gate lease extension failed");
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
            let timeout =
                tokio::time::sleep(Duration::from_secs(u64::from(e.definition.timeout_secs.max(1))));
            tokio::pin!(timeout);
            let early: Option<Result<Option<serde_json::Value>, RunError>> = tokio::select! {
                r = &mut run => Some(r),
                _ = &mut heartbeat => None,
                _ = &mut timeout => { set_stop(Stop::Timeout); None }
                _ = d.stop.cancelled() => { set_stop(Stop::Shutdown); None }
                _ = cancel.cancelled() => None,
            };
            match early {
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
                holds.end(self, Exit::TakenOver).await?;
                return Ok(Disposition::Leave);
            }
            (Some(Stop::Shutdown), Err(_)) => {
                self.store.release(key, &fence).await?;
                holds.end(self, Exit::Released).await?;
                return Ok(Disposition::RetryAfter(0));
            }
            (Some(Stop::Cancelled), Err(_)) => {
                return self.conclude(d, &fence, Finish::Canceled, policy, holds, m).await;
            }
            (Some(Stop::Timeout), Err(_)) => Err(RunError::retryable(
                codes::TIMEOUT,
                format!("run exceeded timeoutSecs = {}", e.definition.timeout_secs),
            )),
            (_, r) => r,
        };
        // A map-reduce parent's map returned: it waits for its items (`mapreduce`).
        if result.is_ok()
            && crate::execution::mapreduce::phase_of(e) == Some(crate::execution::mapreduce::Phase::Map)
        {
            return self.seal_map(d, e, &fence, policy, holds, m).await;
        }
        let (result, item_result) = match result {
            Ok(v) => (Ok(()), v),
            Err(e) => (Err(e), None),
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
                        digest: super::input_digest(&e.definition),
                    },
                }
            }
        };
        self.conclude_with(d, &fence, Outcome { fin, item_result }, policy, holds, m).await
    }

    /// Calls the target (remote, or an in-process handler with a fenced checkpointer). A
    /// map-reduce item's result comes back as `Some`.
    async fn call_target(
        &self,
        d: &Delivery<'_>,
        e: &Execution,
        fence: &Fence,
        inputs: HandlerInputs,
    ) -> Result<Option<serde_json::Value>, RunError> {
        match &e.definition.target {
            Target::InProcess { handler } if e.definition.map_reduce.is_some() => {
                self.call_map_reduce(d, e, fence, handler, inputs).await
            }
            Target::InProcess { handler } => {
                let Some(h) = self.handlers.get(handler) else {
                    return Err(RunError::permanent(
                        codes::UNKNOWN_HANDLER,
                        format!(
                            "this worker has no in-process handler {handler:?} (is the job in an ECS pool?)"
                        ),
                    ));
                };
                let HandlerInputs { inv, resumed_from, cancel, checkpointer } = inputs;
                let cp = Arc::new(checkpointer);
                // The handler's own calls (its tables, its downstreams) need grants the deployer
                // gives the worker role; they are recorded apart from Sundial's.
                crate::access::user_code(h.run(HandlerContext::new(inv, resumed_from, cancel.clone(), cp)))
                    .await
                    .map(|()| None)
            }
            t => {
                // The create-time policy, again: it may have been tightened since, and
                // definitions stored before it existed are judged too.
                self.cfg.targets.check(&self.cfg, &e.tenant, t)?;
                self.remote.call(t, &inputs.inv, self.clock.now()).await.map(|()| None)
            }
        }
    }

    /// A map-reduce job's run (`docs/mapreduce.md`): an item's `run_item`, or the parent's
    /// `map` (with a fenced emitter) or `reduce` (with every item's result), by phase.
    async fn call_map_reduce(
        &self,
        d: &Delivery<'_>,
        e: &Execution,
        fence: &Fence,
        handler: &str,
        inputs: HandlerInputs,
    ) -> Result<Option<serde_json::Value>, RunError> {
        let HandlerInputs { inv, resumed_from, cancel, checkpointer } = inputs;
        use crate::execution::mapreduce::{check_result, phase_of, ItemInput, MapContext, MapState, Phase};
        let Some(h) = self.handlers.get_map_reduce(handler) else {
            return Err(RunError::permanent(
                codes::UNKNOWN_HANDLER,
                format!("this worker has no map-reduce handler {handler:?} (is the job in an ECS pool?)"),
            ));
        };
        let rejected = checkpointer.rejected.clone();
        let scope = checkpointer.scope.clone();
        let ctx = HandlerContext::new(inv, resumed_from, cancel.clone(), Arc::new(checkpointer));
        if let Some(crate::execution::children::ChildKey::Item(k)) = &e.child {
            let input = match &e.map_reduce {
                Some(MapState::Item { input, .. }) => input.clone(),
                _ => serde_json::Value::Null,
            };
            let v = crate::access::user_code(h.run_item(ctx, ItemInput { key: k.clone(), input })).await?;
            check_result(&v)?;
            return Ok(Some(v));
        }
        if phase_of(e) == Some(Phase::Reduce) {
            let results = self.store.item_results(&d.key).await.map_err(|err| {
                RunError::retryable("ItemResultsUnread", format!("reading the items' results: {err}"))
            })?;
            return crate::access::user_code(h.reduce(ctx, results)).await.map(|()| None);
        }
        let emitter = super::mapreduce::WorkerEmitter {
            store: self.store.clone(),
            key: d.key.clone(),
            fence: fence.clone(),
            parent: e.clone(),
            lease_ms: self.settings.lease_ms,
            clock: self.clock.clone(),
            queues: self.queues.clone(),
            pool: d.pool.to_string(),
            actor: self.actor(),
            rejected,
            scope,
        };
        crate::access::user_code(h.map(MapContext::new(ctx, Arc::new(emitter)))).await.map(|()| None)
    }
}

/// What an in-process handler (or the remote call) is given for one attempt: the invocation,
/// the checkpoint it resumes from, its cancellation token and its fenced checkpointer.
struct HandlerInputs {
    inv: Invocation,
    resumed_from: Option<serde_json::Value>,
    cancel: CancellationToken,
    checkpointer: FencedCheckpointer,
}
