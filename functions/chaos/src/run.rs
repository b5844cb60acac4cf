//! The chaos run: the trigger and several worker processes through the fault proxy, on the real
//! clock, while a seeded controller breaks things; then the checker over what is left.
//!
//! Timeline of one run (compressed: jobs fire every few seconds instead of every minute):
//! ```text
//! set-up ─ jobs created ─┬─ ticks every `tick_every` (some doubled, some crashing mid-scan) ─────┐
//!                        │        ╳ outage: no tick at all, spanning a minute boundary ╳         │
//!                        ├─ workers: SIGKILL + restart, SIGSTOP past the lease + SIGCONT,       │
//!                        │  one worker's clock skewed; every request through the fault proxy   │
//!                        └─ firing ends (schedules have an `end`) ─ ticks until one completes ─ drain
//!                                                         ─ workers stopped ─ check ─ report
//! ```
//! The outage must span a minute boundary to matter: a tick queues every fire up to the end of
//! its minute (`horizon_secs = 0` here), so only fires of the *next* minute wait for the first
//! tick after the outage, and come out of the misfire path (`fireAll`).
//!
//! Everything random (fault decisions, which worker dies when, doubled and crashing ticks,
//! handler work times) comes from the seed; the interleaving itself comes from the OS.

use crate::check::{self, Evidence, Report};
use crate::effect::{EffectStore, Entry, Journal, HANDLER};
use crate::emulator;
use crate::prng::SplitMix;
use crate::proxy::{FaultPlan, Proxy};
use anyhow::{bail, Context, Result};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Duration as CDuration, Utc};
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use sundial_core::aws::Clients;
use sundial_core::config::Config;
use sundial_core::model::{Execution, JobDefinition, RetryPolicy, Target};
use sundial_core::queue::PoolQueues;
use sundial_core::reconcile::{reconcile, ReconcileError, ReconcileOptions};
use sundial_core::schedule::{MisfirePolicy, Schedule, ScheduleSpec};
use sundial_core::store::{items, jobs};
use sundial_core::trigger::plan::CatchUpBudget;
use sundial_core::trigger::scan::{scan_shards, CrashPoint, ScanOptions};
use sundial_core::Ctx;
use tokio::process::{Child, Command};
use tokio::sync::Mutex;

/// The tenant every chaos job belongs to.
pub const TENANT: &str = "chaos";

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Seed of every random choice.
    pub seed: u64,
    /// Jobs.
    pub jobs: u32,
    /// How long jobs fire (at least; extended so the outage and 10 s after it fit).
    pub firing: Duration,
    /// Each job's period (`rate(N seconds)`).
    pub rate_secs: u32,
    /// Worker processes.
    pub workers: usize,
    /// Executions one worker runs at once.
    pub slots: u32,
    /// Time between ticks.
    pub tick_every: Duration,
    /// How far ahead a tick queues fires (`ScanOptions::horizon_secs`; production uses 60 with
    /// a tick a minute, the compressed run less with a tick every few seconds).
    pub horizon_secs: u32,
    /// Logical shards.
    pub shards: u32,
    /// Length of the tick outage.
    pub outage: Duration,
    /// Normal running before the outage (at least).
    pub outage_after: Duration,
    /// Ticks (per thousand) run twice at once.
    pub duplicate_tick_permille: u32,
    /// Ticks (per thousand) that crash at a random point of the scan.
    pub crashing_tick_permille: u32,
    /// Range of the pause between two worker faults.
    pub fault_every: (Duration, Duration),
    /// Clock offset of worker 0 (ms).
    pub skew_ms: i64,
    /// Lease length (s).
    pub lease_secs: u32,
    /// Takeover margin (ms).
    pub skew_margin_ms: i64,
    /// After firing ends, how long the drain waits without any execution finishing before it
    /// gives up (the checker then lists what is not final).
    pub drain: Duration,
    /// The proxy's fault mix.
    pub plan: FaultPlan,
    /// Handler work time range (ms).
    pub work_ms: (u64, u64),
    /// The executable to start workers from (`<exe> worker`).
    pub worker_exe: PathBuf,
    /// Keep the tables, queues and run directory afterwards.
    pub keep: bool,
    /// Chance (per mille) that a message the thief takes is silently dropped (deleted unread).
    pub loss_permille: u32,
    /// Chance (per mille) that a message the thief takes is moved to the DLQ (an overflowing
    /// DLQ: the execution is still open, only the reconciler brings it back).
    pub dlq_permille: u32,
    /// How often the thief takes a batch of up to 10 messages.
    pub thief_every: Duration,
    /// Undecodable job items planted in the due index (one per shard, round robin).
    pub poison_items: u32,
    /// Chance (per mille) that a tick dies mid-range: it scans only the first shards.
    pub tick_dies_permille: u32,
    /// How often the reconciler runs.
    pub reconcile_every: Duration,
    /// The reconciler's grace (compressed like everything else).
    pub reconcile_grace: Duration,
}

impl RunConfig {
    /// Defaults for `seed`, `jobs` and `minutes` of firing, workers started from `worker_exe`.
    pub fn new(seed: u64, jobs: u32, minutes: f64, worker_exe: PathBuf) -> Self {
        RunConfig {
            seed,
            jobs,
            firing: Duration::from_secs_f64((minutes * 60.0).max(10.0)),
            rate_secs: 5,
            workers: 3,
            slots: 4,
            tick_every: Duration::from_secs(3),
            horizon_secs: 15,
            shards: 4,
            outage: Duration::from_secs(40),
            outage_after: Duration::from_secs(10),
            duplicate_tick_permille: 300,
            crashing_tick_permille: 50,
            fault_every: (Duration::from_secs(6), Duration::from_secs(14)),
            skew_ms: 2_500,
            lease_secs: 3,
            skew_margin_ms: 1_000,
            drain: Duration::from_secs(60),
            plan: FaultPlan::STORMY,
            work_ms: (100, 900),
            worker_exe,
            keep: false,
            loss_permille: 100,
            dlq_permille: 50,
            thief_every: Duration::from_secs(2),
            poison_items: 2,
            tick_dies_permille: 100,
            reconcile_every: Duration::from_secs(3),
            reconcile_grace: Duration::from_secs(10),
        }
    }
}

/// What the message thief and the reconciler did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DeliveryStats {
    /// Messages silently dropped (received and deleted unread).
    pub lost: u64,
    /// Messages moved to the pool's DLQ while their execution was open.
    pub dead_lettered: u64,
    /// Undecodable job items planted in the due index.
    pub poison_items: u64,
    /// Reconciler runs.
    pub reconcile_runs: u64,
    /// Messages the reconciler re-sent.
    pub resent: u64,
    /// Reconciler runs that failed (injected faults; the next run repeats).
    pub reconcile_failed: u64,
}

/// What the trigger side did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TickStats {
    /// Scans run (a doubled tick counts two).
    pub scans: u64,
    /// Ticks run as two concurrent scans.
    pub duplicate_ticks: u64,
    /// Scans told to crash mid-way.
    pub crashed_scans: u64,
    /// Scans that failed for another reason (injected faults beyond the SDK's retries).
    pub failed_scans: u64,
    /// Ticks not run because of the outage.
    pub skipped_in_outage: u64,
    /// Ticks that died mid-range: they scanned only the first shards.
    pub died_mid_range: u64,
    /// Executions created by the scans.
    pub created: u64,
    /// Puts absorbed by an existing execution (doubled ticks, repeated work after crashes).
    pub duplicate_puts: u64,
    /// Missed fires (late past the threshold) the scans planned.
    pub missed: u64,
    /// How long scans took (ms).
    pub scan_ms: check::Lag,
}

/// What the controller did to the workers.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FleetStats {
    /// SIGKILLs (each followed by a restart).
    pub kills: u64,
    /// SIGSTOPs past the lease (each followed by SIGCONT).
    pub pauses: u64,
    /// Worker processes started in all.
    pub starts: u64,
}

/// The outcome of a run.
#[derive(Debug, Clone, Serialize)]
pub struct RunOutcome {
    /// The seed.
    pub seed: u64,
    /// Jobs.
    pub jobs: u32,
    /// Firing phase (s).
    pub firing_secs: f64,
    /// The outage, as ms offsets from the run's first fire.
    pub outage_ms: (i64, i64),
    /// Faults the proxy injected, by kind (plus `latency`, `requests`).
    pub faults: BTreeMap<String, u64>,
    /// Trigger side.
    pub ticks: TickStats,
    /// Worker side.
    pub fleet: FleetStats,
    /// Message loss, DLQ overflow, poison items, and the reconciler.
    pub delivery: DeliveryStats,
    /// Lease takeovers the workers reported.
    pub worker_takeovers: u64,
    /// Times a worker found its clock too far off to judge leases.
    pub clock_skew_reports: u64,
    /// The checker's report.
    #[serde(skip)]
    pub report: Report,
    /// The checker's violations (empty = promise kept).
    pub violations: Vec<String>,
    /// Wall time of the whole run (s).
    pub wall_secs: f64,
}

impl RunOutcome {
    /// The outcome as JSON (the checker's lists reduced to counts).
    pub fn to_json(&self) -> serde_json::Value {
        let r = &self.report;
        let lag = |l: &check::Lag| serde_json::json!({"n": l.count, "minMs": l.min_ms, "p50Ms": l.p50_ms, "p99Ms": l.p99_ms, "maxMs": l.max_ms});
        let mut v = serde_json::to_value(self).unwrap_or_default();
        v["report"] = serde_json::json!({
            "firesExpected": r.fires_expected,
            "executions": r.executions,
            "lost": r.missing.len(),
            "unscheduled": r.unexpected.len(),
            "notFinal": r.not_final.len(),
            "byStatus": r.by_status,
            "doubledEffects": r.doubled_effects.len(),
            "effectsApplied": r.effects_applied,
            "duplicatesAbsorbed": r.duplicates_absorbed,
            "staleAccepted": r.stale_accepted.len(),
            "staleRefusedResource": r.stale_refused_resource,
            "staleRefusedStore": r.stale_refused_store,
            "takeovers": r.takeovers,
            "lagBeforeOutage": lag(&r.lag_before_outage),
            "lagAfterOutage": lag(&r.lag_after_outage),
            "ranDuringOutage": r.ran_during_outage,
            "lagBacklog": lag(&r.lag_backlog),
            "lagSteadyAfter": lag(&r.lag_steady_after),
            "createdLagBeforeOutage": lag(&r.created_lag_before_outage),
        });
        v
    }

    /// A human-readable summary.
    pub fn summary(&self) -> String {
        let r = &self.report;
        let f = |k: &str| self.faults.get(k).copied().unwrap_or(0);
        let mut s = String::new();
        s += &format!(
            "chaos run seed {} — {} jobs, {:.0} s of firing, outage {:.0} s, wall {:.0} s\n",
            self.seed,
            self.jobs,
            self.firing_secs,
            (self.outage_ms.1 - self.outage_ms.0) as f64 / 1000.0,
            self.wall_secs
        );
        s += &format!(
            "fires expected {:>6}   executions {:>6}   lost {}   unscheduled {}   not final {}\n",
            r.fires_expected,
            r.executions,
            r.missing.len(),
            r.unexpected.len(),
            r.not_final.len()
        );
        s += &format!("by status {:?}\n", r.by_status);
        s += &format!(
            "effects applied {}   doubled {}   duplicates absorbed {}   succeeded without effect {}\n",
            r.effects_applied,
            r.doubled_effects.len(),
            r.duplicates_absorbed,
            r.succeeded_without_effect.len()
        );
        s += &format!(
            "stale writes accepted {}   refused: resource {} + execution store {}\n",
            r.stale_accepted.len(),
            r.stale_refused_resource,
            r.stale_refused_store
        );
        s += &format!(
            "takeovers (timelines) {}   clock-skew distrust reports {}\n",
            r.takeovers, self.clock_skew_reports
        );
        s += &format!(
            "faults: requests {}  latency {}  500 {}  503 {}  ddb-throughput {}  ddb-throttling {}  sqs-throttled {}  reset {}  applied-then-dropped {}\n",
            f("requests"),
            f("latency"),
            f("http_500"),
            f("http_503"),
            f("ddb_provisioned_throughput_exceeded"),
            f("ddb_throttling"),
            f("sqs_request_throttled"),
            f("reset_before_forward"),
            f("applied_then_dropped")
        );
        s += &format!(
            "ticks: scans {}  doubled {}  crashed {}  failed {}  skipped in outage {}  created {}  duplicate puts {}  missed {}\n",
            self.ticks.scans,
            self.ticks.duplicate_ticks,
            self.ticks.crashed_scans,
            self.ticks.failed_scans,
            self.ticks.skipped_in_outage,
            self.ticks.created,
            self.ticks.duplicate_puts,
            self.ticks.missed
        );
        let d = &self.delivery;
        s += &format!(
            "delivery faults: messages lost {}  moved to the DLQ {}  poison job items {}  ticks died mid-range {}   reconciler: runs {} re-sent {} failed runs {}\n",
            d.lost, d.dead_lettered, d.poison_items, self.ticks.died_mid_range, d.reconcile_runs, d.resent, d.reconcile_failed
        );
        s += &format!(
            "workers: kills {}  pauses past lease {}  processes started {}\n",
            self.fleet.kills, self.fleet.pauses, self.fleet.starts
        );
        let line = |name: &str, l: &check::Lag| {
            format!(
                "{name}: n {} min {} p50 {} p99 {} max {} ms\n",
                l.count, l.min_ms, l.p50_ms, l.p99_ms, l.max_ms
            )
        };
        s += &line("scan duration", &self.ticks.scan_ms);
        s += &line("created − scheduled before outage", &r.created_lag_before_outage);
        s += &line("start lag before outage", &r.lag_before_outage);
        s += &line("start lag after outage end", &r.lag_after_outage);
        s += &line("  of which the backlog (scheduled in the outage)", &r.lag_backlog);
        s += &line("  of which fires scheduled after the outage", &r.lag_steady_after);
        s += &format!("fires in the outage that ran during it (queued ahead): {}\n", r.ran_during_outage);
        if self.violations.is_empty() {
            s += "PROMISE KEPT: no violations\n";
        } else {
            for v in &self.violations {
                s += &format!("VIOLATION: {v}\n");
            }
        }
        s
    }
}

/// The chaos job definition: every `rate` seconds from `start` to `end`, the chaos handler,
/// `fireAll` misfires late past 5 s, generous retries.
pub fn definition(rate: u32, start: DateTime<Utc>, end: DateTime<Utc>, work_ms: u64) -> JobDefinition {
    let mut schedule = ScheduleSpec::new(format!("rate({rate} seconds)"), "UTC");
    schedule.start = Some(start);
    schedule.end = Some(end);
    JobDefinition::new(schedule, Target::InProcess { handler: HANDLER.into() })
        .with_params(serde_json::json!({ "workMs": work_ms }))
        .with_misfire(MisfirePolicy::FireAll { cap: sundial_core::model::MAX_FIRE_ALL_CAP })
        .with_misfire_threshold_secs(5)
        .with_retry(RetryPolicy {
            max_attempts: 6,
            base_delay_secs: 1,
            max_delay_secs: 2,
            max_age_secs: 3_600,
        })
        .with_timeout_secs(20)
}

/// The outage `[start, end)`. A tick queues fires up to the end of the minute containing
/// `now + horizon`, so the outage starts `horizon + 5 s` before a minute boundary (the last tick
/// before it has queued nothing past the boundary) and lasts `length` (at least 5 s past the
/// boundary): fires from the boundary to the outage's end wait for the first tick after it.
/// The boundary is the first one that leaves at least `lead` of normal running before the
/// outage.
pub fn outage_window(
    t0: DateTime<Utc>,
    lead: Duration,
    length: Duration,
    horizon_secs: u32,
) -> (DateTime<Utc>, DateTime<Utc>) {
    let before = CDuration::seconds(i64::from(horizon_secs) + 5);
    let length = CDuration::milliseconds(length.as_millis() as i64).max(before + CDuration::seconds(5));
    let earliest = t0 + CDuration::milliseconds(lead.as_millis() as i64) + before;
    let boundary = sundial_core::keys::minute_start(
        sundial_core::keys::minute_of(earliest - CDuration::milliseconds(1)) + 1,
    );
    (boundary - before, boundary - before + length)
}

/// Every fire each job should have had: `(created, end]` of its schedule.
pub fn expected_fires(
    jobs: &[sundial_core::model::Job],
    end: DateTime<Utc>,
) -> Result<BTreeMap<String, Vec<i64>>> {
    let mut out = BTreeMap::new();
    for j in jobs {
        let s = Schedule::parse(&j.definition.schedule, j.anchor)?;
        let fires = s.fires_between(j.created_at, end, 1_000_000);
        out.insert(j.job_id.clone(), fires.iter().map(DateTime::timestamp_millis).collect());
    }
    Ok(out)
}

struct WorkerProc {
    child: Child,
    gen: u32,
}

/// The worker processes.
struct Fleet {
    exe: PathBuf,
    env: Vec<(String, String)>,
    dir: PathBuf,
    skew_ms: i64,
    procs: Vec<WorkerProc>,
    stats: FleetStats,
}

fn signal(pid: u32, sig: &str) {
    // Only ever our own children, by pid.
    let _ = std::process::Command::new("kill").arg(format!("-{sig}")).arg(pid.to_string()).status();
}

impl Fleet {
    fn spawn(&mut self, index: usize, gen: u32) -> Result<Child> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("worker-{index}.log")))
            .context("opening a worker log")?;
        let mut cmd = Command::new(&self.exe);
        cmd.arg("worker")
            .envs(self.env.iter().cloned())
            .env("SUNDIAL_WORKER_ID", format!("w{index}-g{gen}"))
            .env(crate::worker::SKEW_MS, if index == 0 { self.skew_ms.to_string() } else { "0".into() })
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true);
        self.stats.starts += 1;
        cmd.spawn().context("starting a chaos worker")
    }

    fn start(&mut self, n: usize) -> Result<()> {
        for i in 0..n {
            let child = self.spawn(i, 0)?;
            self.procs.push(WorkerProc { child, gen: 0 });
        }
        Ok(())
    }

    async fn kill_and_restart(&mut self, i: usize, down: Duration) -> Result<()> {
        let p = &mut self.procs[i];
        let _ = p.child.start_kill();
        let _ = p.child.wait().await;
        self.stats.kills += 1;
        tokio::time::sleep(down).await;
        let gen = self.procs[i].gen + 1;
        let child = self.spawn(i, gen)?;
        self.procs[i] = WorkerProc { child, gen };
        Ok(())
    }

    async fn pause(&mut self, i: usize, for_: Duration) {
        let Some(pid) = self.procs[i].child.id() else { return };
        signal(pid, "STOP");
        self.stats.pauses += 1;
        tokio::time::sleep(for_).await;
        signal(pid, "CONT");
    }

    async fn stop_all(&mut self) {
        for p in &mut self.procs {
            if let Some(pid) = p.child.id() {
                signal(pid, "CONT");
                signal(pid, "TERM");
            }
        }
        for p in &mut self.procs {
            if tokio::time::timeout(Duration::from_secs(8), p.child.wait()).await.is_err() {
                let _ = p.child.start_kill();
                let _ = p.child.wait().await;
            }
        }
    }
}

/// Reads every execution of the run's jobs (directly from the emulator).
async fn all_executions(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    job_ids: &[String],
) -> Result<Vec<Execution>> {
    let mut out = Vec::new();
    for job in job_ids {
        let mut start = None;
        loop {
            let page = ddb
                .query()
                .table_name(&cfg.executions_table)
                .key_condition_expression("pk = :p")
                .expression_attribute_values(":p", AttributeValue::S(sundial_core::keys::job_pk(TENANT, job)))
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| anyhow::anyhow!("{}", aws_sdk_dynamodb::error::DisplayErrorContext(e)))?;
            for i in page.items() {
                out.push(items::execution_from_item(i)?);
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
    }
    Ok(out)
}

async fn sleep_until(t: DateTime<Utc>) {
    let d = (t - Utc::now()).num_milliseconds();
    if d > 0 {
        tokio::time::sleep(Duration::from_millis(d as u64)).await;
    }
}

const CRASH_POINTS: [CrashPoint; 4] =
    [CrashPoint::AfterPut, CrashPoint::AfterSend, CrashPoint::BeforeAdvance, CrashPoint::BeforeWatermark];

/// The tick loop: runs until a complete scan has covered `end`, skipping the outage.
async fn tick_loop(
    ctx: Arc<Ctx>,
    rc: RunConfig,
    outage: (DateTime<Utc>, DateTime<Utc>),
    end: DateTime<Utc>,
    give_up: DateTime<Utc>,
) -> Result<TickStats> {
    let mut rng = SplitMix::new(rc.seed ^ 0x7_1C4);
    let mut st = TickStats::default();
    let mut durations = Vec::new();
    let shards = ctx.cfg.shards;
    let mut n = 0u64;
    loop {
        let now = Utc::now();
        if now > give_up {
            bail!("no complete tick after firing ended (gave up at {give_up})");
        }
        if now >= outage.0 && now < outage.1 {
            st.skipped_in_outage += 1;
        } else {
            let copies = if rng.chance(rc.duplicate_tick_permille) { 2 } else { 1 };
            if copies == 2 {
                st.duplicate_ticks += 1;
            }
            let mut runs = Vec::new();
            for c in 0..copies {
                let crash = rng
                    .chance(rc.crashing_tick_permille)
                    .then(|| CRASH_POINTS[rng.below(CRASH_POINTS.len() as u64) as usize]);
                let opts = ScanOptions {
                    actor: format!("tick:chaos-{n}-{c}"),
                    horizon_secs: rc.horizon_secs,
                    crash_at: crash,
                    // The verification pass on the run's compressed clock, like the reconciler.
                    verify_grace_ms: rc.reconcile_grace.as_millis() as i64,
                    ..Default::default()
                };
                let ctx = ctx.clone();
                // A tick that dies mid-range: only the first shards get scanned.
                let upto = if shards > 1 && rng.chance(rc.tick_dies_permille) {
                    st.died_mid_range += 1;
                    rng.below(u64::from(shards)) as u32
                } else {
                    shards
                };
                runs.push(tokio::spawn(async move {
                    let budget = Mutex::new(CatchUpBudget::new(5_000, 5_000));
                    let t = std::time::Instant::now();
                    let r = scan_shards(&ctx, 0..upto, now, &budget, &opts).await;
                    (crash.is_some(), r, t.elapsed().as_millis() as i64)
                }));
            }
            let mut complete = false;
            for r in runs {
                st.scans += 1;
                let r = r.await.map(|(c, r, ms)| {
                    durations.push(ms);
                    (c, r)
                });
                match r {
                    Ok((_, Ok(rep))) => {
                        st.created += rep.created;
                        st.duplicate_puts += rep.duplicates;
                        st.missed += rep.missed.values().sum::<u64>();
                        complete |= rep.shards_complete == shards;
                    }
                    Ok((true, Err(_))) => st.crashed_scans += 1,
                    Ok((false, Err(e))) => {
                        st.failed_scans += 1;
                        tracing::info!(error = %e, "scan failed; the next tick repeats it");
                    }
                    Err(e) => bail!("scan task panicked: {e}"),
                }
            }
            if complete && now > end {
                st.scan_ms = check::Lag::of(durations);
                return Ok(st);
            }
        }
        n += 1;
        tokio::time::sleep(rc.tick_every).await;
    }
}

/// The worker-fault controller: SIGKILL + restart, or SIGSTOP past the lease + SIGCONT, until
/// `until`. The first two faults are one of each, so even a short run has both.
async fn controller(fleet: Arc<Mutex<Fleet>>, rc: RunConfig, until: DateTime<Utc>) -> Result<()> {
    let mut rng = SplitMix::new(rc.seed ^ 0xC0_47_20_11);
    let pause_for = Duration::from_millis(rc.lease_secs as u64 * 1000 + rc.skew_margin_ms as u64 + 2_000);
    let mut k = 0u64;
    loop {
        let wait = rng.between(rc.fault_every.0.as_millis() as u64, rc.fault_every.1.as_millis() as u64);
        let at = Utc::now() + CDuration::milliseconds(wait as i64);
        if at >= until {
            return Ok(());
        }
        sleep_until(at).await;
        let victim = rng.below(rc.workers as u64) as usize;
        let pause = match k {
            0 => false,
            1 => true,
            _ => rng.chance(300),
        };
        let mut f = fleet.lock().await;
        if pause {
            f.pause(victim, pause_for).await;
        } else {
            let down = Duration::from_millis(rng.between(300, 2_000));
            f.kill_and_restart(victim, down).await?;
        }
        k += 1;
    }
}

/// The reconciler, on its own schedule, through the fault proxy: (runs, re-sent, failed runs).
async fn reconcile_loop(
    ctx: Arc<Ctx>,
    rc: RunConfig,
    stop: tokio_util::sync::CancellationToken,
) -> (u64, u64, u64) {
    let opts = ReconcileOptions {
        actor: "reconciler:chaos".into(),
        grace_ms: rc.reconcile_grace.as_millis() as i64,
        ..Default::default()
    };
    let (mut runs, mut resent, mut failed) = (0, 0, 0);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(rc.reconcile_every) => {}
            _ = stop.cancelled() => return (runs, resent, failed),
        }
        runs += 1;
        match reconcile(&ctx, Utc::now(), &opts).await {
            Ok(r) => resent += r.resent_total(),
            Err(e) => {
                failed += 1;
                if let ReconcileError::Partial { report, .. } = &e {
                    resent += report.resent_total();
                }
                tracing::info!(error = %e, "reconcile failed; the next run repeats it");
            }
        }
    }
}

/// Message loss and DLQ overflow: every `thief_every` until firing ends, takes up to 10
/// messages from the pool queue (directly, not through the proxy) and drops some silently,
/// moves some to the DLQ, and puts the rest back. Returns (lost, dead-lettered).
async fn thief(
    direct: Clients,
    cfg: Config,
    rc: RunConfig,
    end: DateTime<Utc>,
    stop: tokio_util::sync::CancellationToken,
) -> Result<(u64, u64)> {
    let mut rng = SplitMix::new(rc.seed ^ 0x0007_41EF);
    let url = direct
        .sqs
        .get_queue_url()
        .queue_name(cfg.queue_name("default"))
        .send()
        .await?
        .queue_url
        .unwrap_or_default();
    let dlq = direct
        .sqs
        .get_queue_url()
        .queue_name(cfg.dlq_name("default"))
        .send()
        .await?
        .queue_url
        .unwrap_or_default();
    let (mut lost, mut dead) = (0, 0);
    while Utc::now() < end {
        tokio::select! {
            _ = tokio::time::sleep(rc.thief_every) => {}
            _ = stop.cancelled() => break,
        }
        let Ok(got) = direct
            .sqs
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .visibility_timeout(30)
            .send()
            .await
        else {
            continue;
        };
        for m in got.messages.unwrap_or_default() {
            let handle = m.receipt_handle.clone().unwrap_or_default();
            if rng.chance(rc.loss_permille) {
                if direct.sqs.delete_message().queue_url(&url).receipt_handle(&handle).send().await.is_ok() {
                    lost += 1;
                }
            } else if rng.chance(rc.dlq_permille) {
                let body = m.body.clone().unwrap_or_default();
                if direct.sqs.send_message().queue_url(&dlq).message_body(body).send().await.is_ok()
                    && direct
                        .sqs
                        .delete_message()
                        .queue_url(&url)
                        .receipt_handle(&handle)
                        .send()
                        .await
                        .is_ok()
                {
                    dead += 1;
                }
            } else {
                let _ = direct
                    .sqs
                    .change_message_visibility()
                    .queue_url(&url)
                    .receipt_handle(&handle)
                    .visibility_timeout(0)
                    .send()
                    .await;
            }
        }
    }
    Ok((lost, dead))
}

/// Plants `n` job items this version cannot decode (a definition field from a newer writer)
/// in the admission partitions of the shards, round robin. Returns how many.
async fn plant_poison(ddb: &aws_sdk_dynamodb::Client, cfg: &Config, n: u32) -> Result<u64> {
    for i in 0..n {
        let shard = i % cfg.shards.max(1);
        let s = |v: String| AttributeValue::S(v);
        let item = std::collections::HashMap::from([
            ("pk".to_string(), s(sundial_core::keys::job_pk(TENANT, &format!("poison-{i}")))),
            ("sk".to_string(), s(sundial_core::keys::JOB_DEF_SK.to_string())),
            ("due_pk".to_string(), s(sundial_core::keys::admission_bucket(shard))),
            ("due_sk".to_string(), s(format!("0#{TENANT}#poison-{i}"))),
            ("def".to_string(), s(r#"{"aFieldFromTheFuture":true}"#.to_string())),
        ]);
        ddb.put_item().table_name(&cfg.jobs_table).set_item(Some(item)).send().await?;
    }
    Ok(u64::from(n))
}

/// Runs the whole scenario and checks it.
pub async fn run(rc: RunConfig) -> Result<RunOutcome> {
    let started = std::time::Instant::now();
    let direct = emulator::clients(&emulator::endpoint());
    direct.ddb.list_tables().limit(1).send().await.map_err(|e| {
        anyhow::anyhow!(
            "the emulator at {} did not answer ({}); start it with localstack/start.sh",
            emulator::endpoint(),
            aws_sdk_dynamodb::error::DisplayErrorContext(e)
        )
    })?;
    let prefix = format!("c{}-{}-", std::process::id(), rc.seed % 100_000);
    let cfg = Config::local(&prefix, &["default"], rc.shards);
    let queues = sundial_core::provision::ensure_all(&direct, &cfg).await.context("provisioning")?;
    let effects_table = format!("{prefix}chaos-effects");
    EffectStore::new(direct.ddb.clone(), &effects_table).create_table().await?;
    let dir = std::env::temp_dir().join(format!("sundial-chaos-{prefix}"));
    std::fs::create_dir_all(&dir)?;
    let journal_path = dir.join("journal.jsonl");

    let proxy =
        Proxy::start(SocketAddr::from(([127, 0, 0, 1], 0)), &emulator::endpoint(), rc.seed, rc.plan).await?;
    let via = emulator::clients(&proxy.endpoint());

    // The plan in time.
    let now = Utc::now();
    let t0 = DateTime::from_timestamp(now.timestamp() + 3, 0).unwrap_or(now);
    let outage = outage_window(t0, rc.outage_after, rc.outage, rc.horizon_secs);
    let end =
        (t0 + CDuration::milliseconds(rc.firing.as_millis() as i64)).max(outage.1 + CDuration::seconds(10));
    let mut rng = SplitMix::new(rc.seed ^ 0x10B5);
    let mut created = Vec::new();
    for i in 0..rc.jobs {
        // Spread the jobs over the seconds of one period, so fires arrive evenly.
        let start = t0 + CDuration::seconds(i64::from(i % rc.rate_secs.max(1)));
        let def = definition(rc.rate_secs, start, end, rng.between(rc.work_ms.0, rc.work_ms.1));
        let job = sundial_core::model::Job::new(&cfg, TENANT, &format!("job-{i:03}"), def, Utc::now())?;
        jobs::put_new_job(&direct.ddb, &cfg, &job).await?;
        created.push(job);
    }
    let job_ids: Vec<String> = created.iter().map(|j| j.job_id.clone()).collect();
    tracing::info!(%t0, outage_from = %outage.0, outage_to = %outage.1, %end, "chaos run planned");

    let mut env = cfg.to_env();
    env.extend(emulator::child_env(&proxy.endpoint()));
    env.extend(
        [
            ("SUNDIAL_POOL", "default".to_string()),
            ("SUNDIAL_LEASE_SECS", rc.lease_secs.to_string()),
            ("SUNDIAL_SKEW_MARGIN_MS", rc.skew_margin_ms.to_string()),
            ("SUNDIAL_WORKER_SLOTS", rc.slots.to_string()),
            ("SUNDIAL_SHUTDOWN_GRACE_SECS", "3".to_string()),
            (crate::worker::JOURNAL, journal_path.display().to_string()),
            (crate::worker::EFFECTS_TABLE, effects_table.clone()),
            ("RUST_LOG", std::env::var("CHAOS_WORKER_LOG").unwrap_or_else(|_| "warn".into())),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v)),
    );
    let fleet = Arc::new(Mutex::new(Fleet {
        exe: rc.worker_exe.clone(),
        env,
        dir: dir.clone(),
        skew_ms: rc.skew_ms,
        procs: Vec::new(),
        stats: FleetStats::default(),
    }));
    fleet.lock().await.start(rc.workers)?;

    let ctx = Arc::new(Ctx {
        ddb: via.ddb.clone(),
        cfg: cfg.clone(),
        queues: PoolQueues::new(via.sqs.clone(), cfg.clone(), false),
    });
    let give_up = end + CDuration::minutes(10);
    let mut delivery = DeliveryStats {
        poison_items: plant_poison(&direct.ddb, &cfg, rc.poison_items).await?,
        ..Default::default()
    };
    let stop_bg = tokio_util::sync::CancellationToken::new();
    let reconciler = tokio::spawn(reconcile_loop(ctx.clone(), rc.clone(), stop_bg.clone()));
    let thief = tokio::spawn(thief(direct.clone(), cfg.clone(), rc.clone(), end, stop_bg.clone()));
    let ticks = tokio::spawn(tick_loop(ctx, rc.clone(), outage, end, give_up));
    let ctl = tokio::spawn(controller(fleet.clone(), rc.clone(), end));
    let ctl_result = ctl.await.map_err(|e| anyhow::anyhow!("controller panicked: {e}"))?;
    let tick_stats = ticks.await.map_err(|e| anyhow::anyhow!("tick loop panicked: {e}"))??;
    ctl_result?;

    // Drain: wait for every execution to be final (faults still on), then stop the workers.
    // On a busy emulator the backlog drains slowly but steadily, so the wait ends when nothing
    // has finished for `drain` (stuck), not at a fixed time; 30 minutes is the hard cap.
    let stall = CDuration::milliseconds(rc.drain.as_millis() as i64);
    let cap = Utc::now() + CDuration::minutes(30);
    let (mut best, mut improved) = (usize::MAX, Utc::now());
    loop {
        let ex = all_executions(&direct.ddb, &cfg, &job_ids).await?;
        let open = ex.iter().filter(|e| !e.status.is_terminal()).count();
        let now = Utc::now();
        if open < best {
            (best, improved) = (open, now);
        }
        if open == 0 || now - improved > stall || now > cap {
            break;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    stop_bg.cancel();
    let (runs, resent, failed) = reconciler.await.map_err(|e| anyhow::anyhow!("reconciler panicked: {e}"))?;
    (delivery.reconcile_runs, delivery.resent, delivery.reconcile_failed) = (runs, resent, failed);
    (delivery.lost, delivery.dead_lettered) =
        thief.await.map_err(|e| anyhow::anyhow!("thief panicked: {e}"))??;
    let fleet_stats = {
        let mut f = fleet.lock().await;
        f.stop_all().await;
        f.stats.clone()
    };
    let faults = proxy.stats().snapshot();
    proxy.stop().await;

    let executions = all_executions(&direct.ddb, &cfg, &job_ids).await?;
    let resources = EffectStore::new(direct.ddb.clone(), &effects_table).all().await?;
    let journal = Journal::read(&journal_path)?;
    let expected = expected_fires(&created, end)?;
    let report = check::check(&Evidence {
        expected: &expected,
        executions: &executions,
        resources: &resources,
        journal: &journal,
        outage: Some((outage.0.timestamp_millis(), outage.1.timestamp_millis())),
        clock_tolerance_ms: rc.skew_ms.abs() + 2_000,
    });
    let (mut takeovers, mut skew_reports) = (0, 0);
    for e in &journal {
        if let Entry::Metrics { takeovers: t, clock_skew: c, .. } = e {
            takeovers += t;
            skew_reports += c;
        }
    }
    let outcome = RunOutcome {
        seed: rc.seed,
        jobs: rc.jobs,
        firing_secs: (end - t0).num_milliseconds() as f64 / 1000.0,
        outage_ms: ((outage.0 - t0).num_milliseconds(), (outage.1 - t0).num_milliseconds()),
        faults,
        ticks: tick_stats,
        fleet: fleet_stats,
        delivery,
        worker_takeovers: takeovers,
        clock_skew_reports: skew_reports,
        violations: report.violations(),
        report,
        wall_secs: started.elapsed().as_secs_f64(),
    };
    if !rc.keep {
        cleanup(&direct, &cfg, &effects_table, &queues, &dir).await;
    } else {
        eprintln!("kept: tables with prefix {prefix}, run directory {}", dir.display());
    }
    Ok(outcome)
}

async fn cleanup(
    direct: &Clients,
    cfg: &Config,
    effects_table: &str,
    queues: &BTreeMap<String, sundial_core::provision::PoolQueues>,
    dir: &Path,
) {
    for t in [cfg.jobs_table.as_str(), cfg.executions_table.as_str(), effects_table] {
        let _ = direct.ddb.delete_table().table_name(t).send().await;
    }
    for q in queues.values() {
        let _ = direct.sqs.delete_queue().queue_url(&q.url).send().await;
        let _ = direct.sqs.delete_queue().queue_url(&q.dlq_url).send().await;
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).map(|d| d.with_timezone(&Utc)).unwrap_or_default()
    }

    #[test]
    fn the_outage_starts_a_horizon_before_a_minute_boundary_and_crosses_it() {
        // GIVEN a start at 12:00:31, a 15 s horizon and a 36 s outage
        let (a, b) =
            outage_window(at("2026-12-01T12:00:31Z"), Duration::from_secs(10), Duration::from_secs(36), 15);
        // THEN it starts 20 s before 12:02:00 (12:01:00 leaves less than 10 s of running first)
        assert_eq!((a, b), (at("2026-12-01T12:01:40Z"), at("2026-12-01T12:02:16Z")));
        // AND a start at 12:00:05 uses 12:01:00
        let (a, _) =
            outage_window(at("2026-12-01T12:00:05Z"), Duration::from_secs(10), Duration::from_secs(36), 15);
        assert_eq!(a, at("2026-12-01T12:00:40Z"));
        // AND an outage too short to cross the boundary is lengthened to 5 s past it
        let (a, b) =
            outage_window(at("2026-12-01T12:00:05Z"), Duration::from_secs(10), Duration::from_secs(3), 15);
        assert_eq!(b - a, CDuration::seconds(25));
    }

    #[test]
    fn expected_fires_run_from_the_first_fire_to_the_end_inclusive() {
        let cfg = Config::local("x-", &["default"], 8);
        let t0 = at("2026-12-01T12:00:00Z");
        let def = definition(5, t0, t0 + CDuration::seconds(20), 100);
        let job = sundial_core::model::Job::new(&cfg, TENANT, "job-000", def, t0 - CDuration::seconds(2))
            .unwrap_or_else(|e| panic!("{e}"));
        let fires = expected_fires(&[job], t0 + CDuration::seconds(20)).unwrap_or_else(|e| panic!("{e}"));
        let t = t0.timestamp_millis();
        assert_eq!(fires["job-000"], vec![t, t + 5_000, t + 10_000, t + 15_000, t + 20_000]);
    }
}
