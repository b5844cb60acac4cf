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
//!
//! ## Layout
//! - `config`: [`RunConfig`]; `plan`: the jobs, the outage window, the expected fires.
//! - `trigger`: the tick loop and the reconciler; `processes`: the worker processes.
//! - `faults`: the worker-fault controller, the message thief, the poison job items.
//! - `tables`: direct reads of the run's tables, and their removal.
//! - `outcome`: what the run reports ([`RunOutcome`]).

mod config;
mod faults;
mod outcome;
mod plan;
mod processes;
mod tables;
mod trigger;

pub use config::RunConfig;
pub use outcome::{DeliveryStats, FleetStats, RunOutcome, TickStats};
pub use plan::{definition, expected_fires, outage_window};

use crate::check::{self, Evidence, Report};
use crate::effect::{EffectStore, Entry, Journal};
use crate::emulator;
use crate::proxy::Proxy;
use anyhow::{Context, Result};
use chrono::{Duration as CDuration, Utc};
use faults::{controller, plant_poison, thief};
use plan::{create_jobs, Timeline};
use processes::Fleet;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use sundial_core::aws::Clients;
use sundial_core::config::Config;
use sundial_core::Ctx;
use sundial_model::Job;
use sundial_store::queue::PoolQueues;
use tokio::sync::Mutex;
use trigger::{reconcile_loop, tick_loop};

/// The tenant every chaos job belongs to.
pub const TENANT: &str = "chaos";

/// What a run sets up before its jobs: the emulator's tables and queues under a fresh prefix,
/// the effects table, the run directory and the fault proxy.
struct Stage {
    /// Clients straight to the emulator (set-up, the thief, the checker's reads).
    direct: Clients,
    prefix: String,
    cfg: Config,
    queues: BTreeMap<String, sundial_testkit::provision::PoolQueues>,
    effects_table: String,
    dir: PathBuf,
    journal_path: PathBuf,
    proxy: Proxy,
}

impl Stage {
    async fn set_up(rc: &RunConfig) -> Result<Stage> {
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
        let queues = sundial_testkit::provision::ensure_all(&direct, &cfg).await.context("provisioning")?;
        let effects_table = format!("{prefix}chaos-effects");
        EffectStore::new(direct.ddb.clone(), &effects_table).create_table().await?;
        let dir = std::env::temp_dir().join(format!("sundial-chaos-{prefix}"));
        std::fs::create_dir_all(&dir)?;
        let journal_path = dir.join("journal.jsonl");
        let proxy =
            Proxy::start(SocketAddr::from(([127, 0, 0, 1], 0)), &emulator::endpoint(), rc.seed, rc.plan)
                .await?;
        Ok(Stage { direct, prefix, cfg, queues, effects_table, dir, journal_path, proxy })
    }

    /// The worker processes' environment: the deployment, the emulator through the proxy, the
    /// lease settings, the journal and the effects table.
    fn worker_env(&self, rc: &RunConfig) -> Vec<(String, String)> {
        let mut env = self.cfg.to_env();
        env.extend(emulator::child_env(&self.proxy.endpoint()));
        env.extend(
            [
                ("SUNDIAL_POOL", "default".to_string()),
                ("SUNDIAL_LEASE_SECS", rc.lease_secs.to_string()),
                ("SUNDIAL_SKEW_MARGIN_MS", rc.skew_margin_ms.to_string()),
                ("SUNDIAL_WORKER_SLOTS", rc.slots.to_string()),
                ("SUNDIAL_SHUTDOWN_GRACE_SECS", "3".to_string()),
                (crate::worker::JOURNAL, self.journal_path.display().to_string()),
                (crate::worker::EFFECTS_TABLE, self.effects_table.clone()),
                ("RUST_LOG", std::env::var("CHAOS_WORKER_LOG").unwrap_or_else(|_| "warn".into())),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v)),
        );
        env
    }
}

/// Runs the whole scenario and checks it.
pub async fn run(rc: RunConfig) -> Result<RunOutcome> {
    let started = std::time::Instant::now();
    let stage = Stage::set_up(&rc).await?;
    let via = emulator::clients(&stage.proxy.endpoint());
    let timeline = Timeline::new(&rc, Utc::now());
    let created = create_jobs(&stage.direct.ddb, &stage.cfg, &rc, &timeline).await?;
    let job_ids: Vec<String> = created.iter().map(|j| j.job_id.clone()).collect();
    let Timeline { t0, outage, end } = timeline;
    tracing::info!(%t0, outage_from = %outage.0, outage_to = %outage.1, %end, "chaos run planned");

    let fleet = Arc::new(Mutex::new(Fleet::new(&rc, stage.worker_env(&rc), stage.dir.clone())));
    fleet.lock().await.start(rc.workers)?;
    let ctx = Arc::new(Ctx {
        ddb: via.ddb.clone(),
        cfg: stage.cfg.clone(),
        queues: PoolQueues::new(via.sqs.clone(), stage.cfg.clone()),
    });
    let (tick_stats, delivery) = under_fire(&stage, &rc, &timeline, ctx, fleet.clone(), &job_ids).await?;
    let fleet_stats = {
        let mut f = fleet.lock().await;
        f.stop_all().await;
        f.stats.clone()
    };
    let Stage { direct, prefix, cfg, queues, effects_table, dir, journal_path, proxy } = stage;
    let faults = proxy.stats().snapshot();
    proxy.stop().await;

    let executions = tables::all_executions(&direct.ddb, &cfg, &job_ids).await?;
    let resources = EffectStore::new(direct.ddb.clone(), &effects_table).all().await?;
    let journal = Journal::read(&journal_path)?;
    let report = check_run(&rc, &timeline, &created, &executions, &resources, &journal)?;
    let (takeovers, skew_reports) = worker_metrics(&journal);
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
        tables::cleanup(&direct, &cfg, &effects_table, &queues, &dir).await;
    } else {
        eprintln!("kept: tables with prefix {prefix}, run directory {}", dir.display());
    }
    Ok(outcome)
}

/// The run under fire: poison items planted, the reconciler, the thief, the ticks and the
/// worker-fault controller started; then, once firing has ended and a tick completed, the
/// drain, and the background tasks stopped.
async fn under_fire(
    stage: &Stage,
    rc: &RunConfig,
    timeline: &Timeline,
    ctx: Arc<Ctx>,
    fleet: Arc<Mutex<Fleet>>,
    job_ids: &[String],
) -> Result<(TickStats, DeliveryStats)> {
    let (outage, end) = (timeline.outage, timeline.end);
    let give_up = end + CDuration::minutes(10);
    let mut delivery = DeliveryStats {
        poison_items: plant_poison(&stage.direct.ddb, &stage.cfg, rc.poison_items).await?,
        ..Default::default()
    };
    let stop_bg = tokio_util::sync::CancellationToken::new();
    let reconciler = tokio::spawn(reconcile_loop(ctx.clone(), rc.clone(), stop_bg.clone()));
    let thief =
        tokio::spawn(thief(stage.direct.clone(), stage.cfg.clone(), rc.clone(), end, stop_bg.clone()));
    let ticks = tokio::spawn(tick_loop(ctx, rc.clone(), outage, end, give_up));
    let ctl = tokio::spawn(controller(fleet, rc.clone(), end));
    let ctl_result = ctl.await.map_err(|e| anyhow::anyhow!("controller panicked: {e}"))?;
    let tick_stats = ticks.await.map_err(|e| anyhow::anyhow!("tick loop panicked: {e}"))??;
    ctl_result?;

    tables::drain(&stage.direct.ddb, &stage.cfg, job_ids, rc.drain).await?;
    stop_bg.cancel();
    let (runs, resent, failed) = reconciler.await.map_err(|e| anyhow::anyhow!("reconciler panicked: {e}"))?;
    (delivery.reconcile_runs, delivery.resent, delivery.reconcile_failed) = (runs, resent, failed);
    (delivery.lost, delivery.dead_lettered) =
        thief.await.map_err(|e| anyhow::anyhow!("thief panicked: {e}"))??;
    Ok((tick_stats, delivery))
}

/// The checker over what the run left.
fn check_run(
    rc: &RunConfig,
    timeline: &Timeline,
    created: &[Job],
    executions: &[sundial_model::Execution],
    resources: &[crate::effect::ResourceRecord],
    journal: &[Entry],
) -> Result<Report> {
    let outage = timeline.outage;
    let expected = expected_fires(created, timeline.end)?;
    Ok(check::check(&Evidence {
        expected: &expected,
        executions,
        resources,
        journal,
        outage: Some((outage.0.timestamp_millis(), outage.1.timestamp_millis())),
        clock_tolerance_ms: rc.skew_ms.abs() + 2_000,
    }))
}

/// The takeovers and clock-skew reports the workers journaled.
fn worker_metrics(journal: &[Entry]) -> (u64, u64) {
    let (mut takeovers, mut skew_reports) = (0, 0);
    for e in journal {
        if let Entry::Metrics { takeovers: t, clock_skew: c, .. } = e {
            takeovers += t;
            skew_reports += c;
        }
    }
    (takeovers, skew_reports)
}
