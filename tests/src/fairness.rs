//! The noisy-neighbour scenario of docs/priority.md, shared by `tests/tests/priority.rs` (which
//! asserts the bound on a count) and `bench-fairness` (which reports start lags).
//!
//! A noisy tenant has `noisy` queued low-priority executions; real workers (the ECS poll loop
//! over the emulator's SQS and DynamoDB) are busy with them; then a quiet tenant's on-time
//! normal-priority fires arrive, one every `quiet_every`. For each quiet fire the scenario
//! records how many noisy executions *started* between its enqueue and its own start (counted
//! by the handlers, so it does not depend on timing) and its start lag (wall clock, for the
//! bench). With `lanes: false` (the baseline) the noisy backlog is sent to the main queue, as
//! it was before priorities existed.

use crate::fixtures;
use crate::TestEnv;
use anyhow::{Context, Result};
use chrono::{DateTime, Duration as ChronoDuration, Utc};
use futures_util::stream::{self, StreamExt, TryStreamExt};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sundial_core::execution::target::in_process::{BoxFuture, Handler, HandlerContext, Handlers};
use sundial_model::priority::{Lane, Priority};
use sundial_model::retry::RunError;
use sundial_model::Target;
use sundial_store::queue::{Outgoing, PoolQueues};

/// What to run.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Queued low-priority executions of the noisy tenant.
    pub noisy: usize,
    /// How long each noisy execution runs (ms).
    pub noisy_ms: u64,
    /// ECS workers polling the pool.
    pub workers: usize,
    /// Slots per worker.
    pub slots: usize,
    /// On-time fires of the quiet tenant.
    pub quiet_fires: usize,
    /// Time between two quiet fires.
    pub quiet_every: Duration,
    /// Noisy executions that must have started before the first quiet fire (workers busy).
    pub warmup: u64,
    /// Priority lanes on (the mechanism) or off (the baseline: the noisy backlog in the main
    /// queue).
    pub lanes: bool,
    /// Guard: give up waiting for the quiet fires after this long.
    pub within: Duration,
}

/// One quiet fire.
#[derive(Debug, Clone, Copy)]
pub struct QuietSample {
    /// Noisy executions started between its enqueue and its start.
    pub noisy_between: u64,
    /// Start lag: handler start − scheduled instant (ms).
    pub lag_ms: i64,
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Each quiet fire, in fire order.
    pub quiet: Vec<QuietSample>,
    /// Noisy executions started by the end.
    pub noisy_started: u64,
    /// ReceiveMessage requests of all workers.
    pub receives: u64,
    /// Messages those receives returned.
    pub received: u64,
    /// Seconds spent putting and queuing the noisy backlog.
    pub setup_secs: f64,
}

/// Counts noisy starts.
struct Noisy {
    started: Arc<AtomicU64>,
    ms: u64,
}

impl Handler for Noisy {
    fn run(&self, _ctx: HandlerContext) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(async move {
            self.started.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(self.ms)).await;
            Ok(())
        })
    }
}

/// A quiet fire's start: its job id, the noisy count then, and the instant.
type Start = (String, u64, DateTime<Utc>);

/// Records, for each quiet fire (by job id `quiet-{i}`), the noisy count and instant at its start.
struct Quiet {
    noisy: Arc<AtomicU64>,
    seen: Arc<Mutex<Vec<Start>>>,
}

impl Handler for Quiet {
    fn run(&self, ctx: HandlerContext) -> BoxFuture<'_, Result<(), RunError>> {
        let at = Utc::now();
        let n = self.noisy.load(Ordering::SeqCst);
        let job = ctx.invocation.job_id.clone();
        if let Ok(mut s) = self.seen.lock() {
            s.push((job, n, at));
        }
        Box::pin(async { Ok(()) })
    }
}

/// Runs the scenario on `env` (pool `default`).
pub async fn run(env: &TestEnv, sc: &Scenario) -> Result<Outcome> {
    let noisy = Arc::new(AtomicU64::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let queues = PoolQueues::new(env.clients.sqs.clone(), env.cfg.clone());
    let store = fixtures::store(env);

    // GIVEN the noisy tenant's backlog: low-priority executions, due now, queued.
    let setup = std::time::Instant::now();
    let now = Utc::now();
    let noisy_def = fixtures::definition(Target::in_process("noisy")).with_priority(Priority::Low);
    let base = now - ChronoDuration::seconds(5);
    let execs: Vec<_> = (0..sc.noisy)
        .map(|i| {
            fixtures::ready_execution(
                "noisy",
                "bulk",
                noisy_def.clone(),
                base - ChronoDuration::milliseconds(i as i64),
                now,
            )
        })
        .collect();
    stream::iter(execs.iter().map(|e| {
        let store = store.clone();
        async move { store.put_new(e).await.context("putting a noisy execution") }
    }))
    .buffer_unordered(32)
    .try_collect::<Vec<_>>()
    .await?;
    let msgs: Vec<Outgoing> = execs
        .iter()
        .map(|e| {
            let mut o = Outgoing::for_execution(e, now);
            if !sc.lanes {
                o.message.lane = Lane::Main;
            }
            o
        })
        .collect();
    stream::iter(msgs.chunks(100))
        .map(|c| queues.send_all("default", c))
        .buffer_unordered(8)
        .try_collect::<Vec<()>>()
        .await
        .context("queuing the noisy backlog")?;
    let setup_secs = setup.elapsed().as_secs_f64();

    // AND workers busy with it
    let handlers = || {
        Handlers::new()
            .with("noisy", Noisy { started: noisy.clone(), ms: sc.noisy_ms })
            .with("quiet", Quiet { noisy: noisy.clone(), seen: seen.clone() })
    };
    let mut pollers = Vec::new();
    for w in 0..sc.workers {
        let (worker, _) = fixtures::worker_with(env, fixtures::settings(&format!("fair-{w}")), handlers())?;
        pollers.push(fixtures::spawn_poller(worker, sc.slots));
    }
    let warm = tokio::time::Instant::now() + sc.within;
    while noisy.load(Ordering::SeqCst) < sc.warmup.min(sc.noisy as u64) {
        anyhow::ensure!(tokio::time::Instant::now() < warm, "workers did not start the noisy backlog");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // WHEN the quiet tenant's on-time fires arrive in the main queue
    let quiet_def = fixtures::definition(Target::in_process("quiet"));
    let mut enqueued: Vec<Start> = Vec::new();
    for i in 0..sc.quiet_fires {
        let at = Utc::now();
        let job = format!("quiet-{i}");
        let e = fixtures::ready_execution("quiet", &job, quiet_def.clone(), at, at);
        store.put_new(&e).await?;
        let before = noisy.load(Ordering::SeqCst);
        queues.send_all("default", &[Outgoing::for_execution(&e, at)]).await?;
        enqueued.push((job, before, at));
        tokio::time::sleep(sc.quiet_every).await;
    }
    let deadline = tokio::time::Instant::now() + sc.within;
    while seen.lock().map(|s| s.len()).unwrap_or(0) < sc.quiet_fires {
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "quiet fires did not all start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut receives = 0;
    let mut received = 0;
    for (stop, h) in pollers {
        stop.cancel();
        let stats = h.await??;
        receives += stats.receives.load(Ordering::Relaxed);
        received += stats.received.load(Ordering::Relaxed);
    }
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    let quiet = enqueued
        .iter()
        .map(|(job, before, at)| {
            let (_, n, started) = seen.iter().find(|(j, _, _)| j == job).cloned().unwrap_or_default();
            QuietSample {
                noisy_between: n.saturating_sub(*before),
                lag_ms: (started - *at).num_milliseconds(),
            }
        })
        .collect();
    Ok(Outcome { quiet, noisy_started: noisy.load(Ordering::SeqCst), receives, received, setup_secs })
}
