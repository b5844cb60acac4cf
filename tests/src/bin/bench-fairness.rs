//! Tenant fairness under a noisy neighbour (docs/priority.md; a benchmark, not a test; about
//! two minutes against the emulator):
//!
//! ```text
//! . localstack/env.sh && cargo run -p sundial-tests --bin bench-fairness -- [--noisy 10000] [--out docs/bench/fairness-10000.json]
//! ```
//!
//! Runs [`sundial_tests::fairness`] twice on fresh tables and queues: with priority lanes (the
//! noisy tenant's low-priority backlog in the pool's low lane) and without (the baseline: the
//! same backlog in the main queue, as before priorities). Each run: `--noisy` queued
//! executions of 20 ms, 2 ECS poll loops of 10 slots busy with them, then 40 on-time fires of a
//! quiet tenant 250 ms apart. It reports the quiet fires' start lag (p50, p99, max) beside the
//! stated bound, the noisy starts each quiet fire waited for, the baseline's lags and the ratio,
//! the workers' receives per received message, and the emulator's raw SQS rate measured in the
//! same run. Nothing here asserts a timing: it reports.

use anyhow::Context;
use serde_json::json;
use std::time::Duration;
use sundial_model::priority::quiet_start_bound;
use sundial_tests::bench::{percentile, sqs_cycles_per_sec};
use sundial_tests::fairness::{self, Outcome, Scenario};
use sundial_tests::TestEnv;

const WORKERS: usize = 2;
const SLOTS: usize = 10;

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

fn summary(o: &Outcome) -> serde_json::Value {
    let mut lags: Vec<i64> = o.quiet.iter().map(|q| q.lag_ms).collect();
    lags.sort_unstable();
    let mut between: Vec<i64> = o.quiet.iter().map(|q| q.noisy_between as i64).collect();
    between.sort_unstable();
    json!({
        "quietStartLagMs": {"p50": percentile(&lags, 0.5), "p99": percentile(&lags, 0.99), "max": lags.last()},
        "noisyStartsBeforeQuiet": {"p50": percentile(&between, 0.5), "max": between.last()},
        "noisyStartedByEnd": o.noisy_started,
        "receives": o.receives,
        "received": o.received,
        "receivesPerMessage": if o.received == 0 { 0.0 } else { o.receives as f64 / o.received as f64 },
        "setupSecs": o.setup_secs,
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let noisy: usize = arg("--noisy").map(|v| v.parse()).transpose()?.unwrap_or(10_000);
    let scenario = |lanes| Scenario {
        noisy,
        noisy_ms: 20,
        workers: WORKERS,
        slots: SLOTS,
        quiet_fires: 40,
        quiet_every: Duration::from_millis(250),
        warmup: 100,
        lanes,
        within: Duration::from_secs(900),
    };
    let mut runs = serde_json::Map::new();
    let mut p99 = [0i64; 2];
    for (i, (name, lanes)) in [("lanes", true), ("baseline", false)].into_iter().enumerate() {
        let env = TestEnv::new(&format!("bench-fair-{name}")).await?;
        let raw = sqs_cycles_per_sec(&env.clients.sqs, &env.queues["default"].dlq_url, 50).await?;
        let out = fairness::run(&env, &scenario(lanes)).await.with_context(|| format!("the {name} run"))?;
        let mut s = summary(&out);
        s["emulatorSqsCyclesPerSec"] = json!(raw);
        let mut lags: Vec<i64> = out.quiet.iter().map(|q| q.lag_ms).collect();
        lags.sort_unstable();
        p99[i] = percentile(&lags, 0.99);
        eprintln!("{name}: {s}");
        runs.insert(name.into(), s);
        env.cleanup().await;
    }
    let bound = quiet_start_bound(WORKERS as u64, SLOTS as u64) + (WORKERS * SLOTS) as u64;
    let report = json!({
        "bench": "fairness",
        "emulator": std::env::var("SUNDIAL_EMULATOR").unwrap_or_else(|_| "ministack".into()),
        "noisyLowPriorityQueued": noisy,
        "noisyExecutionMs": 20,
        "workers": WORKERS,
        "slotsPerWorker": SLOTS,
        "quietFires": 40,
        "boundNoisyStartsBeforeQuiet": bound,
        "runs": runs,
        "baselineP99OverLanesP99": if p99[0] > 0 { p99[1] as f64 / p99[0] as f64 } else { 0.0 },
    });
    let text = serde_json::to_string_pretty(&report)?;
    println!("{text}");
    if let Some(path) = arg("--out") {
        std::fs::write(&path, format!("{text}\n")).with_context(|| format!("writing {path}"))?;
    }
    Ok(())
}
