//! What Sundial itself runs besides the workers: the tick loop (doubled, crashing and dying
//! ticks, skipped through the outage) and the reconciler, both through the fault proxy.

use super::config::RunConfig;
use super::outcome::TickStats;
use crate::check;
use crate::prng::SplitMix;
use anyhow::{bail, Result};
use chrono::{DateTime, Utc};
use std::sync::Arc;
use sundial_core::reconcile::{reconcile, ReconcileError, ReconcileOptions};
use sundial_core::trigger::plan::CatchUpBudget;
use sundial_core::trigger::scan::{scan_shards, CrashPoint, ScanError, ScanOptions, ScanReport};
use sundial_core::Ctx;
use tokio::sync::Mutex;

const CRASH_POINTS: [CrashPoint; 4] =
    [CrashPoint::AfterPut, CrashPoint::AfterSend, CrashPoint::BeforeAdvance, CrashPoint::BeforeWatermark];

/// The tick loop: runs until a complete scan has covered `end`, skipping the outage.
pub(super) async fn tick_loop(
    ctx: Arc<Ctx>,
    rc: RunConfig,
    outage: (DateTime<Utc>, DateTime<Utc>),
    end: DateTime<Utc>,
    give_up: DateTime<Utc>,
) -> Result<TickStats> {
    let mut rng = SplitMix::new(rc.seed ^ 0x7_1C4);
    let mut st = TickStats::default();
    let mut durations = Vec::new();
    let mut n = 0u64;
    loop {
        let now = Utc::now();
        if now > give_up {
            bail!("no complete tick after firing ended (gave up at {give_up})");
        }
        if now >= outage.0 && now < outage.1 {
            st.skipped_in_outage += 1;
        } else {
            let runs = start_scans(&ctx, &rc, &mut rng, n, now, &mut st);
            let complete = collect_scans(runs, ctx.cfg.shards, &mut st, &mut durations).await?;
            if complete && now > end {
                st.scan_ms = check::Lag::of(durations);
                return Ok(st);
            }
        }
        n += 1;
        tokio::time::sleep(rc.tick_every).await;
    }
}

/// One scan: whether it was told to crash, its result, how long it took (ms).
type ScanRun = tokio::task::JoinHandle<(bool, Result<ScanReport, ScanError>, i64)>;

/// Tick `n` at `now`: one scan, or two at once (a doubled tick); each may be told to crash at
/// a random point, or die mid-range (scan only the first shards).
fn start_scans(
    ctx: &Arc<Ctx>,
    rc: &RunConfig,
    rng: &mut SplitMix,
    n: u64,
    now: DateTime<Utc>,
    st: &mut TickStats,
) -> Vec<ScanRun> {
    let shards = ctx.cfg.shards;
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
    runs
}

/// Waits for a tick's scans and counts what they did; whether one scanned every shard.
async fn collect_scans(
    runs: Vec<ScanRun>,
    shards: u32,
    st: &mut TickStats,
    durations: &mut Vec<i64>,
) -> Result<bool> {
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
    Ok(complete)
}

/// The reconciler, on its own schedule, through the fault proxy: (runs, re-sent, failed runs).
pub(super) async fn reconcile_loop(
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
