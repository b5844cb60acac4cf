//! The simulated processes: the tick (every minute, in process), the reconciler (every
//! minute), ECS workers (the real poll loop), Lambda workers (the real SQS handler behind a
//! simulated event source mapping), the operators (the control plane's own functions) and the
//! fault controller. Each is a task on the one current-thread runtime; killing a process aborts
//! its task, which drops its future at whatever await point it was in.

use crate::faults::{inside, FaultPlan};
use crate::ledger::{Ledger, SimHandler, HANDLER};
use crate::workload::{OpKind, Workload};
use crate::world::{ms, SimClock, World};
use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sundial_core::config::{TickSettings, WorkerSettings};
use sundial_core::control::catch_up::CatchUp;
use sundial_core::control::{self, Caller, Control, ControlError, ControlSettings};
use sundial_core::execution::metrics::{ExecMetrics, MetricsSink};
use sundial_core::execution::target::in_process::Handlers;
use sundial_core::execution::worker::Worker;
use sundial_core::reconcile::{reconcile, ReconcileOptions};
use sundial_core::trigger::scan::{ScanOptions, SendClock};
use sundial_core::trigger::tick::run_tick;
use sundial_model::{ExecStatus, JobState};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Sleeps until simulated instant `t_ms`.
pub async fn until(world: &World, t_ms: i64) {
    let now = world.aws.now_ms();
    if t_ms > now {
        tokio::time::sleep(Duration::from_millis((t_ms - now) as u64)).await;
    }
}

/// What an operator action did, as the invariants need it.
#[derive(Debug, Clone)]
pub struct OpRecord {
    /// Which job.
    pub job: usize,
    /// What.
    pub kind: OpKind,
    /// When the call started (ms).
    pub started_ms: i64,
    /// When it returned (ms).
    pub ended_ms: i64,
    /// Whether it succeeded.
    pub ok: bool,
    /// The version marker an edit set.
    pub version: Option<i64>,
    /// A cancel's execution, and whether it was running (the cancel flag set for its runner,
    /// rather than CANCELED at once).
    pub canceled: Option<(String, bool)>,
}

/// Counters the simulated workers' metrics sink keeps.
#[derive(Debug, Default)]
pub struct Counters {
    /// `FireMissed` reports by execution id (worker side).
    pub missed: Mutex<BTreeMap<String, u64>>,
}

impl MetricsSink for Counters {
    fn record(&self, m: &ExecMetrics, _now_ms: i64) {
        if m.fires_missed > 0 {
            if let Ok(mut g) = self.missed.lock() {
                *g.entry(m.execution_id.clone()).or_insert(0) += m.fires_missed;
            }
        }
    }
}

/// Everything the processes share.
#[derive(Clone)]
pub struct Shared {
    /// The deployment.
    pub world: World,
    /// The run's seed.
    pub seed: u64,
    /// The effects ledger.
    pub ledger: Ledger,
    /// Worker metrics.
    pub counters: Arc<Counters>,
    /// Operator actions done.
    pub ops: Arc<Mutex<Vec<OpRecord>>>,
    /// Fires at: ends every process.
    pub stop: CancellationToken,
    /// Messages sent per execution id (every queue), counted by the simulated SQS's send hook.
    pub messages: Arc<Mutex<BTreeMap<String, u64>>>,
    /// The most copies of one execution's message live at once (sampled every simulated 30 s).
    pub live: Arc<Mutex<BTreeMap<String, u64>>>,
    /// Every attempt of the event source.
    pub events: crate::eventlog::EventLog,
    /// Every write to an execution item (for the claims and stale-write checks).
    pub writes: crate::fencing::WriteLog,
    /// Every stall and kill as it happened: the process (a name prefix) and the window.
    pub disrupted: Arc<Mutex<Vec<crate::resources::Disruption>>>,
    /// The workers' per-tenant running limits (the workload's `tenant_limit`).
    pub tenant_limits: sundial_model::tenant::TenantLimits,
}

/// Samples the queues every 30 simulated seconds: the most copies of each execution's message
/// live at once (finding 3: waits must not multiply copies).
pub fn sampler(sh: &Shared) -> JoinHandle<()> {
    let sh = sh.clone();
    tokio::spawn(async move {
        while !sh.stop.is_cancelled() {
            tokio::time::sleep(Duration::from_secs(30)).await;
            let mut now: BTreeMap<String, u64> = BTreeMap::new();
            // A send whose answer was lost is sent again by the SDK: its first copy is the
            // transport's duplicate, not the product's.
            for body in sh.world.aws.live_message_bodies_answered() {
                if let Some(id) = crate::world::execution_of_message(&body) {
                    *now.entry(id).or_insert(0) += 1;
                }
            }
            if let Ok(mut g) = sh.live.lock() {
                for (id, n) in now {
                    let e = g.entry(id).or_insert(0);
                    *e = (*e).max(n);
                }
            }
        }
    })
}

fn caller(tenant: &str) -> Caller {
    Caller { tenant: tenant.into(), principal: "sim-operator".into() }
}

/// The tick: every minute (plus a seeded EventBridge delay of up to 3 s), unless in an outage.
/// Each tick is its own task, so a slow tick overlaps the next, as on Lambda.
pub fn tick(sh: &Shared, plan: &FaultPlan, from_ms: i64) -> JoinHandle<()> {
    let (sh, outages) = (sh.clone(), plan.tick_outages.clone());
    tokio::spawn(async move {
        let ctx = Arc::new(sh.world.ctx(crate::faults::TICK_PROCESS));
        let settings = TickSettings::default();
        let mut minute = from_ms.div_euclid(60_000) + 1;
        let mut n = 0u64;
        while !sh.stop.is_cancelled() {
            let at = minute * 60_000 + crate::between(sh.seed, 300_000 + n, 0, 3_000) as i64;
            until(&sh.world, at).await;
            if !inside(&outages, at) {
                let (ctx, settings, world) = (ctx.clone(), settings.clone(), sh.world.clone());
                tokio::spawn(async move {
                    let now = world.now();
                    let clock_world = world.clone();
                    let opts = ScanOptions {
                        actor: format!("tick:{minute}"),
                        send_clock: Some(SendClock(Arc::new(move || clock_world.now()))),
                        ..Default::default()
                    };
                    let run = run_tick(&ctx, None, &settings, now, &opts);
                    let _ = tokio::time::timeout(Duration::from_secs(60), run).await;
                });
            }
            minute += 1;
            n += 1;
        }
    })
}

/// The reconciler: every minute at :30, unless in an outage.
pub fn reconciler(sh: &Shared, plan: &FaultPlan, from_ms: i64) -> JoinHandle<()> {
    let (sh, outages) = (sh.clone(), plan.reconciler_outages.clone());
    tokio::spawn(async move {
        let ctx = sh.world.ctx("reconciler");
        let events = sh.world.clients("reconciler").events;
        // Auto-pauses (docs/outcomes.md) through the control plane's pause, as the tick wires it.
        let pause: std::sync::Arc<dyn sundial_core::execution::outcome::AutoPause> = std::sync::Arc::new(
            sundial_core::control::outcomes::ControlPause::new(sundial_core::control::Control::new(
                sh.world.ctx("reconciler"),
                sundial_core::control::ControlSettings::default(),
            )),
        );
        let mut minute = from_ms.div_euclid(60_000) + 1;
        while !sh.stop.is_cancelled() {
            let at = minute * 60_000 + 30_000;
            until(&sh.world, at).await;
            if !inside(&outages, at) {
                let opts = ReconcileOptions {
                    actor: format!("reconciler:{minute}"),
                    events: Some(events.clone()),
                    pause: Some(pause.clone()),
                    ..Default::default()
                };
                let run = reconcile(&ctx, sh.world.now(), &opts);
                let _ = tokio::time::timeout(Duration::from_secs(60), run).await;
            }
            minute += 1;
        }
    })
}

/// A worker process named `name` for `pool`, its clock `skew_ms` off.
pub fn worker(sh: &Shared, name: &str, pool: &str, skew_ms: i64) -> anyhow::Result<Arc<Worker>> {
    let clients = sh.world.clients(name);
    let mut settings = WorkerSettings::new(name, pool);
    settings.tenant_limits = sh.tenant_limits.clone();
    let aws = sh.world.aws.clone();
    let handler = SimHandler {
        ledger: sh.ledger.clone(),
        seed: sh.seed,
        work_ms: (20, 2_000),
        fail_permille: 50,
        now_ms: Arc::new(move || aws.now_ms()),
        process: name.to_string(),
    };
    let handlers = Handlers::new().with(HANDLER, handler);
    let clock = SimClock::new(sh.world.aws.clone(), skew_ms);
    let w = Worker::new(sh.world.cfg.clone(), settings, &clients, handlers, clock, sh.counters.clone())?;
    Ok(Arc::new(w))
}

/// The ECS poll loop of `worker`, until `stop`.
pub fn ecs(sh: &Shared, worker: Arc<Worker>) -> JoinHandle<()> {
    let stop = sh.stop.clone();
    tokio::spawn(async move {
        let opts = sundial_worker::long_poll::EcsOptions {
            slots: 8,
            shutdown_grace: Duration::from_secs(30),
            wait_secs: 20,
            diagnostic_handlers: false,
        };
        let _ = sundial_worker::long_poll::run(worker, opts, stop).await;
    })
}

/// A Lambda worker behind a simulated SQS event source mapping on `queue_url`: receive up to
/// ten messages, invoke the real handler with them as an `SqsEvent` (stopping three seconds
/// before a 120 s function timeout, as the runtime would), delete the ones not reported as
/// failures.
pub fn lambda(sh: &Shared, worker: Arc<Worker>, queue_url: String, queue_arn: String) -> JoinHandle<()> {
    let sh = sh.clone();
    tokio::spawn(async move {
        let sqs = worker.sqs().clone();
        while !sh.stop.is_cancelled() {
            let got = sqs
                .receive_message()
                .queue_url(&queue_url)
                .max_number_of_messages(10)
                .wait_time_seconds(20)
                .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
                .send()
                .await;
            let msgs = match got {
                Ok(o) => o.messages.unwrap_or_default(),
                Err(_) => {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            if msgs.is_empty() {
                continue;
            }
            let mut event = SqsEvent::default();
            for m in &msgs {
                let mut r = SqsMessage::default();
                r.message_id = m.message_id.clone();
                r.receipt_handle = m.receipt_handle.clone();
                r.body = m.body.clone();
                r.event_source_arn = Some(queue_arn.clone());
                r.attributes = m
                    .attributes
                    .clone()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k.as_str().to_string(), v))
                    .collect();
                event.records.push(r);
            }
            let stop = CancellationToken::new();
            let timer = {
                let stop = stop.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_secs(117)).await;
                    stop.cancel();
                })
            };
            let resp = sundial_worker::lambda::handle_event(&worker, event, &stop).await;
            timer.abort();
            let failed: std::collections::BTreeSet<String> =
                resp.batch_item_failures.iter().map(|f| f.item_identifier.clone()).collect();
            let mut del = sqs.delete_message_batch().queue_url(&queue_url);
            let mut any = false;
            for (i, m) in msgs.iter().enumerate() {
                if failed.contains(m.message_id().unwrap_or_default()) {
                    continue;
                }
                if let Ok(e) = aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
                    .id(format!("d{i}"))
                    .receipt_handle(m.receipt_handle().unwrap_or_default())
                    .build()
                {
                    del = del.entries(e);
                    any = true;
                }
            }
            if any {
                let _ = del.send().await;
            }
        }
    })
}

/// The operators: each action at its instant, each in its own task (so actions close in time
/// race each other as well as the tick).
pub fn operators(sh: &Shared, workload: &Workload) -> JoinHandle<()> {
    let (sh, workload) = (sh.clone(), workload.clone());
    tokio::spawn(async move {
        let ctl = Arc::new(Control::new(sh.world.ctx("api"), ControlSettings::default()));
        let versions = Arc::new(Mutex::new(vec![1i64; workload.jobs.len()]));
        for (k, op) in workload.ops.iter().enumerate() {
            until(&sh.world, op.at_ms).await;
            if sh.stop.is_cancelled() {
                break;
            }
            let (sh, ctl, versions, w, op) =
                (sh.clone(), ctl.clone(), versions.clone(), workload.clone(), op.clone());
            tokio::spawn(async move {
                let rec = act(&sh, &ctl, &w, &versions, k as u64, &op.kind, op.job).await;
                if let Ok(mut g) = sh.ops.lock() {
                    g.push(rec);
                }
            });
        }
    })
}

async fn act(
    sh: &Shared,
    ctl: &Control,
    w: &Workload,
    versions: &Mutex<Vec<i64>>,
    k: u64,
    kind: &OpKind,
    job: usize,
) -> OpRecord {
    let plan = &w.jobs[job];
    let who = caller(&plan.tenant);
    let started_ms = sh.world.aws.now_ms();
    let now = ms(started_ms);
    let mut version = None;
    let mut canceled = None;
    let mut kind = kind.clone();
    let ok = match &kind.clone() {
        OpKind::Pause => {
            control::jobs::set_state(ctl, &who, &plan.job_id, JobState::Paused, None, now).await.is_ok()
        }
        OpKind::Resume { catch_up, pace_secs } => {
            let (ok, asked) = resume(sh, ctl, &who, &plan.job_id, *catch_up, *pace_secs).await;
            kind = OpKind::Resume { catch_up: asked, pace_secs: *pace_secs };
            ok
        }
        OpKind::Delete => {
            control::jobs::set_state(ctl, &who, &plan.job_id, JobState::Deleted, None, now).await.is_ok()
        }
        OpKind::TriggerNow => control::executions::trigger_now(ctl, &who, &plan.job_id, now).await.is_ok(),
        OpKind::Cancel => {
            canceled = cancel_newest(ctl, &who, &plan.job_id, now).await;
            canceled.is_some()
        }
        OpKind::Backfill { back_ms, len_ms, pace_secs } => {
            let from = now - chrono::Duration::milliseconds(*back_ms);
            let to = from + chrono::Duration::milliseconds(*len_ms);
            let req = control::executions::BackfillRequest { from, to, pace_secs: *pace_secs, params: None };
            control::executions::backfill(ctl, &who, &plan.job_id, &req, now).await.is_ok()
        }
        OpKind::Edit { schedule } => {
            let v = versions.lock().map(|mut g| {
                g[job] += 1;
                g[job]
            });
            let v = v.unwrap_or(0);
            version = Some(v);
            let _ = k;
            match control::jobs::get(ctl, &who, &plan.job_id).await {
                Ok(cur) => {
                    // An edit that does not change the schedule keeps the one the job has now
                    // (an earlier edit's), not the workload's first: the invariants expect that.
                    let current = &cur.definition.schedule;
                    let s = schedule.unwrap_or_else(|| crate::workload::schedule_index(current).unwrap_or(0));
                    let mut def =
                        crate::workload::definition(sh.seed, job as u64, s, v, w.start_ms, w.end_ms);
                    // An edit keeps what the job waits for (the workload's, drawn once).
                    def.after = plan.def.after.clone();
                    def.dependency_deadline_secs = plan.def.dependency_deadline_secs;
                    def.on_dependency_deadline = plan.def.on_dependency_deadline;
                    // And whether it takes events.
                    def.events = plan.def.events.clone();
                    // And its target (a tenant's state machine or task definition is drawn once,
                    // with the tenant), with the timeout and attempts drawn for it.
                    def.target = plan.def.target.clone();
                    def.resources = plan.def.resources.clone();
                    def.timeout_secs = plan.def.timeout_secs;
                    def.retry.max_attempts = plan.def.retry.max_attempts;
                    control::jobs::update(ctl, &who, &plan.job_id, cur.version, def, now).await.is_ok()
                }
                Err(_) => false,
            }
        }
    };
    OpRecord { job, kind, started_ms, ended_ms: sh.world.aws.now_ms(), ok, version, canceled }
}

/// Resumes `job_id` replaying what `catch_up` asks, as an operator would: a window with more
/// fires than a catch-up may replay (400 on `catchUp`) is resumed without one, and a call that
/// failed otherwise (throttled, the pool saturated, the network) is tried again, up to three
/// times, a second apart (the same call finds the recorded window: nothing runs twice).
/// Whether it succeeded, and the catch-up it finally asked for.
async fn resume(
    sh: &Shared,
    ctl: &Control,
    who: &Caller,
    job_id: &str,
    catch_up: CatchUp,
    pace_secs: u32,
) -> (bool, CatchUp) {
    let mut asked = catch_up;
    for _ in 0..3 {
        let now = ms(sh.world.aws.now_ms());
        match control::catch_up::resume(ctl, who, job_id, None, asked, pace_secs, now).await {
            Ok(_) => return (true, asked),
            Err(ControlError::Invalid(v)) if v.field == "catchUp" && asked != CatchUp::None => {
                asked = CatchUp::None;
            }
            Err(e) if e.is_retryable() => tokio::time::sleep(Duration::from_secs(1)).await,
            Err(_) => return (false, asked),
        }
    }
    (false, asked)
}

/// Cancels `job_id`'s newest RUNNING execution, else its newest READY one (possibly queued
/// ahead), through the API: the execution and whether it was running, if one was canceled.
async fn cancel_newest(
    ctl: &Control,
    who: &Caller,
    job_id: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<(String, bool)> {
    use control::executions::{cancel, list_for_job, JobExecFilter};
    for status in [ExecStatus::Running, ExecStatus::Ready] {
        let f = JobExecFilter { status: Some(status), limit: Some(1), ..Default::default() };
        let Some(e) = list_for_job(ctl, who, job_id, &f).await.ok()?.items.into_iter().next() else {
            continue;
        };
        let id = e.id();
        let got = cancel(ctl, who, &id, now).await;
        if std::env::var("SUNDIAL_SIM_DEBUG").is_ok() {
            eprintln!(
                "cancel {id} ({status:?}) at {now}: {:?}",
                got.as_ref().map(|(e, done)| (e.status, done))
            );
        }
        return got.ok().map(|(_, done)| (id, !done));
    }
    None
}

/// One worker stall (`faults::Stall`), aimed where it makes a zombie: at the first second of
/// [`crate::faults::STALL_AIM_MS`] from its instant when a worker is in the middle of a long
/// target call (the seed picks which, if several), else at the drawn worker (`drawn`) at the
/// window's end. A stall drawn to wake on a takeover ends soon after another worker takes over
/// a run it held.
async fn stall(sh: Shared, s: crate::faults::Stall, i: usize, drawn: String) {
    let debug = std::env::var("SUNDIAL_SIM_DEBUG").is_ok();
    let mut from = s.at_ms;
    let who = loop {
        let busy = sh.ledger.busy(from, 15_000);
        if !busy.is_empty() {
            break busy[crate::between(sh.seed, 96_000 + i as u64, 0, busy.len() as u64 - 1) as usize]
                .clone();
        }
        if from >= s.at_ms + crate::faults::STALL_AIM_MS || sh.stop.is_cancelled() {
            break drawn;
        }
        from += 1_000;
        until(&sh.world, from).await;
    };
    let end = from + s.len_ms;
    sh.world.aws.stall(&who, end);
    if let Ok(mut d) = sh.disrupted.lock() {
        d.push((who.clone(), from, end));
    }
    if debug {
        eprintln!("stalled {who} at {} until {}", crate::world::ms(from), crate::world::ms(end));
    }
    if !s.wake_on_takeover {
        return;
    }
    let mut t = from;
    while t < end && !sh.stop.is_cancelled() {
        t += 1_000;
        until(&sh.world, t).await;
        if let Some(at) = sh.writes.taken_over_from(&who, from) {
            let wake = (at + crate::faults::WAKE_AFTER_TAKEOVER_MS).clamp(t, end);
            if debug {
                eprintln!(
                    "{who}: taken over at {}, wakes at {}",
                    crate::world::ms(at),
                    crate::world::ms(wake)
                );
            }
            sh.world.aws.stall(&who, wake);
            return;
        }
    }
}

/// The fault controller: applies each network window, and kills and restarts workers.
/// `restart(i)` starts worker `i` again and returns its task.
pub fn faults(
    sh: &Shared,
    plan: &FaultPlan,
    stall_names: Vec<String>,
    workers: Arc<Mutex<Vec<JoinHandle<()>>>>,
    restart: Arc<dyn Fn(usize, u32) -> Option<JoinHandle<()>> + Send + Sync>,
) -> JoinHandle<()> {
    let (sh, plan) = (sh.clone(), plan.clone());
    tokio::spawn(async move {
        let mut events: Vec<(i64, u8, usize)> = Vec::new();
        for (i, w) in plan.net.iter().enumerate() {
            events.push((w.from_ms, 0, i));
            events.push((w.to_ms, 1, i));
        }
        for (i, k) in plan.kills.iter().enumerate() {
            events.push((k.at_ms, 2, i));
            events.push((k.at_ms + k.down_ms, 3, i));
        }
        for (i, s) in plan.stalls.iter().enumerate() {
            events.push((s.at_ms, 4, i));
        }
        events.sort();
        let mut generation: BTreeMap<usize, u32> = BTreeMap::new();
        for (t, what, i) in events {
            until(&sh.world, t).await;
            if sh.stop.is_cancelled() {
                break;
            }
            match what {
                4 => {
                    let drawn = format!("{}.", stall_names[plan.stalls[i].worker]);
                    tokio::spawn(stall(sh.clone(), plan.stalls[i], i, drawn));
                }
                0 => sh.world.aws.set_faults(plan.net[i].faults.clone()),
                1 => sh.world.aws.set_faults(Default::default()),
                2 => {
                    let w = plan.kills[i].worker;
                    if let Ok(mut d) = sh.disrupted.lock() {
                        d.push((format!("{}.", stall_names[w]), t, t + plan.kills[i].down_ms));
                    }
                    if let Ok(g) = workers.lock() {
                        if let Some(h) = g.get(w) {
                            h.abort();
                        }
                    }
                }
                _ => {
                    let w = plan.kills[i].worker;
                    let g = generation.entry(w).or_insert(0);
                    *g += 1;
                    let running = workers.lock().ok().and_then(|v| v.get(w).map(JoinHandle::is_finished));
                    if running == Some(true) {
                        if let Some(h) = restart(w, *g) {
                            if let Ok(mut v) = workers.lock() {
                                v[w] = h;
                            }
                        }
                    }
                }
            }
        }
    })
}
