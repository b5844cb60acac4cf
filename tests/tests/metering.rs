//! The metering interceptor counts what the trigger plane spends, against the emulator.

use sundial_core::metering::Meter;
use sundial_core::schedule::MisfirePolicy;
use sundial_core::trigger::plan::CatchUpBudget;
use sundial_core::trigger::scan::{scan_shards, ScanOptions};
use sundial_tests::trigger::{at, create_job, definition, metered_ctx};
use sundial_tests::TestEnv;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_is_metered_per_operation_with_index_writes() -> anyhow::Result<()> {
    // GIVEN ten daily jobs due in the same minute, read through metered clients
    let env = TestEnv::with("meter", &["default"], 4).await?;
    for i in 0..10 {
        create_job(
            &env,
            "acme",
            &format!("d{i}"),
            definition("0 1 12 * * *", "UTC", MisfirePolicy::FireOnce),
            at("2026-11-30T11:59:00Z"),
        )
        .await?;
    }
    let meter = Meter::new(&env.cfg);
    let ctx = metered_ctx(&env, &meter, "tick");
    // WHEN one tick scans the four shards
    let r = scan_shards(
        &ctx,
        0..4,
        at("2026-11-30T12:00:05Z"),
        &tokio::sync::Mutex::new(CatchUpBudget::new(10, 10)),
        &ScanOptions::default(),
    )
    .await?;
    assert_eq!(r.created, 10);
    // THEN each put, advance, batch send and watermark move is counted
    let u = meter.snapshot().remove("tick").expect("tick usage");
    assert_eq!(u.requests.get("dynamodb:PutItem"), Some(&10));
    assert_eq!(u.requests.get("dynamodb:UpdateItem"), Some(&(10 + 4)), "10 advances + 4 watermarks");
    // (one batch per shard bucket that had fires: the messages are sent after each group's puts)
    let batches = *u.requests.get("sqs:SendMessageBatch").unwrap_or(&0);
    assert!((1..=4).contains(&batches), "{batches} batches for 10 messages over 4 shards");
    assert_eq!(u.service_requests("sqs"), 1 + batches, "GetQueueUrl once + the batches");
    // AND write units price the execution puts (1 each + 1 for the keys-only `open` index entry
    // the reconciler reads), each advance that moves the job's due index entry (1 + 2 index),
    // and the watermarks (1 each)
    assert_eq!(u.write_units, 10.0 * 2.0 + 10.0 * 3.0 + 4.0);
    assert_eq!(u.index_write_units, 10.0 + 20.0);
    assert!(u.read_units > 0.0);
    env.cleanup().await;
    Ok(())
}

/// Runs one fire of `def` on a worker whose every request is metered, to its end; the worker's
/// usage.
async fn metered_fire(
    env: &TestEnv,
    job: &str,
    def: sundial_core::model::JobDefinition,
) -> anyhow::Result<sundial_core::metering::Usage> {
    use std::sync::Arc;
    use sundial_core::execution::clock::SystemClock;
    use sundial_core::execution::metrics::MemorySink;
    use sundial_core::execution::target::in_process::{BoxFuture, Handler, HandlerContext, Handlers};
    use sundial_core::execution::worker::Worker;
    use sundial_tests::fixtures;
    struct Ok_;
    impl Handler for Ok_ {
        fn run(
            &self,
            _: HandlerContext,
        ) -> BoxFuture<'_, Result<(), sundial_core::execution::retry::RunError>> {
            Box::pin(async { Ok(()) })
        }
    }
    let meter = Meter::new(&env.cfg);
    let clients = meter.clients(&sundial_tests::sdk_config(), "worker");
    let handlers = Handlers::new().with("ok", Ok_);
    let worker = Arc::new(Worker::new(
        env.cfg.clone(),
        fixtures::settings("meter"),
        &clients,
        handlers,
        Arc::new(SystemClock),
        Arc::new(MemorySink::default()),
    )?);
    let key = fixtures::create_ready(env, "acme", job, def, chrono::Utc::now()).await?;
    let (stop, poller) = fixtures::spawn_poller(worker, 10);
    let s =
        fixtures::wait_for(env, &key, std::time::Duration::from_secs(60), |s| s.exec.status.is_terminal())
            .await?;
    // Let the last deletes (batched every 100 ms) go out before stopping.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    stop.cancel();
    poller.await??;
    assert_eq!(s.exec.status, sundial_core::model::ExecStatus::Succeeded);
    Ok(meter.snapshot().remove("worker").unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_fire_costs_a_few_requests_per_child() -> anyhow::Result<()> {
    // GIVEN an ordinary fire and a fire of the same job sharded 8 ways, each run by a metered worker
    let env = TestEnv::new("meter-kids").await?;
    let def =
        sundial_tests::fixtures::definition(sundial_core::model::Target::InProcess { handler: "ok".into() });
    let one = metered_fire(&env, "plain", def.clone()).await?;
    let n = 8u64;
    let mut sharded = def;
    sharded.shards = Some(n as u32);
    let all = metered_fire(&env, "sharded", sharded).await?;

    // THEN the DynamoDB requests are exactly: for the parent a read, the job check, its claim,
    // one conditional put per child and its wait; for each child a read, its claim, its finish
    // and its tally on the parent; and the parent's end
    let r = |u: &sundial_core::metering::Usage, op: &str| *u.requests.get(op).unwrap_or(&0);
    assert_eq!(r(&all, "dynamodb:PutItem"), n);
    assert_eq!(r(&all, "dynamodb:GetItem"), 2 + n);
    assert_eq!(r(&all, "dynamodb:UpdateItem"), 2 + 3 * n + 1);
    let per = |x: f64| x / n as f64;
    let (ddb, sqs) = (all.service_requests("dynamodb") as f64, all.service_requests("sqs") as f64);
    eprintln!(
        "FIGURE children: per child of an {n}-shard fire (parent included): DynamoDB {:.2} requests, {:.2} WU, {:.2} RU; SQS {:.2} requests ({:?}); an ordinary execution: DynamoDB {} requests, {:.2} WU, {:.2} RU, SQS {} requests ({:?})",
        per(ddb),
        per(all.write_units),
        per(all.read_units),
        per(sqs),
        all.requests.iter().filter(|(k, _)| k.starts_with("sqs:")).collect::<Vec<_>>(),
        one.service_requests("dynamodb"),
        one.write_units,
        one.read_units,
        one.service_requests("sqs"),
        one.requests.iter().filter(|(k, _)| k.starts_with("sqs:")).collect::<Vec<_>>(),
    );
    assert!(per(ddb) <= 6.0, "{:.2} DynamoDB requests per child", per(ddb));
    env.cleanup().await;
    Ok(())
}
