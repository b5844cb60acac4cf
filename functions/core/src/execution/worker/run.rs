//! A claimed attempt: the target call under heartbeats, a timeout and cooperative cancellation.
//!
//! Heartbeats renew the lease (and the message's visibility, and the tenant gate entry) every
//! third of the lease; a refused heartbeat means another worker took over, and this attempt
//! publishes nothing. In-process handlers save checkpoints through a fenced checkpointer, so a
//! stale attempt cannot overwrite the new owner's progress.

use super::attempt::{Exit, Holds};
use super::conclusion::Outcome;
use super::{Delivery, Disposition, Worker};
use crate::execution::clock::Clock;
use crate::execution::metrics::ExecMetrics;
use crate::execution::target::in_process::{BoxFuture, Checkpointer, HandlerContext};
use crate::execution::target::Invocation;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sundial_model::claim::{Fence, Finish};
use sundial_model::retry::{after_failure, codes, jitter_unit, Budget, Progress, RunError, Verdict};
use sundial_model::{EcsTarget, ExecStatus, Execution, InProcessTarget, Target};
use sundial_store::error::StoreError;
use sundial_store::executions::{CheckpointError, Claimed, ExecKey, ExecStore, Heartbeat};
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

/// The first reason a run stopped early, set by whichever of the heartbeat, the timeout, the
/// shutdown or a cancel request sees it first.
#[derive(Default)]
struct StopCell(Mutex<Option<Stop>>);

impl StopCell {
    fn set(&self, s: Stop) {
        if let Ok(mut g) = self.0.lock() {
            g.get_or_insert(s);
        }
    }

    fn get(&self) -> Option<Stop> {
        self.0.lock().ok().and_then(|g| *g)
    }
}

/// What an attempt's run returned, before the stop reason is applied: the target's result
/// (a map-reduce item's value on success), why it stopped early if it did, and the fenced
/// checkpoints the store refused.
struct Attempt {
    result: Result<Option<serde_json::Value>, RunError>,
    stopped: Option<Stop>,
    rejected: u64,
}

/// What the stop reason makes of an attempt: a result to conclude (with the holds the
/// conclusion releases), or an exit already taken (lease lost, released at shutdown,
/// cancelled).
enum Settled {
    Result(Result<Option<serde_json::Value>, RunError>, Box<Holds>),
    Exited(Disposition),
}

impl Worker {
    /// Runs a claimed execution: the budget check, fan-out for a parent, the attempt under
    /// heartbeats, a timeout and cancellation, then its conclusion.
    pub(super) async fn run_claimed(
        &self,
        d: &Delivery<'_>,
        c: Claimed,
        holds: Holds,
        doomed: Option<String>,
        m: &mut ExecMetrics,
    ) -> Result<Disposition, StoreError> {
        let claim_ms = self.clock.now_ms();
        note_claim(m, d, &c, claim_ms);
        // The admission took its tenant and resource units before the claim; a claim that
        // landed late (a stalled or partitioned worker: the full mix's seed 5035) may find its
        // entries lapsed and dropped by another acquirer, whose run now holds the unit. So when
        // the entries' leases are within a heartbeat of their end, they are renewed first, and
        // a lapsed admission gives the claim back and waits instead of running one past the
        // limit (a claim that landed in time costs no extra write).
        let late = holds.may_have_lapsed(claim_ms, self.settings.lease_ms / 3);
        if late && !holds.extend(self, claim_ms + self.settings.lease_ms).await? {
            tracing::warn!(execution = %d.key.id(), "its gate entries lapsed before its claim landed; giving the claim back");
            self.store.release(&d.key, &c.fence).await?;
            holds.end(self, Exit::Released).await?;
            return Ok(Disposition::RetryAfter(1));
        }
        let e = &c.snapshot.exec;
        if !c.snapshot.outbox.is_empty() {
            // The last attempt's events, which its worker did not get out (docs/outcomes.md).
            self.flush_outbox(e, c.from, &c.snapshot.outbox, false).await;
        }
        let policy = e.definition.concurrency;
        // Its upstreams were not satisfied by the dependency deadline (`onDependencyDeadline:
        // fail`): DEAD without a run, to the DLQ, replayable once they are. Also when this claim
        // takes over one that was condemned (the note is on the item).
        let doomed = doomed.or_else(|| {
            sundial_model::dependency::condemned(e).then(|| {
                "upstream runs not satisfied by the dependency deadline (condemned before a takeover)"
                    .to_string()
            })
        });
        if let Some(why) = doomed {
            let error = RunError::permanent(codes::DEPENDENCY_NOT_MET, why);
            let digest = super::input_digest(&e.definition);
            let fin = Finish::Dead { reason: codes::DEPENDENCY_NOT_MET.into(), error, digest };
            return self.conclude(d, &c.fence, fin, e, holds, m).await;
        }
        let budget = Budget::of(&e.definition, self.settings.max_total_run_ms);
        let sched_ms = d.key.scheduled_ms;
        if let Some(reason) = budget.may_start(c.fence.attempt, sched_ms, c.snapshot.total_run_ms, claim_ms) {
            // A takeover that ends the fire stops what the lost attempt started first: its
            // holder may never come back to (the full mix's seed 25: a stalled worker's ECS
            // task ran on past the DEAD its takeover recorded).
            if c.takeover {
                self.stop_run(e, || format!("sundial: the fire ended ({reason}) after its lease was lost"))
                    .await;
            }
            let fin = out_of_budget(e, c.takeover, reason);
            return self.conclude(d, &c.fence, fin, e, holds, m).await;
        }
        // A sharded or broadcast parent is not run: its children are (`fanout`).
        if sundial_model::children::fans_out(e) {
            return self.fan_out(d, e, &c.fence, policy, holds, m).await;
        }
        let attempt = self.attempt(d, &c, &holds).await;
        let duration = self.clock.now_ms() - claim_ms;
        m.duration_ms = Some(duration);
        m.stale_rejections += attempt.rejected;
        let (result, holds) = match self.settle(d, &c, attempt, holds, m).await? {
            Settled::Exited(disposition) => return Ok(disposition),
            Settled::Result(result, holds) => (result, *holds),
        };
        // A map-reduce parent's map returned: it waits for its items (`mapreduce`).
        if result.is_ok()
            && crate::execution::mapreduce::phase_of(e) == Some(crate::execution::mapreduce::Phase::Map)
        {
            return self.seal_map(d, e, &c.fence, policy, holds, m).await;
        }
        let (fin, item_result) = match result {
            Ok(v) => (Finish::Succeeded, v),
            Err(err) => (self.after_error(d, &c, err, &budget, c.snapshot.total_run_ms + duration), None),
        };
        self.conclude_with(d, &c.fence, Outcome { fin, item_result }, e, holds, m).await
    }

    /// One attempt: the target call raced against its heartbeats, its timeout, the worker's
    /// shutdown and a cancel request. An in-process handler that is stopped gets a grace period
    /// to reach a safe point; a remote call cannot be interrupted mid-flight, so the worker
    /// stops waiting for it.
    async fn attempt(&self, d: &Delivery<'_>, c: &Claimed, holds: &Holds) -> Attempt {
        let e = &c.snapshot.exec;
        let cancel = CancellationToken::new();
        let stop = StopCell::default();
        let rejected = Arc::new(Mutex::new(0u64));
        let checkpointer = FencedCheckpointer {
            store: self.store.clone(),
            key: d.key.clone(),
            fence: c.fence.clone(),
            lease_ms: self.settings.lease_ms,
            clock: self.clock.clone(),
            rejected: rejected.clone(),
            scope: crate::access::current(),
        };
        let inputs = HandlerInputs {
            inv: Invocation::of(e, c.fence.token, c.fence.attempt),
            resumed_from: c.snapshot.checkpoint.clone(),
            cancel: cancel.clone(),
            checkpointer,
        };
        let run = self.call_target(d, e, &c.fence, inputs);
        tokio::pin!(run);
        let heartbeat = self.heartbeats(d, &c.fence, holds, &cancel, &stop);
        tokio::pin!(heartbeat);
        let timeout = tokio::time::sleep(Duration::from_secs(u64::from(e.definition.timeout_secs.max(1))));
        tokio::pin!(timeout);
        let early: Option<Result<Option<serde_json::Value>, RunError>> = tokio::select! {
            // Branches are polled in written order, so a seed replays the same way in the
            // deterministic simulator (docs/simulation.md).
            biased;
            r = &mut run => Some(r),
            _ = &mut heartbeat => None,
            _ = &mut timeout => { stop.set(Stop::Timeout); None }
            _ = d.stop.cancelled() => { stop.set(Stop::Shutdown); None }
            _ = cancel.cancelled() => None,
        };
        let result = match early {
            Some(r) => r,
            None => {
                cancel.cancel();
                let graced = if matches!(e.definition.target, Target::InProcess(_)) {
                    let grace = Duration::from_millis(self.settings.cancel_grace_ms as u64);
                    tokio::time::timeout(grace, &mut run).await.ok()
                } else {
                    None
                };
                graced.unwrap_or_else(|| Err(RunError::cancelled()))
            }
        };
        let rejected = rejected.lock().map(|g| *g).unwrap_or(0);
        Attempt { result, stopped: stop.get(), rejected }
    }

    /// Renews the lease every third of it (and the message's visibility, and the gate
    /// entries) until the lease is lost; turns a requested cancel into the token's cancel.
    async fn heartbeats(
        &self,
        d: &Delivery<'_>,
        fence: &Fence,
        holds: &Holds,
        cancel: &CancellationToken,
        stop: &StopCell,
    ) {
        let key = &d.key;
        let every = self.settings.heartbeat_every();
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        loop {
            tick.tick().await;
            let lu = self.clock.now_ms() + self.settings.lease_ms;
            match self.store.heartbeat(key, fence, lu).await {
                Ok(Heartbeat::Extended { cancel_requested }) => {
                    d.msgctl.extend(self.settings.visibility_secs()).await;
                    match holds.extend(self, lu).await {
                        Ok(true) => {}
                        Ok(false) => {
                            tracing::warn!(execution = %key.id(), "a tenant or resource gate entry lapsed while the attempt ran")
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "tenant or resource gate lease extension failed")
                        }
                    }
                    let ignored = sundial_mutants::active(sundial_mutants::Mutant::CancelIgnored);
                    if cancel_requested && !cancel.is_cancelled() && !ignored {
                        stop.set(Stop::Cancelled);
                        cancel.cancel();
                    }
                }
                Ok(Heartbeat::Lost) => {
                    stop.set(Stop::Lost);
                    cancel.cancel();
                    return;
                }
                Err(err) => {
                    tracing::warn!(execution = %key.id(), error = %err, "heartbeat failed; lease still valid until its end")
                }
            }
        }
    }

    /// Applies why the attempt stopped: a lost lease publishes nothing, a shutdown releases
    /// the lease for another worker, a cancel ends the execution CANCELED, a timeout is a
    /// retryable error; otherwise the target's own result stands.
    async fn settle(
        &self,
        d: &Delivery<'_>,
        c: &Claimed,
        attempt: Attempt,
        holds: Holds,
        m: &mut ExecMetrics,
    ) -> Result<Settled, StoreError> {
        let (key, fence) = (&d.key, &c.fence);
        let result = match (attempt.stopped, attempt.result) {
            (Some(Stop::Lost), _) => {
                m.stale_rejections += 1;
                tracing::warn!(execution = %key.id(), token = fence.token, "lease lost; result discarded");
                holds.end(self, Exit::TakenOver).await?;
                return Ok(Settled::Exited(Disposition::Leave));
            }
            (Some(Stop::Shutdown), Err(_)) => {
                self.store.release(key, fence).await?;
                holds.end(self, Exit::Released).await?;
                return Ok(Settled::Exited(Disposition::RetryAfter(0)));
            }
            (Some(Stop::Cancelled), Err(_)) => {
                self.stop_run(&c.snapshot.exec, || "sundial: the execution was cancelled".into()).await;
                let d = self.conclude(d, fence, Finish::Canceled, &c.snapshot.exec, holds, m).await?;
                return Ok(Settled::Exited(d));
            }
            (Some(Stop::Timeout), Err(_)) => {
                let timeout = c.snapshot.exec.definition.timeout_secs;
                self.stop_run(&c.snapshot.exec, || format!("sundial: timeoutSecs = {timeout} passed")).await;
                Err(RunError::retryable(codes::TIMEOUT, format!("run exceeded timeoutSecs = {timeout}")))
            }
            (_, r) => r,
        };
        Ok(Settled::Result(result, Box::new(holds)))
    }

    /// The finish of a failed attempt: a retry at its back-off, FAILED, or DEAD when the
    /// retry policy or the run budget is spent.
    fn after_error(
        &self,
        d: &Delivery<'_>,
        c: &Claimed,
        err: RunError,
        budget: &Budget,
        total: i64,
    ) -> Finish {
        let e = &c.snapshot.exec;
        let unit = jitter_unit(&d.key.id(), c.fence.attempt);
        let at = Progress { attempt: c.fence.attempt, scheduled_ms: d.key.scheduled_ms, total_run_ms: total };
        match after_failure(&err, &at, &e.definition.retry, budget, unit, self.clock.now_ms()) {
            Verdict::Retry { available_at, .. } => {
                Finish::RetryWait { available_at, error: err, total_run_ms: total }
            }
            Verdict::Fail => Finish::Failed { error: err },
            Verdict::Dead { reason } => {
                Finish::Dead { reason: reason.into(), error: err, digest: super::input_digest(&e.definition) }
            }
        }
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
        // The create-time policy, again, for every kind of target (an in-process handler and the
        // pool too): it may have been tightened since, and definitions stored before it existed
        // are judged too.
        self.cfg.targets.check(&self.cfg, &e.tenant, &e.definition.target)?;
        self.cfg.targets.check_pool(&e.tenant, &e.definition.pool)?;
        match &e.definition.target {
            Target::InProcess(InProcessTarget { handler }) if e.definition.map_reduce.is_some() => {
                self.call_map_reduce(d, e, fence, handler, inputs).await
            }
            Target::InProcess(InProcessTarget { handler }) => {
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
            Target::StepFunctions(t) => {
                self.call_state_machine(d, e, fence, &t.state_machine_arn, &inputs.inv).await.map(|()| None)
            }
            // Boxed: the SDK calls' futures would otherwise grow every attempt's future (and the
            // worker's stack) by their size.
            Target::Ecs(t) => Box::pin(self.call_ecs_task(d, e, t, fence, &inputs.inv)).await.map(|()| None),
            t => self.remote.of(&e.tenant).await?.call(t, &inputs.inv, self.clock.now()).await.map(|()| None),
        }
    }

    /// A Step Functions target: starts the fire's execution (or adopts the one an earlier
    /// claim of this run started), notes its ARN on the timeline, and tracks it to its end.
    async fn call_state_machine(
        &self,
        d: &Delivery<'_>,
        e: &Execution,
        fence: &Fence,
        machine_arn: &str,
        inv: &Invocation,
    ) -> Result<(), RunError> {
        use crate::execution::target::stepfunctions::run_of;
        let remote = self.remote.of(&e.tenant).await?;
        let started = match remote.start_state_machine(machine_arn, inv, run_of(e)).await {
            Ok(started) => started,
            Err(err) => return Err(self.unstarted(e, err).await),
        };
        let code = format!("{} {}", codes::STEP_FUNCTIONS_EXECUTION, started.arn);
        // Best effort: the timeline shows the execution; the run does not depend on the note.
        match self.store.note_held(&d.key, fence, &code, &self.actor(), self.clock.now_ms()).await {
            Ok(true) => {}
            Ok(false) => tracing::warn!(execution = %d.key.id(), "lease lost before the Step Functions note"),
            Err(err) => {
                tracing::warn!(execution = %d.key.id(), error = %err, "the Step Functions note failed")
            }
        }
        remote.track_state_machine(&started, inv).await
    }

    /// An ECS target: runs the fire's task (or adopts the one an earlier claim of this run ran),
    /// notes its ARN on the timeline, and tracks it until it stops.
    async fn call_ecs_task(
        &self,
        d: &Delivery<'_>,
        e: &Execution,
        target: &EcsTarget,
        fence: &Fence,
        inv: &Invocation,
    ) -> Result<(), RunError> {
        use crate::execution::target::stepfunctions::run_of;
        let remote = self.remote.of(&e.tenant).await?;
        let started = match Box::pin(remote.run_task(target, inv, run_of(e))).await {
            Ok(started) => started,
            Err(err) => return Err(self.unstarted(e, err).await),
        };
        let code = format!("{} {}", codes::ECS_TASK, started.arn);
        // Best effort: the timeline shows the task; the run does not depend on the note.
        match self.store.note_held(&d.key, fence, &code, &self.actor(), self.clock.now_ms()).await {
            Ok(true) => {}
            Ok(false) => tracing::warn!(execution = %d.key.id(), "lease lost before the ECS task note"),
            Err(err) => tracing::warn!(execution = %d.key.id(), error = %err, "the ECS task note failed"),
        }
        Box::pin(remote.track_task(target, &started, inv)).await
    }

    /// An attempt whose start of its Step Functions execution or ECS task failed with `err`:
    /// if the failure may hide a start (a 5xx, a timeout, an answer lost after the call was
    /// applied, whose SDK retries then failed), the run is stopped before the failure is
    /// recorded, so nothing of a failed attempt runs on beside the next one or past the fire's
    /// end (the faults shape's seed 244: RunTask answered 500 three times, the fire went DEAD,
    /// its task ran on). A refused start (permanent) started nothing.
    async fn unstarted(&self, e: &Execution, err: RunError) -> RunError {
        if err.is_retryable() {
            Box::pin(self.stop_run_of(e, "sundial: the attempt's start failed")).await;
        }
        err
    }

    /// After an attempt that ended without its Step Functions execution or ECS task (a timeout,
    /// a cancel): stops it, so that a retry never runs beside it. A lost lease or a shutdown
    /// leaves it to the next claim, which adopts it. Boxed, and only for those targets: the SDK
    /// calls' futures would otherwise grow every settle's future (and the worker's stack).
    async fn stop_run(&self, e: &Execution, reason: impl FnOnce() -> String) {
        if e.definition.target.tracked() {
            Box::pin(self.stop_run_of(e, &reason())).await
        }
    }

    async fn stop_run_of(&self, e: &Execution, reason: &str) {
        use crate::execution::target::stepfunctions::run_of;
        let remote = match self.remote.of(&e.tenant).await {
            Ok(remote) => remote,
            Err(err) => {
                tracing::warn!(execution = %e.global_id(), error = %err, "no tenant session to stop the run");
                return;
            }
        };
        match &e.definition.target {
            Target::Ecs(t) => remote.stop_task(t, &e.tenant, &e.global_id(), run_of(e), reason).await,
            Target::StepFunctions(t) => {
                remote.stop_state_machine(&t.state_machine_arn, &e.global_id(), run_of(e), reason).await
            }
            _ => {}
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
        if let Some(sundial_model::children::ChildKey::Item(k)) = &e.child {
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

/// The claim's share of the metrics: how long the message waited in the queue and, for a
/// first start, how late it started.
fn note_claim(m: &mut ExecMetrics, d: &Delivery<'_>, c: &Claimed, claim_ms: i64) {
    let e = &c.snapshot.exec;
    m.takeovers = u64::from(c.takeover);
    if c.from == ExecStatus::Ready {
        m.queue_wait_ms = Some((claim_ms - d.msg.enqueued_ms.max(d.msg.fire_ms).max(e.available_at)).max(0));
        // The first start only: a reduce or a replay would add hours-long samples.
        if c.fence.is_first_start() {
            m.start_lag_ms = Some(claim_ms - d.key.scheduled_ms);
        }
    } else if c.from == ExecStatus::RetryWait {
        m.queue_wait_ms = Some((claim_ms - e.available_at).max(0));
    }
}

/// The DEAD finish of an execution whose run budget is spent before an attempt starts, naming
/// the last error (or the expired lease of a takeover).
fn out_of_budget(e: &Execution, takeover: bool, reason: &'static str) -> Finish {
    let last = match (&e.last_error, takeover) {
        (_, true) => RunError::retryable(codes::LEASE_EXPIRED, "the previous attempt's lease expired"),
        (Some((c, msg)), false) => RunError::retryable(c.clone(), msg.clone()),
        (None, false) if reason == codes::MAX_AGE_EXCEEDED => RunError::retryable(
            reason,
            format!(
                "not started within retry.maxAgeSecs = {} of its scheduled instant (it waited for a concurrency policy, the tenant's running limit or a resource, or was delivered late)",
                e.definition.retry.max_age_secs
            ),
        ),
        (None, false) => RunError::retryable(reason, "budget exhausted before the attempt"),
    };
    Finish::Dead { reason: reason.into(), error: last, digest: super::input_digest(&e.definition) }
}

/// What an in-process handler (or the remote call) is given for one attempt: the invocation,
/// the checkpoint it resumes from, its cancellation token and its fenced checkpointer.
struct HandlerInputs {
    inv: Invocation,
    resumed_from: Option<serde_json::Value>,
    cancel: CancellationToken,
    checkpointer: FencedCheckpointer,
}
