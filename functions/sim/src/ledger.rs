//! The simulated target and its effects ledger.
//!
//! Every simulated job runs the in-process handler [`HANDLER`]. Like a real target that moves
//! money, it is fenced and idempotent: it refuses a fencing token older than the highest it has
//! seen for the execution (a zombie's write), and applies the effect of an execution at most
//! once, keyed by the execution id (docs/idempotency.md: the per-item idempotency that holds under
//! every failure). The ledger it keeps is what the invariants read: one effect per execution, the
//! fire instants each effect covers (a `fireOnce` batch covers its missed range), the definition
//! version it ran (`params.v`), and every refused stale token.
//!
//! A `stepFunctions` job's effect is its Step Functions execution in the simulated AWS, which
//! the ledger learns of as it starts ([`Ledger::step_functions_started`]); an `ecs` job's is
//! its task, which the ledger learns of as it is created ([`Ledger::ecs_task_created`]) and
//! whose effect is applied once the run is over and every task has ended
//! ([`crate::ecs::settle`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sundial_core::execution::target::in_process::{BoxFuture, Handler, HandlerContext};
use sundial_core::execution::target::Invocation;
use sundial_model::retry::RunError;

/// The handler name every simulated job targets.
pub const HANDLER: &str = "sim-effect";

/// One applied effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effect {
    /// Tenant.
    pub tenant: String,
    /// Job.
    pub job_id: String,
    /// The execution's scheduled instant (ms).
    pub scheduled_ms: i64,
    /// The fire instants it stands for (ms): its own, or a `fireOnce` batch's missed range.
    pub covers: (i64, i64),
    /// The fencing token it was applied under.
    pub token: u64,
    /// The definition version it ran (`params.v`), if the job carries one.
    pub version: Option<i64>,
    /// The simulated instant it was applied.
    pub at_ms: i64,
    /// The attempt that applied it.
    pub attempt: u32,
}

/// One invocation of the simulated target, as it arrived (before the target's own fencing):
/// what a naive target, without a fence or an idempotency key, would run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invoked {
    /// The execution (`job@ms`).
    pub execution: String,
    /// The fencing token it carried.
    pub token: u64,
    /// The attempt it carried.
    pub attempt: u32,
    /// The worker process that invoked it.
    pub process: String,
    /// When (simulated ms).
    pub at_ms: i64,
    /// When its work ended (ms): at once if the target refused it, else when the work ended or
    /// was cancelled, or, if its worker was killed meanwhile, when it would have ended.
    pub end_ms: i64,
}

#[derive(Debug, Default)]
struct State {
    /// Every invocation of the in-process target, in arrival order.
    invocations: Vec<Invoked>,
    /// Runs in progress: (process, execution) → the instant the run's work ends (ms).
    running: BTreeMap<(String, String), i64>,
    effects: BTreeMap<String, Effect>,
    /// Step Functions executions started for each execution id, in start order.
    step_functions: BTreeMap<String, Vec<sundial_simaws::SfnExecution>>,
    /// Executions started while an earlier one of the same fire ran or had succeeded.
    /// ECS tasks created, in creation order, as they were then.
    ecs_tasks: Vec<sundial_simaws::EcsTask>,
    highest: BTreeMap<String, u64>,
    stale_refused: u64,
    repeats: u64,
    runs: u64,
    /// Checkpoint commits tried and checkpoints handed to runs ([`crate::checkpoints`]).
    saves: Vec<crate::checkpoints::Save>,
    resumes: Vec<crate::checkpoints::Resume>,
}

impl State {
    /// Sets the end of `process`'s latest invocation of `execution`.
    fn set_end(&mut self, process: &str, execution: &str, end_ms: i64) {
        if let Some(i) =
            self.invocations.iter_mut().rev().find(|i| i.process == process && i.execution == execution)
        {
            i.end_ms = end_ms;
        }
    }
}

/// The effects ledger (shared by every simulated worker).
#[derive(Debug, Default, Clone)]
pub struct Ledger(Arc<Mutex<State>>);

/// What the target did with one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The effect was applied now.
    Now,
    /// It had been applied before (an idempotent repeat).
    Already,
    /// The token is older than one already seen: refused.
    Stale,
}

impl Ledger {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records that `execution` was seen with `token`; false if the token is stale.
    pub fn fence(&self, execution: &str, token: u64) -> bool {
        let mut s = self.lock();
        s.runs += 1;
        let h = s.highest.entry(execution.to_string()).or_insert(0);
        if token < *h {
            s.stale_refused += 1;
            return false;
        }
        *h = token;
        true
    }

    /// Applies `effect` for `execution` once.
    pub fn apply(&self, execution: &str, effect: Effect) -> Applied {
        let mut s = self.lock();
        if s.highest.get(execution).is_some_and(|h| effect.token < *h) {
            s.stale_refused += 1;
            return Applied::Stale;
        }
        if s.effects.contains_key(execution) {
            s.repeats += 1;
            return Applied::Already;
        }
        s.effects.insert(execution.to_string(), effect);
        Applied::Now
    }

    /// Records a Step Functions execution (the effect of a `stepFunctions` job's fire, see
    /// [`crate::stepfunctions`]): its input is the invocation. One that will succeed is the
    /// fire's effect, applied at the instant it closes. Whether one started beside a live one of
    /// its fire is judged once the run is over ([`crate::stepfunctions::violations`]), with each
    /// execution as it ended: a stop at a timeout or a cancel closes one ABORTED.
    ///
    /// `id` and `effect` are the fire and the effect the execution stands for, read from its
    /// input by [`crate::stepfunctions::record`]: the ledger does not know how Step Functions
    /// carries an invocation (that module builds on the ledger, not the other way round).
    pub fn step_functions_started(&self, x: &sundial_simaws::SfnExecution, id: String, effect: Effect) {
        let mut s = self.lock();
        s.step_functions.entry(id.clone()).or_default().push(x.clone());
        if x.failure.is_none() {
            s.effects.entry(id).or_insert(effect);
        }
    }

    /// The Step Functions executions of each fire, in the order they started.
    pub fn step_functions(&self) -> BTreeMap<String, Vec<sundial_simaws::SfnExecution>> {
        self.lock().step_functions.clone()
    }

    /// Records an ECS task created (for a fire of an `ecs` job, see [`crate::ecs`]).
    pub fn ecs_task_created(&self, t: &sundial_simaws::EcsTask) {
        self.lock().ecs_tasks.push(t.clone());
    }

    /// ECS tasks created, in creation order, as they were then.
    pub fn ecs_tasks(&self) -> Vec<sundial_simaws::EcsTask> {
        self.lock().ecs_tasks.clone()
    }

    /// Applies the effect of an ECS task whose container exited 0 for `execution`, unless one
    /// stands already (the first task to end is the fire's effect).
    pub fn ecs_effect(&self, execution: &str, effect: Effect) {
        self.lock().effects.entry(execution.to_string()).or_insert(effect);
    }

    /// Every applied effect, by execution id.
    pub fn effects(&self) -> BTreeMap<String, Effect> {
        self.lock().effects.clone()
    }

    /// Records an invocation as it arrives.
    pub fn invoked(&self, inv: Invoked) {
        self.lock().invocations.push(inv);
    }

    /// The worker processes running a target call now whose work goes on for at least
    /// `min_ms` more, in name order: where a stall makes a zombie.
    pub fn busy(&self, now_ms: i64, min_ms: i64) -> Vec<String> {
        let s = self.lock();
        let mut out: Vec<String> = s
            .running
            .iter()
            .filter(|(_, end)| **end - now_ms >= min_ms)
            .map(|((p, _), _)| p.clone())
            .collect();
        out.dedup();
        out
    }

    fn run_starts(&self, process: &str, execution: &str, end_ms: i64) {
        let mut s = self.lock();
        s.running.insert((process.to_string(), execution.to_string()), end_ms);
        s.set_end(process, execution, end_ms);
    }

    fn run_ends(&self, process: &str, execution: &str, now_ms: i64) {
        let mut s = self.lock();
        s.running.remove(&(process.to_string(), execution.to_string()));
        s.set_end(process, execution, now_ms);
    }

    /// Every invocation of the in-process target, in arrival order.
    pub fn invocations(&self) -> Vec<Invoked> {
        self.lock().invocations.clone()
    }

    /// Every checkpoint commit tried and every checkpoint handed to a run, in order.
    pub fn checkpoints(&self) -> (Vec<crate::checkpoints::Save>, Vec<crate::checkpoints::Resume>) {
        let s = self.lock();
        (s.saves.clone(), s.resumes.clone())
    }

    /// (runs, stale tokens refused, idempotent repeats).
    pub fn counts(&self) -> (u64, u64, u64) {
        let s = self.lock();
        (s.runs, s.stale_refused, s.repeats)
    }
}

/// The fire an invocation is for, keyed like `Execution::id()` (`job@ms`, children suffixed:
/// the invocation's id is that, qualified by the tenant), and the effect it stands for, applied
/// at `at_ms`.
pub fn effect_of(inv: &Invocation, at_ms: i64) -> (String, Effect) {
    let id = inv.execution_id.split_once(':').map_or(inv.execution_id.as_str(), |(_, rest)| rest).to_string();
    let scheduled_ms = inv.scheduled_at.timestamp_millis();
    let covers = inv
        .missed_range
        .as_ref()
        .map_or((scheduled_ms, scheduled_ms), |r| (r.from.timestamp_millis(), r.to.timestamp_millis()));
    let effect = Effect {
        tenant: inv.tenant.clone(),
        job_id: inv.job_id.clone(),
        scheduled_ms,
        covers,
        token: inv.fencing_token,
        version: inv.params.get("v").and_then(serde_json::Value::as_i64),
        at_ms,
        attempt: inv.attempt,
    };
    (id, effect)
}

/// The simulated handler: fence, work for a seeded time (cooperatively cancellable), maybe
/// fail (seeded, retryable), then apply the effect.
#[derive(Clone)]
pub struct SimHandler {
    /// The ledger.
    pub ledger: Ledger,
    /// The run's seed (each attempt's draws are a function of it and the attempt).
    pub seed: u64,
    /// Work time range (ms).
    pub work_ms: (u64, u64),
    /// Failure probability per attempt (‰).
    pub fail_permille: u64,
    /// The simulated clock (ms), for the effect's instant.
    pub now_ms: Arc<dyn Fn() -> i64 + Send + Sync>,
    /// The worker process it runs in.
    pub process: String,
}

impl std::fmt::Debug for SimHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimHandler")
            .field("work_ms", &self.work_ms)
            .field("fail_permille", &self.fail_permille)
            .finish()
    }
}

impl Handler for SimHandler {
    fn run(&self, ctx: HandlerContext) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(async move {
            let inv = &ctx.invocation;
            let (id, effect) = effect_of(inv, 0);
            self.ledger.invoked(Invoked {
                execution: id.clone(),
                token: inv.fencing_token,
                attempt: inv.attempt,
                process: self.process.clone(),
                at_ms: (self.now_ms)(),
                end_ms: (self.now_ms)(),
            });
            let key = sundial_hash::fnv1a(
                format!("{}#{}#{}", inv.execution_id, inv.fencing_token, inv.attempt).as_bytes(),
            );
            if !self.ledger.fence(&id, inv.fencing_token) {
                return Err(RunError::retryable("stale", "a newer claim has run this execution"));
            }
            // A job's own work time (`params.workMs`, a slow job's), else the handler's.
            let range =
                inv.params.get("workMs").and_then(|r| Some((r.get(0)?.as_u64()?, r.get(1)?.as_u64()?)));
            let (lo, hi) = range.unwrap_or(self.work_ms);
            let work = crate::between(self.seed, key, lo, hi);
            // A checkpointing job commits its progress every few seconds and resumes from what
            // it is handed (crate::checkpoints).
            let every =
                inv.params.get("checkpointEveryMs").and_then(serde_json::Value::as_u64).filter(|e| *e > 0);
            let mut done = 0;
            if every.is_some() {
                let from = ctx.resumed_from.as_ref().and_then(crate::checkpoints::parse);
                done = from.map_or(0, |(_, d)| d.min(work));
                self.ledger.lock().resumes.push(crate::checkpoints::Resume {
                    execution: id.clone(),
                    token: inv.fencing_token,
                    at_ms: (self.now_ms)(),
                    from,
                });
            }
            self.ledger.run_starts(&self.process, &id, (self.now_ms)() + (work - done) as i64);
            let cancelled = loop {
                let step = every.map_or(work - done, |e| e.min(work - done));
                if step == 0 {
                    break false;
                }
                tokio::select! {
                    biased;
                    _ = ctx.cancelled() => break true,
                    _ = tokio::time::sleep(Duration::from_millis(step)) => {}
                };
                done += step;
                if every.is_none() || done >= work {
                    continue;
                }
                let answer = ctx.checkpoint(crate::checkpoints::value(inv.fencing_token, done)).await;
                self.ledger.lock().saves.push(crate::checkpoints::Save {
                    execution: id.clone(),
                    token: inv.fencing_token,
                    done_ms: done,
                    answered_ms: (self.now_ms)(),
                    ok: answer.is_ok(),
                });
                // A refused commit (a newer claim holds the execution) cancels the run: it
                // stops at this safe point. Any other error leaves the progress uncommitted.
                if ctx.is_cancelled() {
                    break true;
                }
            };
            self.ledger.run_ends(&self.process, &id, (self.now_ms)());
            if cancelled {
                return Err(RunError::cancelled());
            }
            if crate::chance(self.seed, key ^ 0xFA11, self.fail_permille) {
                return Err(RunError::retryable("simulated", "the simulated target failed this attempt"));
            }
            let effect = Effect { at_ms: (self.now_ms)(), ..effect };
            match self.ledger.apply(&id, effect) {
                Applied::Stale => Err(RunError::retryable("stale", "a newer claim has run this execution")),
                Applied::Now | Applied::Already => Ok(()),
            }
        })
    }
}
