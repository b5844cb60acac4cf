//! One simulated run: build the world, create the jobs, start every process, inject the
//! faults, stop them, let the system go quiet, check the invariants.

use crate::faults::{self, FaultPlan};
use crate::invariants::{self, Evidence};
use crate::ledger::Ledger;
use crate::processes::{self, Counters, Shared};
use crate::violation::Violation;
use crate::workload::{self, Profile, Workload};
use crate::world::{ms, World, POOLS};
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use sundial_core::control::{self, Caller, Control, ControlSettings};
use sundial_model::outbound::{TargetAllow, TenantTargets};
use sundial_model::Execution;
use sundial_store::executions::{ExecStore, JobPage};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// What a run is made of.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The seed: every draw of the run is a function of it.
    pub seed: u64,
    /// Workload size.
    pub profile: Profile,
    /// Logical shards.
    pub shards: u32,
    /// ECS workers per pool.
    pub ecs_per_pool: usize,
    /// Lambda workers (event source mappings) per pool lane.
    pub lambda_per_lane: usize,
    /// Simulated minutes of quiet after the faults stop, before the check.
    pub quiet_minutes: i64,
    /// Whether faults are injected.
    pub faults: bool,
    /// Whether, among the faults, workers stall past their leases (zombies). CI's fresh seeds
    /// run with them since K10's fix; `--no-stalls` replays the seeds found without them.
    pub stalls: bool,
    /// A job id to explain in the outcome (its definition, operator actions, the fault plan
    /// and every execution), for diagnosing a violation.
    pub explain: Option<String>,
}

impl RunOptions {
    /// The default run of `seed`.
    pub fn new(seed: u64) -> Self {
        RunOptions {
            seed,
            profile: Profile::default(),
            shards: 16,
            ecs_per_pool: 2,
            lambda_per_lane: 1,
            quiet_minutes: 150,
            faults: true,
            stalls: true,
            explain: None,
        }
    }

    /// The command that replays this run.
    pub fn replay_command(&self) -> String {
        let p = &self.profile;
        let mut quiet = if self.quiet_minutes == 150 {
            String::new()
        } else {
            format!(" --quiet-minutes {}", self.quiet_minutes)
        };
        if self.faults && !self.stalls {
            quiet.push_str(" --no-stalls");
        }
        if self.profile.cancels_per_hour > 0 {
            quiet.push_str(&format!(" --cancels-per-hour {}", self.profile.cancels_per_hour));
        }
        format!(
            "cargo run -p sundial-sim --bin sim -- --seed {} --jobs {} --tenants {} --minutes {} --ops-per-hour {}{}{quiet}",
            self.seed, p.jobs, p.tenants, p.firing_minutes, p.ops_per_hour, if self.faults { "" } else { " --no-faults" }
        )
    }
}

/// What a run found.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The options it ran with.
    pub options: RunOptions,
    /// Executions at the end (every job, every class).
    pub executions: usize,
    /// Effects applied.
    pub effects: usize,
    /// AWS requests served.
    pub requests: u64,
    /// Broken promises (empty: clean).
    pub violations: Vec<Violation>,
    /// Fires left out of the check as a known gap (docs/simulation.md, "Known gaps").
    pub known_gaps: Vec<Violation>,
    /// The most messages sent for one execution, and the most copies live at once.
    pub max_messages: (u64, u64),
    /// How often a `fireOnce` batch's first claim settled its range with ordinary fires
    /// (docs/simulation.md, K6): fires canceled as covered by a batch, and batches that record
    /// instants they do not stand for.
    pub batch_settles: (usize, usize),
    /// Dependencies exercised (docs/dependencies.md): jobs waiting for another, executions that
    /// waited (noted `WaitingForUpstream`), and those whose deadline policy applied
    /// (`DependencyNotMet` or `DependencyDeadlineRun`).
    pub dependencies: (usize, usize, usize),
    /// The event source (docs/simulation.md, "events"): events, attempts sent, acknowledged,
    /// deduplicated, refused, failed or died, and of those ended between the claim and the put.
    pub events: crate::eventlog::EventCounts,
    /// Outcome events put on the bus, and how many repeated an `eventId` already sent.
    pub outcomes: (usize, usize),
    /// Jobs with `maxRuns`, and how many of them ended COMPLETED.
    pub max_runs: (usize, usize),
    /// Resumes that asked for a catch-up and succeeded, the executions that replayed a past
    /// fire (a catch-up's or a backfill's, or a held fire taken over: `CaughtUp`), and the
    /// operators' backfills that succeeded.
    pub catch_ups: (usize, usize, usize),
    /// The traces of the executions involved (timeline lines).
    pub traces: BTreeMap<String, Vec<String>>,
    /// A hash of every request and response of the run.
    pub trace_hash: u64,
    /// A hash of the run's outcome: every execution's status and full timeline (instants,
    /// actors, transitions, codes) and every effect (token, instant). The same seed gives the
    /// same outcome hash in every process.
    pub outcome_hash: u64,
    /// Simulated time covered (ms).
    pub simulated_ms: i64,
    /// Real time taken (ms).
    pub real_ms: u128,
    /// The explanation asked for with [`RunOptions::explain`].
    pub explanation: String,
    /// The drawable items the run drew ([`crate::coverage`]).
    pub coverage: std::collections::BTreeSet<&'static str>,
}

/// The simulated start instant of `seed`: within two days around the 2026 spring DST change
/// in Europe, so some runs cross it.
pub fn start_ms(seed: u64) -> i64 {
    let base = 1_774_728_000_000; // 2026-03-28T20:00:00Z
    base + crate::between(seed, 1, 0, 48 * 60) as i64 * 60_000
}

/// Runs `opts` on a fresh current-thread runtime with a paused clock.
pub fn run(opts: &RunOptions) -> Result<Outcome> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build()?;
    let real = Instant::now();
    // Everything runs on this thread: the SDK's jitter and ids come from its generator.
    fastrand::seed(opts.seed);
    let mut out = rt.block_on(run_async(opts))?;
    out.real_ms = real.elapsed().as_millis();
    Ok(out)
}

/// The deployment's tenant allowlist: every tenant may run the simulated handler in either pool,
/// start executions of the simulator's state machines and run its task definitions in the
/// shared cluster and network (each machine and definition tagged for one tenant, which the worker checks
/// before every start).
pub(crate) fn tenant_targets() -> TenantTargets {
    let (ecs_clusters, ecs_task_definitions) = crate::ecs::globs();
    let allow = TargetAllow {
        in_process: vec![crate::ledger::HANDLER.into()],
        pools: POOLS.iter().map(|p| p.to_string()).collect(),
        step_functions: vec![crate::stepfunctions::GLOB.into()],
        ecs_clusters: vec![ecs_clusters],
        ecs_task_definitions: vec![ecs_task_definitions],
        ecs_subnets: vec![crate::ecs::SUBNET.into()],
        ecs_security_groups: vec![crate::ecs::SECURITY_GROUP.into()],
        ..Default::default()
    };
    TenantTargets(BTreeMap::from([("*".to_string(), allow)]))
}

async fn run_async(opts: &RunOptions) -> Result<Outcome> {
    let seed = opts.seed;
    let start = start_ms(seed);
    let world = World::new(seed, start - 120_000, opts.shards, tenant_targets()).await?;
    let workload = workload::draw(seed, &opts.profile, start);
    let sh = Shared {
        world: world.clone(),
        seed,
        ledger: Ledger::default(),
        counters: Arc::new(Counters::default()),
        ops: Arc::new(Mutex::new(Vec::new())),
        stop: CancellationToken::new(),
        messages: Arc::new(Mutex::new(BTreeMap::new())),
        live: Arc::new(Mutex::new(BTreeMap::new())),
        events: crate::eventlog::EventLog::default(),
        writes: crate::fencing::WriteLog::default(),
        disrupted: Arc::new(Mutex::new(Vec::new())),
        tenant_limits: sundial_model::tenant::TenantLimits {
            default: None,
            per_tenant: workload.tenant_limit.iter().cloned().collect(),
        },
    };
    sh.writes.install(&world.aws, &world.cfg.executions_table);
    {
        let counts = sh.messages.clone();
        let writes = sh.writes.clone();
        world.aws.on_send(Arc::new(move |queue: &str, body: &str, lost: bool, now: i64| {
            if lost {
                writes.lost_send(body, now);
            } else {
                writes.sent(queue, body, now);
            }
            if let Some(id) = crate::world::execution_of_message(body) {
                if let Ok(mut g) = counts.lock() {
                    *g.entry(id).or_insert(0) += 1;
                }
            }
        }));
    }
    processes::until(&world, start).await;
    let tenants = workload.jobs.iter().map(|j| j.tenant.as_str());
    crate::stepfunctions::provision(&world, &sh.ledger, tenants.clone()).await?;
    crate::ecs::provision(&world, &sh.ledger, tenants)?;
    create_jobs(&world, &workload).await?;
    let names = worker_names(opts);
    let plan = fault_plan(opts, &workload);
    let mut tasks = vec![
        processes::tick(&sh, &plan, start),
        processes::reconciler(&sh, &plan, start),
        processes::operators(&sh, &workload),
        processes::sampler(&sh),
    ];
    if !workload.events.is_empty() {
        tasks.push(crate::events::source(&sh, &workload, &sh.events));
    }
    let workers = Arc::new(Mutex::new(Vec::new()));
    for (i, _) in names.iter().enumerate() {
        let h = start_worker(&sh, &names, &plan, i, 0)?;
        if let Ok(mut g) = workers.lock() {
            g.push(h);
        }
    }
    let restart: Arc<dyn Fn(usize, u32) -> Option<JoinHandle<()>> + Send + Sync> = {
        let (sh, names, plan) = (sh.clone(), names.clone(), plan.clone());
        Arc::new(move |i, g| start_worker(&sh, &names, &plan, i, g).ok())
    };
    let stall_names = names.iter().map(|(n, _, _)| n.clone()).collect();
    tasks.push(processes::faults(&sh, &plan, stall_names, workers.clone(), restart));
    let plan_text = format!("{plan:#?}");
    if std::env::var("SUNDIAL_SIM_DEBUG").is_ok() {
        for st in &plan.stalls {
            eprintln!("stall {} at {} for {} ms", names[st.worker].0, ms(st.at_ms), st.len_ms);
        }
        for k in &plan.kills {
            eprintln!("kill {} at {} for {} ms", names[k.worker].0, ms(k.at_ms), k.down_ms);
        }
    }
    let end = workload.end_ms + opts.quiet_minutes * 60_000;
    processes::until(&world, workload.end_ms).await;
    world.aws.set_faults(Default::default());
    processes::until(&world, end).await;
    sh.stop.cancel();
    for t in tasks {
        t.abort();
    }
    if let Ok(g) = workers.lock() {
        for h in g.iter() {
            h.abort();
        }
    }
    tokio::task::yield_now().await;
    let max_skew_ms = plan.skews.iter().map(|s| s.abs()).max().unwrap_or(0);
    let (aimed, everyone): (Vec<_>, Vec<_>) = plan.net.iter().partition(|n| n.faults.only_process.is_some());
    let tick_throttles: Vec<(i64, i64)> = aimed.iter().map(|n| (n.from_ms, n.to_ms)).collect();
    let mut disturbed: Vec<(i64, i64)> = everyone.iter().map(|n| (n.from_ms, n.to_ms)).collect();
    disturbed.extend(plan.stalls.iter().map(|st| (st.at_ms, st.at_ms + faults::STALL_AIM_MS + st.len_ms)));
    disturbed.extend(plan.kills.iter().map(|k| (k.at_ms, k.at_ms + k.down_ms)));
    disturbed.extend(plan.reconciler_outages.iter().copied());
    let windows = (&plan.tick_outages[..], &disturbed[..], &tick_throttles[..]);
    let mut out = check(opts, &sh, &workload, end, windows, max_skew_ms).await?;
    out.violations.extend(crate::stepfunctions::violations(&sh.ledger, |arn| world.aws.sfn_execution(arn)));
    let fencing = crate::fencing::summary(&sh.writes.writes(), &sh.ledger.invocations(), plan.stalls.len());
    out.coverage = crate::coverage::drawn(&workload, &plan);
    let (saves, resumes) = sh.ledger.checkpoints();
    out.explanation = format!(
        "{fencing}{}{}{}{}",
        crate::checkpoints::summary(&saves, &resumes),
        crate::coverage::line(&out.coverage),
        crate::stepfunctions::summary(&sh.ledger, &world),
        out.explanation
    );
    if opts.explain.is_some() {
        out.explanation = format!("{}\nfault plan: {plan_text}", out.explanation);
    }
    Ok(out)
}

/// The faults of a run of `opts` over `workload` (none without faults).
pub fn fault_plan(opts: &RunOptions, workload: &Workload) -> FaultPlan {
    let workers = worker_names(opts).len();
    if opts.faults {
        let mut plan = faults::draw(opts.seed, start_ms(opts.seed) + 60_000, workload.end_ms, workers);
        if !opts.stalls {
            plan.stalls.clear();
        }
        plan
    } else {
        FaultPlan { skews: vec![0; workers], ..FaultPlan::default() }
    }
}

/// What a run of `opts` draws, without running it: its workload and its faults.
pub fn draw(opts: &RunOptions) -> (Workload, FaultPlan) {
    let workload = workload::draw(opts.seed, &opts.profile, start_ms(opts.seed));
    let plan = fault_plan(opts, &workload);
    (workload, plan)
}

/// The workers of a run: (name, pool, kind) with kind "ecs" or "lambda:main"/"lambda:low".
fn worker_names(opts: &RunOptions) -> Vec<(String, String, String)> {
    let mut v = Vec::new();
    for pool in POOLS {
        for i in 0..opts.ecs_per_pool {
            v.push((format!("ecs-{pool}-{i}"), pool.to_string(), "ecs".to_string()));
        }
        for lane in ["main", "low"] {
            for i in 0..opts.lambda_per_lane {
                v.push((format!("lambda-{pool}-{lane}-{i}"), pool.to_string(), format!("lambda:{lane}")));
            }
        }
    }
    v
}

fn start_worker(
    sh: &Shared,
    names: &[(String, String, String)],
    plan: &FaultPlan,
    i: usize,
    generation: u32,
) -> Result<JoinHandle<()>> {
    let (name, pool, kind) = &names[i];
    let skew = plan.skews.get(i).copied().unwrap_or(0);
    let w = processes::worker(sh, &format!("{name}.{generation}"), pool, skew)?;
    let q = &sh.world.queues[pool];
    Ok(match kind.as_str() {
        "ecs" => processes::ecs(sh, w),
        "lambda:low" => processes::lambda(
            sh,
            w,
            q.low_url.clone(),
            q.arn.replace(&sh.world.cfg.queue_name(pool), &format!("{}-low", sh.world.cfg.queue_name(pool))),
        ),
        _ => processes::lambda(sh, w, q.url.clone(), q.arn.clone()),
    })
}

async fn create_jobs(world: &World, w: &Workload) -> Result<()> {
    // An operator sets the platform's resource limits first (a job may name only a defined one).
    let ops_tenant = "sim-operators";
    let settings =
        ControlSettings { operator_tenants: vec![ops_tenant.into()], ..ControlSettings::default() };
    let ctl = Control::new(world.ctx("api"), settings);
    if w.jobs.iter().any(|j| !j.def.resources.is_empty()) {
        let caller = Caller { tenant: ops_tenant.into(), principal: "sim".into() };
        for (name, limit, per_tenant) in crate::resources::LIMITS {
            control::resource_limits::put(&ctl, &caller, name, limit, per_tenant, world.now())
                .await
                .with_context(|| format!("setting the limit of {name}"))?;
        }
    }
    for j in &w.jobs {
        let caller = Caller { tenant: j.tenant.clone(), principal: "sim".into() };
        control::jobs::create(&ctl, &caller, &j.job_id, j.def.clone(), world.now())
            .await
            .with_context(|| format!("creating {}/{}", j.tenant, j.job_id))?;
    }
    Ok(())
}

/// A window of simulated time `[from, to)` (ms).
type Window = (i64, i64);

/// The checks of what a run holds while it runs: its checkpoints ([`crate::checkpoints`])
/// and its resource limits ([`crate::resources`]); with the run's `resources:` line.
fn held_checks(
    sh: &Shared,
    executions: &BTreeMap<usize, Vec<Execution>>,
    invocations: &[crate::ledger::Invoked],
) -> (Vec<Violation>, String) {
    let (saves, resumes) = sh.ledger.checkpoints();
    let mut out = crate::checkpoints::check(&saves, &resumes);
    let uses = executions
        .values()
        .flatten()
        .filter(|e| !e.definition.resources.is_empty())
        .map(|e| (e.id(), (e.tenant.clone(), e.definition.resources.clone())))
        .collect();
    let disrupted = sh.disrupted.lock().map(|d| d.clone()).unwrap_or_default();
    out.extend(crate::resources::check(invocations, &uses, &disrupted));
    let mut line = crate::resources::summary(invocations, &uses, &disrupted);
    if let Some((tenant, limit)) = &sh.tenant_limits.per_tenant.iter().next() {
        let tenant_of = executions.values().flatten().map(|e| (e.id(), e.tenant.clone())).collect();
        let (v, most) =
            crate::resources::check_tenant(invocations, &tenant_of, (tenant, **limit), &disrupted);
        out.extend(v);
        line.push_str(&format!("tenant limit: {tenant} at most {most} running at once of {limit}\n"));
    }
    (out, line)
}

async fn check(
    opts: &RunOptions,
    sh: &Shared,
    w: &Workload,
    end: i64,
    (plan_outages, disturbed, tick_throttles): (&[Window], &[Window], &[Window]),
    max_skew_ms: i64,
) -> Result<Outcome> {
    let world = &sh.world;
    let ctx = world.ctx("checker");
    let mut executions: BTreeMap<usize, Vec<Execution>> = BTreeMap::new();
    let mut total = 0;
    let mut final_jobs = BTreeMap::new();
    for (i, j) in w.jobs.iter().enumerate() {
        let es = all_for_job(&ctx.execs(), &j.tenant, &j.job_id).await?;
        total += es.len();
        executions.insert(i, es);
        if j.def.max_runs.is_some() {
            let job = sundial_store::jobs::get_job(&ctx.ddb, &world.cfg, &j.tenant, &j.job_id).await?;
            let runs = ctx.execs().runs(&j.tenant, &j.job_id, true).await?;
            final_jobs.insert(i, (job.map(|j| j.state), runs));
        }
    }
    let mut watermarks = Vec::new();
    for s in 0..world.cfg.shards {
        let p = sundial_store::watermarks::position(&ctx.ddb, &world.cfg.jobs_table, s).await?;
        watermarks.push(p.map(|p| p.through));
    }
    // Every task has ended by now: those that exited 0 are their fires' effects.
    crate::ecs::settle(&sh.ledger, &world.aws);
    let effects = sh.ledger.effects();
    let mut h = sundial_hash::Fnv1a::new();
    for e in executions.values().flatten() {
        h = h.write(format!("{}|{:?}|{:?}", e.id(), e.status, e.timeline).as_bytes());
    }
    for (id, e) in &effects {
        h = h.write(format!("{id}|{}|{}|{}", e.token, e.at_ms, e.attempt).as_bytes());
    }
    let outcome_hash = h.finish();
    let ops = sh.ops.lock().map(|g| g.clone()).unwrap_or_default();
    let messages = sh.messages.lock().map(|g| g.clone()).unwrap_or_default();
    let live = sh.live.lock().map(|g| g.clone()).unwrap_or_default();
    // Distinct reports per execution: a transport repeat (an SDK retry of a PutEvents whose
    // answer was lost) carries the same detail and is one report.
    let mut missed_reports: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    let mut outcome_events = Vec::new();
    for e in world.aws.events() {
        if e.detail_type != "FireMissed" {
            if let Ok(d) = serde_json::from_str::<serde_json::Value>(&e.detail) {
                let id = d.get("executionId").and_then(|v| v.as_str()).unwrap_or_default().to_string();
                let attempt = d.get("attempt").and_then(|v| v.as_u64()).unwrap_or(0);
                let event_id = d.get("eventId").and_then(|v| v.as_str()).unwrap_or_default().to_string();
                outcome_events.push((e.detail_type.clone(), id, attempt, event_id));
            }
        }
        if e.detail_type == "FireMissed" {
            let id = serde_json::from_str::<serde_json::Value>(&e.detail)
                .ok()
                .and_then(|d| d.get("executionId").and_then(|v| v.as_str()).map(str::to_string))
                .unwrap_or_default();
            missed_reports.entry(id).or_default().insert(e.detail.clone());
        }
    }
    let missed_events: BTreeMap<String, u64> =
        missed_reports.into_iter().map(|(id, reports)| (id, reports.len() as u64)).collect();
    let attempts = sh.events.attempts();
    let mut claims = BTreeMap::new();
    for (i, e) in w.events.iter().enumerate() {
        let Some(key) = &e.key else { continue };
        let j = &w.jobs[e.job];
        if let Some(t) = crate::events::claimed_instant(&ctx.ddb, &world.cfg, &j.tenant, &j.job_id, key).await
        {
            claims.insert(i, t);
        }
    }
    let ev = Evidence {
        workload: w,
        ops: &ops,
        executions: &executions,
        effects: &effects,
        watermarks: &watermarks,
        now_ms: end,
        messages: &messages,
        live: &live,
        tick_outages: plan_outages,
        disturbed,
        tick_throttles,
        max_skew_ms,
        missed_events: &missed_events,
        outcome_events: &outcome_events,
        events: &attempts,
        claims: &claims,
        final_jobs: &final_jobs,
    };
    let mut found = invariants::check(&ev);
    // Custody (K8, fixed): a violation, except on a REPLACE job's wait path (K2, open).
    for (_, _, mut v) in sh.writes.custody() {
        if v.execution.as_deref().is_some_and(|id| invariants::replace_job(&ev, id)) {
            v.invariant = "known gap K2";
        }
        found.push(v);
    }
    // Runs of one job overlap only where both executions' own definitions allow it: an edit
    // may change the policy, and each fire is admitted under the definition it was put with.
    let invocations = sh.ledger.invocations();
    let serial: std::collections::BTreeSet<String> = executions
        .values()
        .flatten()
        .filter(|e| {
            matches!(
                e.definition.concurrency,
                sundial_model::ConcurrencyPolicy::Serialize | sundial_model::ConcurrencyPolicy::Forbid
            )
        })
        .map(|e| e.id())
        .collect();
    found.extend(crate::fencing::check_overlaps(&invocations, &serial.iter().map(String::as_str).collect()));
    let (mut violations, known_gaps): (Vec<Violation>, Vec<Violation>) =
        found.into_iter().partition(|v| !v.invariant.starts_with("known gap"));
    let (ecs_violations, ecs_counts) =
        crate::ecs::check(&sh.ledger, &world.aws, executions.values().flatten(), max_skew_ms);
    violations.extend(ecs_violations);
    violations.extend(crate::fencing::check_writes(&sh.writes.writes(), max_skew_ms));
    violations.extend(crate::fencing::check_invocations(&invocations));
    let (held, resources_line) = held_checks(sh, &executions, &invocations);
    violations.extend(held);
    let max_messages =
        (messages.values().copied().max().unwrap_or(0), live.values().copied().max().unwrap_or(0));
    let all = || executions.values().flatten();
    let covered = all()
        .filter(|e| {
            e.last_error.as_ref().is_some_and(|(c, _)| c == sundial_model::retry::codes::COVERED_BY_BATCH)
        })
        .count();
    let batch_settles = (covered, all().filter(|e| !e.missed_except.is_empty()).count());
    let has_code = |e: &Execution, code: &str| e.timeline.iter().any(|t| t.code.as_deref() == Some(code));
    let dependencies = (
        w.jobs.iter().filter(|j| !j.def.after.is_empty()).count(),
        all().filter(|e| has_code(e, "WaitingForUpstream")).count(),
        all().filter(|e| has_code(e, "DependencyNotMet") || has_code(e, "DependencyDeadlineRun")).count(),
    );
    let catch_ups = replay_counts(&ops, all());
    let mut traces = BTreeMap::new();
    for v in violations.iter().take(20) {
        if let Some(id) = &v.execution {
            if let Some(e) = executions.values().flatten().find(|e| e.id() == *id) {
                traces.insert(id.clone(), e.timeline.iter().map(|t| format!("{t:?}")).collect());
            }
        }
    }
    let mut explanation = crate::ecs::summary(&ecs_counts, &world.aws);
    explanation.push_str(&resources_line);
    if let Some(job) = &opts.explain {
        if let Some((i, plan)) = w.jobs.iter().enumerate().find(|(_, j)| &j.job_id == job) {
            explanation.push_str(&format!("job {job}: {:#?}\n", plan.def));
            for o in ops.iter().filter(|o| o.job == i) {
                explanation.push_str(&format!(
                    "op {:?} {} .. {} ok={} v={:?}\n",
                    o.kind,
                    ms(o.started_ms),
                    ms(o.ended_ms),
                    o.ok,
                    o.version
                ));
            }
            for a in attempts.iter().filter(|a| w.events[a.event].job == i) {
                let plan = &w.events[a.event];
                explanation.push_str(&format!(
                    "event {} key={:?} delivery {} attempt {} at {} sent at={:?}: {:?}{}\n",
                    a.event,
                    plan.key,
                    a.delivery,
                    a.attempt,
                    ms(a.started_ms),
                    a.at_ms.map(ms),
                    a.answer,
                    if a.after_claim { " (between claim and put)" } else { "" }
                ));
            }
            for e in executions.get(&i).into_iter().flatten() {
                explanation.push_str(&format!(
                    "exec {} {:?} range={:?} except={:?} v={} {:?}\n",
                    e.scheduled_at,
                    e.status,
                    e.missed_range,
                    e.missed_except,
                    e.def_version,
                    e.definition.concurrency
                ));
                for t in &e.timeline {
                    explanation.push_str(&format!("    {} {t:?}\n", ms(t.at)));
                }
            }
        }
    }
    Ok(Outcome {
        explanation,
        options: opts.clone(),
        executions: total,
        effects: effects.len(),
        requests: world.aws.stats().requests.values().sum(),
        violations,
        known_gaps,
        max_messages,
        batch_settles,
        dependencies,
        events: sh.events.counts(w.events.len()),
        outcomes: (
            outcome_events.len(),
            outcome_events.len()
                - outcome_events.iter().map(|o| &o.3).collect::<std::collections::BTreeSet<_>>().len(),
        ),
        max_runs: (
            final_jobs.len(),
            final_jobs.values().filter(|(s, _)| *s == Some(sundial_model::JobState::Completed)).count(),
        ),
        catch_ups,
        traces,
        trace_hash: world.aws.trace_hash(),
        outcome_hash,
        simulated_ms: end - start_ms(opts.seed),
        real_ms: 0,
        coverage: Default::default(),
    })
}

/// Resumes that caught up, executions that replayed a past fire (a catch-up's or a backfill's,
/// or a held fire taken over) and operators' backfills that succeeded ([`Outcome::catch_ups`]).
fn replay_counts<'a>(
    ops: &[crate::processes::OpRecord],
    all: impl Iterator<Item = &'a Execution>,
) -> (usize, usize, usize) {
    use crate::workload::OpKind;
    use sundial_core::control::catch_up::CatchUp;
    let caught_up = ops
        .iter()
        .filter(|o| o.ok && matches!(o.kind, OpKind::Resume { catch_up, .. } if catch_up != CatchUp::None));
    let backfills = ops.iter().filter(|o| o.ok && matches!(o.kind, OpKind::Backfill { .. })).count();
    let replayed = all
        .filter(|e| {
            e.timeline.first().and_then(|t| t.code.as_deref()) == Some(sundial_model::BACKFILL_CODE)
                || e.is_caught_up()
        })
        .count();
    (caught_up.count(), replayed, backfills)
}

async fn all_for_job(execs: &ExecStore, tenant: &str, job: &str) -> Result<Vec<Execution>> {
    let mut out = Vec::new();
    let mut after_ms = None;
    loop {
        let page = JobPage { status: None, oldest_first: true, limit: 1_000, after_ms, until_ms: None };
        let got = execs.list_for_job(tenant, job, &page).await?;
        out.extend(got.items);
        match got.next {
            Some(n) => after_ms = Some(n),
            None => return Ok(out),
        }
    }
}

/// Prints an outcome the way a failing test wants it: the violations, the traces, the replay.
pub fn describe(o: &Outcome) -> String {
    let mut s = format!(
        "seed {}: {} executions, {} effects, {} known-gap fires, {} AWS requests, messages per execution ≤ {} sent / {} live, batches settled: {} fires covered / {} with excepted instants, dependencies: {} jobs wait / {} fires waited / {} past their deadline, events: {} planned / {} sent / {} acknowledged / {} deduplicated / {} refused / {} failed or died ({} between claim and put), outcome events: {} sent / {} repeats of an id, maxRuns: {} jobs / {} completed, catch-up: {} resumes / {} backfills / {} fires replayed, {} simulated min in {} ms, outcome {:016x}, trace {:016x}\n",
        o.options.seed,
        o.executions,
        o.effects,
        o.known_gaps.len(),
        o.requests,
        o.max_messages.0,
        o.max_messages.1,
        o.batch_settles.0,
        o.batch_settles.1,
        o.dependencies.0,
        o.dependencies.1,
        o.dependencies.2,
        o.events.events,
        o.events.sent,
        o.events.acked,
        o.events.deduplicated,
        o.events.refused,
        o.events.failed,
        o.events.after_claim,
        o.outcomes.0,
        o.outcomes.1,
        o.max_runs.0,
        o.max_runs.1,
        o.catch_ups.0,
        o.catch_ups.2,
        o.catch_ups.1,
        o.simulated_ms / 60_000,
        o.real_ms,
        o.outcome_hash,
        o.trace_hash
    );
    for v in o.violations.iter().take(20) {
        s.push_str(&format!(
            "  VIOLATION {}: {} {}\n",
            v.invariant,
            v.detail,
            v.execution.clone().unwrap_or_default()
        ));
        if let Some(t) = v.execution.as_ref().and_then(|id| o.traces.get(id)) {
            for line in t {
                s.push_str(&format!("      {line}\n"));
            }
        }
    }
    for v in o.known_gaps.iter().take(10) {
        s.push_str(&format!("  {}: {} {}\n", v.invariant, v.detail, v.execution.clone().unwrap_or_default()));
    }
    if o.violations.len() > 20 {
        s.push_str(&format!("  ... and {} more\n", o.violations.len() - 20));
    }
    if !o.violations.is_empty() {
        s.push_str(&format!("  replay: {}\n", o.options.replay_command()));
    }
    s.push_str(&o.explanation);
    let _ = ms(0);
    s
}
