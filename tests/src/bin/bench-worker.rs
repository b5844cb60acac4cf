//! Figures for the execution plane (a benchmark, not a test; about 90 s against the emulator):
//!
//! ```text
//! . localstack/env.sh && cargo run -p sundial-tests --bin bench-worker
//! ```
//!
//! 500 executions due within one minute, created and enqueued the way the trigger does it
//! (PutItem, then `SendMessageBatch` with per-entry `DelaySeconds` rounded down), run by one ECS
//! poll loop (64 slots) against a local webhook. It prints start-lag percentiles (claim − scheduled, first
//! attempts), queue wait, the emulator's raw rates measured in the same run, and the worker's
//! requests per execution by operation. Nothing here asserts a timing: it reports.

use anyhow::Context;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use chrono::{Duration as CDuration, Utc};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use sundial_core::aws::Clients;
use sundial_core::execution::target::in_process::Handlers;
use sundial_core::queue::{delay_secs, Outgoing, PoolQueues};
use sundial_tests::fixtures::{self, WebhookServer};
use sundial_tests::TestEnv;

/// One poll loop: the emulator turns each long poll into short polls every 50 ms under its one
/// lock, so every extra idle poller costs it ~20 requests/s (on SQS a long poll costs nothing).
const POLLERS: usize = 1;
const SLOTS: usize = 64;
/// Long-poll wait (s); the emulator keeps serving a dropped long poll until it ends, so the
/// "after" raw rate is measured once they have.
const WAIT_SECS: i32 = 5;

/// Counts requests by `Service.Operation` (every attempt, as billed).
#[derive(Debug, Default, Clone)]
struct Counter(Arc<Mutex<BTreeMap<String, u64>>>);

impl Intercept for Counter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(m) = cfg.load::<Metadata>() {
            if let Ok(mut c) = self.0.lock() {
                *c.entry(format!("{}.{}", m.service(), m.name())).or_default() += 1;
            }
        }
        Ok(())
    }
}

fn counted_clients(counter: &Counter) -> Clients {
    let base = sundial_tests::clients();
    Clients {
        ddb: aws_sdk_dynamodb::Client::from_conf(
            base.ddb.config().to_builder().interceptor(counter.clone()).build(),
        ),
        sqs: aws_sdk_sqs::Client::from_conf(
            base.sqs.config().to_builder().interceptor(counter.clone()).build(),
        ),
        lambda: base.lambda,
        secrets: base.secrets,
        events: base.events,
        sns: base.sns,
        sfn: base.sfn,
        ecs: base.ecs,
    }
}

/// Percentile `p` (0..=100) of an ascending slice.
fn pct(sorted: &[i64], p: f64) -> i64 {
    sundial_tests::bench::percentile(sorted, p / 100.0)
}

/// The emulator's raw single-client rates: conditional UpdateItems per second and SQS
/// send + receive + delete cycles per second.
async fn raw_rates(env: &TestEnv, tag: &str) -> anyhow::Result<(f64, f64)> {
    use aws_sdk_dynamodb::types::AttributeValue as A;
    let n = 100;
    let t = Instant::now();
    for i in 0..n {
        env.clients
            .ddb
            .update_item()
            .table_name(&env.cfg.jobs_table)
            .key("pk", A::S(format!("raw-rate-{tag}")))
            .key("sk", A::S("c".into()))
            .update_expression("SET n = :n")
            .condition_expression("attribute_not_exists(n) OR n < :n")
            .expression_attribute_values(":n", A::N(i.to_string()))
            .send()
            .await?;
    }
    let ddb = n as f64 / t.elapsed().as_secs_f64();
    let url = env.queues["default"].dlq_url.clone();
    let sqs = sundial_tests::bench::sqs_cycles_per_sec(&env.clients.sqs, &url, 40).await?;
    Ok((ddb, sqs))
}

/// Start lag of 500 executions due in one minute (about 90 s; a benchmark, not a check).
#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() -> anyhow::Result<()> {
    // SUNDIAL_BENCH_EXECUTIONS=100 shows the lag where the emulator keeps up.
    let executions: usize =
        std::env::var("SUNDIAL_BENCH_EXECUTIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(500);
    let env = TestEnv::new("bench-lag").await?;
    let hook = WebhookServer::start(vec![]).await?;
    let (raw_ddb_before, raw_sqs_before) = raw_rates(&env, "before").await.context("raw rates before")?;

    // 500 executions spread evenly over one minute starting 20 s from now, created and queued
    // like the trigger does.
    let t0 = Utc::now() + CDuration::seconds(20);
    let def = fixtures::http_definition(&hook.url("/run"));
    let queues = PoolQueues::new(env.clients.sqs.clone(), env.cfg.clone());
    let mut execs = Vec::new();
    let created = Instant::now();
    for i in 0..executions {
        let at = t0 + CDuration::milliseconds((i as i64 * 60_000) / executions as i64);
        let at = at - CDuration::milliseconds(at.timestamp_subsec_millis() as i64); // whole seconds, like cron
        let e = fixtures::ready_execution("acme", &format!("job{i:03}"), def.clone(), at, Utc::now());
        fixtures::put_execution(&env, &e).await.context("putting")?;
        execs.push(e);
    }
    // Delays are computed right before each batch is sent, as the trigger does.
    for chunk in execs.chunks(10) {
        let now = Utc::now();
        let outgoing: Vec<Outgoing> = chunk
            .iter()
            .map(|e| Outgoing {
                message: fixtures::message_of(e, now),
                delay_secs: delay_secs(e.fire_at.timestamp_millis(), now.timestamp_millis()),
            })
            .collect();
        queues.send_all("default", &outgoing).await.context("enqueueing")?;
    }
    let setup_s = created.elapsed().as_secs_f64();
    assert!(
        Utc::now() < t0,
        "setup took {setup_s:.1} s, past the first fire: the figures would be meaningless"
    );

    // The ECS poll loop(s), counting their requests.
    let counter = Counter::default();
    let mut pollers = Vec::new();
    let mut sinks = Vec::new();
    for p in 0..POLLERS {
        let clients = counted_clients(&counter);
        let (w, sink) = fixtures::worker_with_clients(
            &env,
            fixtures::settings(&format!("bench-{p}")),
            Handlers::new(),
            &clients,
        )?;
        sinks.push(sink);
        pollers.push(fixtures::spawn_poller_with(
            w,
            sundial_worker::long_poll::EcsOptions {
                slots: SLOTS,
                shutdown_grace: Duration::from_secs(5),
                wait_secs: 20,
                diagnostic_handlers: false,
            },
        ));
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(150);
    loop {
        let done: usize =
            sinks.iter().map(|s| s.records().iter().filter(|r| r.outcome.is_some()).count()).sum();
        if done >= executions || tokio::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    for (stop, _) in &pollers {
        stop.cancel();
    }
    let mut receives = 0;
    for (_, h) in pollers {
        let st = h.await?.context("poller")?;
        receives += st.receives.load(std::sync::atomic::Ordering::Relaxed);
    }
    tokio::time::sleep(Duration::from_secs(WAIT_SECS as u64 + 1)).await;
    let (raw_ddb_after, raw_sqs_after) = raw_rates(&env, "after").await.context("raw rates after")?;

    let records: Vec<_> = sinks.iter().flat_map(|s| s.records()).collect();
    let mut lag: Vec<i64> = records.iter().filter_map(|r| r.start_lag_ms).collect();
    let mut wait: Vec<i64> = records.iter().filter_map(|r| r.queue_wait_ms).collect();
    lag.sort_unstable();
    wait.sort_unstable();
    let succeeded =
        records.iter().filter(|r| r.outcome == Some(sundial_core::model::ExecStatus::Succeeded)).count();
    let counts = counter.0.lock().map(|c| c.clone()).unwrap_or_default();
    let per = |k: &str| *counts.get(k).unwrap_or(&0) as f64 / executions as f64;

    println!("\n== execution plane figures ({executions} executions due within one minute, {POLLERS} pollers x {SLOTS} slots) ==");
    println!(
        "setup (put + send) {setup_s:.1} s; succeeded {succeeded}/{executions}; webhook calls {}",
        hook.received().len()
    );
    println!(
        "start lag ms (claim - scheduled, first attempts, n={}): p50 {} p90 {} p99 {} max {}",
        lag.len(),
        pct(&lag, 50.0),
        pct(&lag, 90.0),
        pct(&lag, 99.0),
        lag.last().copied().unwrap_or(0)
    );
    println!("queue wait ms (claim - deliverable): p50 {} p99 {}", pct(&wait, 50.0), pct(&wait, 99.0));
    println!(
        "emulator raw rate, same run: conditional UpdateItem {raw_ddb_before:.0}/s before, {raw_ddb_after:.0}/s after; SQS send+receive+delete {raw_sqs_before:.0}/s before, {raw_sqs_after:.0}/s after"
    );
    println!("worker requests per execution:");
    for (k, v) in &counts {
        println!("  {k:<40} {:>8.3}  ({v} total)", *v as f64 / executions as f64);
    }
    println!(
        "  => DynamoDB write units/execution {:.2} (UpdateItem, items < 1 KiB), read units {:.2} (GetItem, eventually consistent = 0.5)",
        per("DynamoDB.UpdateItem"),
        per("DynamoDB.GetItem") * 0.5
    );
    let sqs_total: u64 = counts.iter().filter(|(k, _)| k.starts_with("SQS.")).map(|(_, v)| *v).sum();
    println!(
        "  => SQS requests/execution {:.3} ({receives} receives, including empty long polls)",
        sqs_total as f64 / executions as f64
    );
    assert_eq!(succeeded, executions, "every execution ran");
    env.cleanup().await;
    Ok(())
}
