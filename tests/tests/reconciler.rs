//! No fire is ever lost (seed 000 §1: every due execution is eventually claimed): executions
//! whose delivery is gone are found from the execution records and sent again. Fixed instants,
//! an injected clock, the real SDK against the emulator.

use chrono::{DateTime, Duration, Utc};
use std::collections::BTreeSet;
use sundial_core::model::{ExecMessage, ExecStatus};
use sundial_core::queue::PoolQueues;
use sundial_core::schedule::MisfirePolicy;
use sundial_core::trigger::plan::CatchUpBudget;
use sundial_core::trigger::scan::{scan_shards, ScanOptions};
use sundial_core::Ctx;
use sundial_tests::fixtures;
use sundial_tests::trigger::{at, create_job, ctx, definition, executions};
use sundial_tests::TestEnv;
use tokio::sync::Mutex;

/// The trigger context with SQS unreachable: every queue URL lookup fails, as when SQS is down.
fn ctx_without_sqs(env: &TestEnv) -> Ctx {
    let mut cfg = env.cfg.clone();
    cfg.queue_prefix = format!("{}unreachable-", cfg.queue_prefix);
    Ctx {
        ddb: env.clients.ddb.clone(),
        queues: PoolQueues::new(env.clients.sqs.clone(), cfg.clone(), true),
        cfg,
    }
}

/// What the deployed system runs in one minute at `now`: the tick's scan of every shard.
async fn one_minute(env: &TestEnv, ctx: &Ctx, now: DateTime<Utc>) {
    let budget = Mutex::new(CatchUpBudget::new(100_000, 100_000));
    let opts = ScanOptions::default();
    if let Err(e) = scan_shards(ctx, 0..env.cfg.shards, now, &budget, &opts).await {
        eprintln!("{now}: scan failed (as SQS is down): {e}");
    }
}

/// Keys (job, scheduled ms) of the messages receivable now in the pool's queue.
async fn messages(env: &TestEnv) -> anyhow::Result<BTreeSet<(String, i64)>> {
    let mut seen = BTreeSet::new();
    loop {
        let got = fixtures::receive(env, env.queue_url("default"), 300).await?;
        if got.is_empty() {
            return Ok(seen);
        }
        for m in got {
            let msg: ExecMessage = serde_json::from_str(m.body().unwrap_or_default())?;
            seen.insert((msg.job_id, msg.scheduled_ms));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn executions_written_while_sqs_was_down_are_sent_once_it_is_back() -> anyhow::Result<()> {
    // GIVEN an every-minute `fire_once` job, and SQS down from 12:00 to 12:05: each tick writes
    // the executions, and every send fails
    let env = TestEnv::new("reconcile-sqs-down").await?;
    let t0 = at("2026-11-30T12:00:05Z");
    let def = definition("0 * * * * *", "UTC", MisfirePolicy::FireOnce);
    create_job(&env, "acme", "minutely", def, t0).await?;
    let down = ctx_without_sqs(&env);
    for m in 0..5 {
        one_minute(&env, &down, t0 + Duration::seconds(5) + Duration::minutes(m)).await;
    }
    let written: Vec<i64> = executions(&env, "acme", "minutely")
        .await?
        .iter()
        .filter(|e| e.status == ExecStatus::Ready)
        .map(|e| e.scheduled_at.timestamp_millis())
        .collect();
    assert!(written.len() >= 3, "the ticks wrote executions while SQS was down: {written:?}");

    // WHEN SQS is back and the system runs a few more minutes
    let up = ctx(&env);
    for m in 5..9 {
        one_minute(&env, &up, t0 + Duration::seconds(5) + Duration::minutes(m)).await;
    }

    // THEN every execution written while SQS was down has a message (the later misfire plan,
    // `fire_once`, does not include them, so only the execution records know they exist)
    let queued = messages(&env).await?;
    let unsent: Vec<i64> =
        written.iter().copied().filter(|ms| !queued.contains(&("minutely".to_string(), *ms))).collect();
    assert!(unsent.is_empty(), "READY executions never sent: {unsent:?} (queued: {queued:?})");
    env.cleanup().await;
    Ok(())
}
