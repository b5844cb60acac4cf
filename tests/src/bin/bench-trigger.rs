//! `bench-trigger`: the trigger plane's figures on the local emulator, tick and worker
//! together, with the emulator's own raw rates measured in the same run (the emulator, not
//! Sundial, is the ceiling locally, so figures are reported as ratios to it).
//!
//! ```sh
//! localstack/start.sh
//! cargo run --release -p sundial-tests --bin bench-trigger -- --jobs 1000 --out bench-1000.json
//! ```
//!
//! 1. Raw rates: single-client conditional PutItem, and SQS send + receive + delete cycles.
//! 2. Loads N jobs due at second 0 of one minute D, spread over the logical shards.
//! 3. Waits (real clock) until D − 60 s and runs one tick, as EventBridge would: it queues
//!    every fire ahead with its per-message delay. Reports fires/s and enqueue lag vs scheduled.
//! 4. Runs an ECS-style worker (in-process no-op handler) until every execution SUCCEEDED, and
//!    reports start lag (claim − scheduled) percentiles.
//! 5. Reports requests per execution from the metering interceptor: DynamoDB write/read units,
//!    SQS requests, Lambda invokes, split tick / worker, for the whole run of each execution.
//!
//! `--class` chooses the jobs and the `due` class a scan would have left them in:
//! - `daily` (default): `0 M H * * *` once-a-day crons in the daily class `D#{minute of day}`,
//!   never advanced (DESIGN §6's daily budget: ≤ 4 write units a run);
//! - `every-minute` (or `--every-minute`): `0 * * * * *` in the every-minute class `E#`, never
//!   advanced (the budget case: ≤ 3 write units a run);
//! - `bucket`: monthly crons in their minute bucket, advanced to next month's bucket on every
//!   fire (the general case: the `due` index entry moves, 1 + 2 index write units).
//!
//! By default every job is due at second 0 (the top-of-the-minute spike real users write: most daily jobs at
//! :00); `--spread` spreads them over the minute's 60 seconds.
//!
//! Also reported: the tick's CPU time per fire (this process's user + system time over the
//! scan, from `/proc/self/stat`), and the emulator's floor for the start lag: N × requests per
//! execution ÷ the emulator's raw request rate (it serves one request at a time), so a start
//! lag near the floor is the emulator's, not Sundial's.

use anyhow::{Context, Result};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Datelike, Duration, Timelike, Utc};
use std::sync::Arc;
use std::time::Instant;
use sundial_core::config::{Config, WorkerSettings};
use sundial_core::execution::clock::SystemClock;
use sundial_core::execution::metrics::MemorySink;
use sundial_core::execution::retry::RunError;
use sundial_core::execution::target::in_process::{BoxFuture, Handler, HandlerContext, Handlers};
use sundial_core::execution::worker::Worker;
use sundial_core::model::{DueClass, ExecStatus, Target};
use sundial_core::queue::PoolQueues;
use sundial_core::schedule::MisfirePolicy;
use sundial_core::trigger::plan::CatchUpBudget;
use sundial_core::trigger::scan::{scan_shards, ScanOptions, SendClock};
use sundial_core::Ctx;
use sundial_testkit::metering::Meter;

struct Noop;
impl Handler for Noop {
    fn run(&self, _ctx: HandlerContext) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(async { Ok(()) })
    }
}

fn pct(v: &mut [i64], p: f64) -> i64 {
    v.sort_unstable();
    sundial_tests::bench::percentile(v, p)
}

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.into())
}

async fn raw_rates(env: &sundial_tests::TestEnv, tag: &str) -> Result<(f64, f64)> {
    let n = 300;
    let t = Instant::now();
    for i in 0..n {
        env.clients
            .ddb
            .put_item()
            .table_name(&env.cfg.executions_table)
            .item("pk", AttributeValue::S(format!("raw#{tag}#{i}")))
            .item("sk", AttributeValue::S("x".into()))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await?;
    }
    let put_rate = n as f64 / t.elapsed().as_secs_f64();
    // A queue of its own: measured on the pool queue, the cycles received (and deleted) the
    // executions' own messages once they were visible (found at 50,000 jobs, where the tick runs
    // past the due second: 91 executions lost their message to the measurement).
    let name = format!("{}raw-{tag}", env.cfg.queue_prefix);
    let url = env.clients.sqs.create_queue().queue_name(&name).send().await?.queue_url.unwrap_or_default();
    let sqs = sundial_tests::bench::sqs_cycles_per_sec(&env.clients.sqs, &url, 100).await?;
    env.clients.sqs.delete_queue().queue_url(&url).send().await?;
    Ok((put_rate, sqs))
}

#[tokio::main]
async fn main() -> Result<()> {
    let jobs: usize = arg("--jobs", "1000").parse().context("--jobs")?;
    let out = arg("--out", "");
    // Logical shards: 4,096 in production; locally fewer, because the emulator's Query scans the
    // whole table (every bucket query costs O(table) there, O(result) on DynamoDB).
    let shards: u32 = arg("--shards", "16").parse().context("--shards")?;
    let class_arg = if std::env::args().any(|a| a == "--every-minute") {
        "every-minute".into()
    } else {
        arg("--class", "daily")
    };
    anyhow::ensure!(
        ["daily", "every-minute", "bucket"].contains(&class_arg.as_str()),
        "--class: expected daily, every-minute or bucket, got {class_arg:?}"
    );
    let spread = std::env::args().any(|a| a == "--spread");
    let env = sundial_tests::TestEnv::with("bench", &["default"], shards).await?;
    let cfg: Config = env.cfg.clone();

    // 1. the emulator's raw single-client rates, in this run
    let (raw_put, raw_sqs) = raw_rates(&env, "before").await?;
    eprintln!("raw: {raw_put:.0} conditional PutItem/s, {raw_sqs:.1} SQS send+receive+delete/s");

    // 2. N jobs due at second 0 of minute D
    let load_t = Instant::now();
    // MiniStack loads ~540 jobs/s with 4 loaders (moto ~150: pass a smaller --jobs there).
    let load_estimate = Duration::seconds((jobs as i64) / 400 + 20);
    let d_min = sundial_core::keys::minute_of(Utc::now() + load_estimate) + 2;
    let due: DateTime<Utc> = sundial_core::keys::minute_start(d_min);
    let expr_of = |i: usize| {
        let sec = if spread { i % 60 } else { 0 };
        match class_arg.as_str() {
            "every-minute" => format!("{sec} * * * * *"),
            "bucket" => format!("{sec} {} {} {} * *", due.minute(), due.hour(), due.day()),
            _ => format!("{sec} {} {} * * *", due.minute(), due.hour()),
        }
    };
    let mut def = sundial_tests::trigger::definition(&expr_of(0), "UTC", MisfirePolicy::FireOnce);
    def.target = Target::InProcess { handler: "noop".into() };
    def.params = serde_json::json!({});
    let loaders: Vec<_> = (0..4)
        .map(|w| {
            let (cfg, def, class_arg) = (cfg.clone(), def.clone(), class_arg.clone());
            let ddb = sundial_tests::clients().ddb;
            let exprs: Vec<String> = (0..jobs).map(expr_of).collect();
            tokio::spawn(async move {
                for i in (w..jobs).step_by(4) {
                    let mut def = def.clone();
                    def.schedule.expression = exprs[i].clone();
                    let first = due + Duration::seconds(if spread { (i % 60) as i64 } else { 0 });
                    let job = sundial_core::model::Job::new(
                        &cfg,
                        "bench",
                        &format!("job-{i:05}"),
                        def,
                        Utc::now(),
                    )?;
                    // Where a scan would have left it: a daily job in the bucket of its fire, an
                    // every-minute job in the every class at its next fire D.
                    let class = match class_arg.as_str() {
                        "every-minute" => DueClass::Every,
                        "bucket" => DueClass::Bucket,
                        _ => DueClass::Daily(sundial_core::keys::minute_of_day(
                            sundial_core::keys::minute_of(due),
                        )),
                    };
                    let job = sundial_core::model::Job { due_class: class, next_fire_at: Some(first), ..job };
                    sundial_core::store::jobs::put_new_job(&ddb, &cfg, &job).await?;
                }
                anyhow::Ok(())
            })
        })
        .collect();
    for l in loaders {
        l.await??;
    }
    eprintln!("loaded {jobs} jobs in {:.1}s, due at {due}", load_t.elapsed().as_secs_f64());

    // 3. tick at D - 60 s on the real clock
    let tick_at = due - Duration::seconds(60);
    let wait = (tick_at - Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(wait).await;
    let meter = Meter::new(&cfg);
    let sdk = sundial_tests::sdk_config();
    let tick_clients = meter.clients(&sdk, "tick");
    let ctx = Ctx {
        ddb: tick_clients.ddb.clone(),
        cfg: cfg.clone(),
        queues: PoolQueues::new(tick_clients.sqs.clone(), cfg.clone()),
    };
    let opts = ScanOptions { send_clock: Some(SendClock(Arc::new(Utc::now))), ..Default::default() };
    let t = Instant::now();
    let cpu_before = sundial_tests::bench::process_cpu_ms();
    let now = Utc::now();
    let report = scan_shards(
        &ctx,
        0..cfg.shards,
        now,
        &tokio::sync::Mutex::new(CatchUpBudget::new(100_000, 100_000)),
        &opts,
    )
    .await?;
    let tick_secs = t.elapsed().as_secs_f64();
    let tick_cpu_ms_per_fire = match (cpu_before, sundial_tests::bench::process_cpu_ms()) {
        (Some(a), Some(b)) => Some((b - a) as f64 / report.created.max(1) as f64),
        _ => None,
    };
    let fires_per_sec = report.created as f64 / tick_secs;
    // The emulator is shared and its rate drifts: measure it again right after the tick and
    // compare with the mean of both.
    let (raw_put_after, _) = raw_rates(&env, "after").await?;
    let raw_put = (raw_put + raw_put_after) / 2.0;
    let mut lag: Vec<i64> = report.lag_ms.values().flatten().copied().collect();
    let (lag50, lag99, lagmax) = (pct(&mut lag, 0.5), pct(&mut lag, 0.99), pct(&mut lag, 1.0));
    eprintln!(
        "tick: {} fires in {tick_secs:.1}s = {fires_per_sec:.0}/s ({:.2}x raw put rate); enqueue - scheduled p50 {lag50} ms, p99 {lag99} ms, max {lagmax} ms",
        report.created,
        fires_per_sec / raw_put
    );

    if std::env::args().any(|a| a == "--tick-only") {
        let result = serde_json::json!({
            "jobs": jobs, "shards": cfg.shards, "schedule": def.schedule.expression,
            "emulatorRaw": {"conditionalPutPerSec": raw_put, "conditionalPutPerSecAfterTick": raw_put_after, "sqsCyclesPerSec": raw_sqs},
            "tick": {"fires": report.created, "seconds": tick_secs, "firesPerSec": fires_per_sec,
                      "ratioToRawPut": fires_per_sec / raw_put, "buckets": report.buckets,
                      "enqueueMinusScheduledMs": {"p50": lag50, "p99": lag99, "max": lagmax}},
            "perExecution": {"tick": meter.snapshot().get("tick").map(|u| serde_json::json!({
                "writeUnits": u.write_units / report.created.max(1) as f64,
                "sqsRequests": u.service_requests("sqs") as f64 / report.created.max(1) as f64}))},
        });
        let text = serde_json::to_string_pretty(&result)?;
        println!("{text}");
        if !out.is_empty() {
            std::fs::write(&out, &text)?;
        }
        env.cleanup().await;
        return Ok(());
    }

    // 4. a worker until every execution succeeded
    let worker_clients = meter.clients(&sdk, "worker");
    let settings = WorkerSettings::new("bench-worker", "default");
    let sink = Arc::new(MemorySink::default());
    let worker = Arc::new(Worker::new(
        cfg.clone(),
        settings,
        &worker_clients,
        Handlers::new().with("noop", Noop),
        Arc::new(SystemClock),
        sink.clone(),
    )?);
    let shutdown = tokio_util::sync::CancellationToken::new();
    let opts = sundial_worker::long_poll::EcsOptions {
        slots: 32,
        shutdown_grace: std::time::Duration::from_secs(5),
        wait_secs: 1,
        diagnostic_handlers: false,
    };
    let poller = tokio::spawn(sundial_worker::long_poll::run(worker, opts, shutdown.clone()));
    let deadline = Instant::now() + std::time::Duration::from_secs(120 + jobs as u64 / 10);
    loop {
        let done = sink.records().iter().filter(|m| m.outcome == Some(ExecStatus::Succeeded)).count();
        if done >= report.created as usize || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    shutdown.cancel();
    let _ = poller.await;
    let records = sink.records();
    let succeeded = records.iter().filter(|m| m.outcome == Some(ExecStatus::Succeeded)).count();
    let mut start_lag: Vec<i64> = records.iter().filter_map(|m| m.start_lag_ms).collect();
    let (sl50, sl99) = (pct(&mut start_lag, 0.5), pct(&mut start_lag, 0.99));
    eprintln!("worker: {succeeded} succeeded; start lag p50 {sl50} ms, p99 {sl99} ms");
    let emulator = std::env::var("SUNDIAL_EMULATOR").unwrap_or_else(|_| "ministack".into());

    // 4b. the verification pass over minute D (every-minute and daily fires are put without an
    // `open` index entry; a tick two minutes later reads them again): metered on its own, as a
    // later tick would run it, with the E# jobs it would have read.
    let verify_clients = meter.clients(&sdk, "verify");
    let verify_ctx = Ctx {
        ddb: verify_clients.ddb.clone(),
        cfg: cfg.clone(),
        queues: PoolQueues::new(verify_clients.sqs.clone(), cfg.clone()),
    };
    let mut verify_report = sundial_core::trigger::scan::ScanReport::default();
    let verify_now = due + Duration::minutes(3);
    for shard in 0..cfg.shards {
        let every = sundial_core::store::jobs::query_due(
            &verify_ctx.ddb,
            &cfg.jobs_table,
            &sundial_core::keys::every_bucket(shard),
        )
        .await?
        .jobs;
        sundial_core::trigger::verify::verify_minutes(
            &verify_ctx,
            shard,
            &every,
            d_min - 1,
            d_min,
            verify_now,
            &mut verify_report,
        )
        .await?;
    }
    eprintln!(
        "verify: {} fires read again, {} indexed",
        verify_report.verified, verify_report.verify_tracked
    );

    // 5. cost per execution
    let usage = meter.snapshot();
    let n = succeeded.max(1) as f64;
    let per_kind = |m: &std::collections::BTreeMap<String, f64>| {
        m.iter().map(|(k, v)| (k.clone(), serde_json::json!(v / n))).collect::<serde_json::Map<_, _>>()
    };
    let per = |c: &str| {
        let u = usage.get(c).cloned().unwrap_or_default();
        serde_json::json!({
            "writeUnits": u.write_units / n, "indexWriteUnits": u.index_write_units / n,
            "readUnits": u.read_units / n,
            "writesByKind": per_kind(&u.writes_by_kind), "readsByKind": per_kind(&u.reads_by_kind),
            "sqsRequests": u.service_requests("sqs") as f64 / n,
            "lambdaInvokes": u.service_requests("lambda") as f64 / n,
            "requests": u.requests,
        })
    };
    // The emulator's floor for the start lag: every request of every execution, served one at a
    // time at the raw rate measured in this run.
    let requests_per_exec: f64 =
        usage.values().map(|u| u.requests.values().sum::<u64>() as f64).sum::<f64>() / n;
    let floor_ms = (succeeded as f64 * requests_per_exec / raw_put * 1000.0) as i64;
    let result = serde_json::json!({
        "jobs": jobs, "shards": cfg.shards, "schedule": def.schedule.expression, "emulator": emulator,
        "emulatorRaw": {"conditionalPutPerSec": raw_put, "conditionalPutPerSecAfterTick": raw_put_after, "sqsCyclesPerSec": raw_sqs},
        "tick": {"fires": report.created, "seconds": tick_secs, "firesPerSec": fires_per_sec,
                  "ratioToRawPut": fires_per_sec / raw_put, "buckets": report.buckets,
                  "enqueueMinusScheduledMs": {"p50": lag50, "p99": lag99, "max": lagmax}},
        "tickCpuMsPerFire": tick_cpu_ms_per_fire, "spread": spread,
        "worker": {"succeeded": succeeded, "startLagMs": {"p50": sl50, "p99": sl99},
                   "emulatorFloorMs": floor_ms, "requestsPerExecution": requests_per_exec},
        "verify": {"firesRead": verify_report.verified, "indexed": verify_report.verify_tracked},
        "perExecution": {"tick": per("tick"), "worker": per("worker"), "verify": per("verify")},
    });
    let text = serde_json::to_string_pretty(&result)?;
    println!("{text}");
    if !out.is_empty() {
        std::fs::write(&out, &text)?;
    }
    env.cleanup().await;
    Ok(())
}
