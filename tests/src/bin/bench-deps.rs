//! How soon a downstream starts after its upstream succeeds (issue 32: ≤ 2 s p99 on the local
//! run). A benchmark, not a test; about a minute against the emulator:
//!
//! ```text
//! . localstack/env.sh && cargo run -p sundial-tests --bin bench-deps -- --pairs 50 --out docs/bench/dependencies-wake.json
//! ```
//!
//! `--pairs` upstream/downstream job pairs (hourly, the downstream `after` its upstream, both
//! due at the last full hour), run by one ECS poll loop (64 slots, 20 s long polls) against a
//! local webhook. The downstream fires are delivered first and wait (each registers on its
//! upstream's item and sleeps on a delayed copy); then the upstream fires are sent. Per pair it
//! measures the downstream's claim (its timeline's first RUNNING event) minus the upstream's
//! SUCCEEDED event, both written by the same worker process, and reports the percentiles.
//! Nothing here asserts a timing: it reports.

use anyhow::Context;
use chrono::{DateTime, Duration as CDuration, Utc};
use std::time::Duration;
use sundial_core::execution::target::in_process::Handlers;
use sundial_core::model::dependency::Dependency;
use sundial_core::model::{ExecStatus, Execution};
use sundial_core::queue::{Outgoing, PoolQueues};
use sundial_core::schedule::{Schedule, ScheduleSpec};
use sundial_core::store::executions::ExecKey;
use sundial_tests::fixtures::{self, WebhookServer};
use sundial_tests::trigger::create_job;
use sundial_tests::TestEnv;

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

fn pct(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn first(e: &Execution, to: ExecStatus) -> Option<i64> {
    e.timeline.iter().find(|ev| ev.to == to).map(|ev| ev.at)
}

/// One fire of `job` at `t`, put and returned.
async fn fire(env: &TestEnv, job: &sundial_core::model::Job, t: DateTime<Utc>) -> anyhow::Result<Execution> {
    let sch = Schedule::parse(&job.definition.schedule, job.anchor)?;
    let e = Execution::ready(job, &sch, t, None, Utc::now(), "bench");
    fixtures::store(env).put_new(&e).await.context("putting")?;
    Ok(e)
}

async fn send(queues: &PoolQueues, es: &[Execution]) -> anyhow::Result<()> {
    for chunk in es.chunks(10) {
        let now = Utc::now();
        let out: Vec<Outgoing> = chunk.iter().map(|e| Outgoing::for_execution(e, now)).collect();
        queues.send_all("default", &out).await.context("enqueueing")?;
    }
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() -> anyhow::Result<()> {
    let pairs: usize = arg("--pairs").and_then(|v| v.parse().ok()).unwrap_or(50);
    let env = TestEnv::new("bench-deps").await?;
    let hook = WebhookServer::start(vec![]).await?;
    let secs = Utc::now().timestamp();
    let t = DateTime::from_timestamp(secs - secs % 3_600, 0).context("the last full hour")?;
    let created = t - CDuration::hours(1);
    let mut def = fixtures::http_definition(&hook.url("/run"));
    def.schedule = ScheduleSpec::new("0 0 * * * *", "UTC");
    let (mut ups, mut downs) = (Vec::new(), Vec::new());
    for i in 0..pairs {
        let up = create_job(&env, "acme", &format!("up{i:03}"), def.clone(), created).await?;
        let dep = Dependency {
            job: up.job_id.clone(),
            period: Default::default(),
            offset_secs: None,
            status: Default::default(),
        };
        let down =
            create_job(&env, "acme", &format!("down{i:03}"), def.clone().with_after(dep), created).await?;
        ups.push(fire(&env, &up, t).await?);
        downs.push(fire(&env, &down, t).await?);
    }
    let (w, sink) = fixtures::worker_with(&env, fixtures::settings("bench-deps"), Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller_with(
        w,
        sundial_worker::long_poll::EcsOptions {
            slots: 64,
            shutdown_grace: Duration::from_secs(5),
            wait_secs: 20,
            diagnostic_handlers: false,
        },
    );
    let queues = PoolQueues::new(env.clients.sqs.clone(), env.cfg.clone());
    let store = fixtures::store(&env);

    // The downstream fires first: each waits (one handled delivery each).
    send(&queues, &downs).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while sink.records().len() < pairs {
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "the downstream fires were not all handled");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for d in &downs {
        let s = store.get(&ExecKey::of(d), true).await?.context("downstream")?;
        anyhow::ensure!(s.exec.status == ExecStatus::Ready, "{} ran before its upstream", d.id());
    }

    // Then the upstreams; every downstream must be woken by its upstream's success.
    send(&queues, &ups).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(180);
    let mut gaps = Vec::new();
    loop {
        gaps.clear();
        for (u, d) in ups.iter().zip(&downs) {
            let u = store.get(&ExecKey::of(u), true).await?.context("upstream")?.exec;
            let d = store.get(&ExecKey::of(d), true).await?.context("downstream")?.exec;
            if let (Some(ok), Some(run)) = (first(&u, ExecStatus::Succeeded), first(&d, ExecStatus::Running))
            {
                gaps.push(run - ok);
            }
        }
        if gaps.len() == pairs || tokio::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    stop.cancel();
    poller.await?.context("poller")?;
    anyhow::ensure!(gaps.len() == pairs, "only {} of {pairs} downstreams started within 180 s", gaps.len());
    gaps.sort_unstable();
    let doc = serde_json::json!({
        "bench": "dependencies-wake",
        "what": "downstream claim minus upstream SUCCEEDED (ms), one ECS poll loop, 64 slots, 20 s long polls",
        "pairs": pairs,
        "p50_ms": pct(&gaps, 50.0),
        "p90_ms": pct(&gaps, 90.0),
        "p99_ms": pct(&gaps, 99.0),
        "max_ms": gaps.last().copied().unwrap_or(0),
        "min_ms": gaps.first().copied().unwrap_or(0),
        "emulator": std::env::var("SUNDIAL_EMULATOR").unwrap_or_else(|_| "ministack".into()),
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "date": Utc::now().format("%Y-%m-%d").to_string(),
        "command": format!("cargo run -p sundial-tests --bin bench-deps -- --pairs {pairs}"),
    });
    println!(
        "dependencies wake: {pairs} pairs, downstream start after upstream success p50 {} ms, p90 {} ms, p99 {} ms, max {} ms",
        doc["p50_ms"], doc["p90_ms"], doc["p99_ms"], doc["max_ms"]
    );
    if let Some(out) = arg("--out") {
        std::fs::write(&out, serde_json::to_string_pretty(&doc)? + "\n")
            .with_context(|| format!("writing {out}"))?;
    }
    env.cleanup().await;
    Ok(())
}
