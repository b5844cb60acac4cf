//! The metering interceptor counts what the trigger plane spends, against the emulator.

use sundial_core::trigger::plan::CatchUpBudget;
use sundial_core::trigger::scan::{scan_shards, ScanOptions};
use sundial_schedule::MisfirePolicy;
use sundial_testkit::metering::Meter;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_back_pressure_signal_costs_two_queue_reads_per_pool_per_ten_seconds_not_per_fire(
) -> anyhow::Result<()> {
    // GIVEN ten low-priority daily jobs due in the same minute (docs/priority.md), and ten
    // normal ones
    let env = TestEnv::with("meter-bp", &["default"], 4).await?;
    for i in 0..20 {
        let p = if i < 10 { sundial_model::priority::Priority::Low } else { Default::default() };
        let def = definition("0 1 12 * * *", "UTC", MisfirePolicy::FireOnce).with_priority(p);
        create_job(&env, "acme", &format!("d{i}"), def, at("2026-11-30T11:59:00Z")).await?;
    }
    let meter = Meter::new(&env.cfg);
    let ctx = metered_ctx(&env, &meter, "tick");
    let budget = tokio::sync::Mutex::new(CatchUpBudget::new(100, 100));
    // WHEN one tick scans the shards, then another one 5 s later with the same process
    let r = scan_shards(&ctx, 0..4, at("2026-11-30T12:00:05Z"), &budget, &ScanOptions::default()).await?;
    assert_eq!(r.created, 20);
    let again = scan_shards(&ctx, 0..4, at("2026-11-30T12:00:10Z"), &budget, &ScanOptions::default()).await?;
    assert_eq!(again.created, 0);
    // THEN the lane depths were read once per lane (2 GetQueueAttributes for 10 low fires and
    // two scans: 0.1 per low-priority fire here, and less the more fires share the 10 s), and a
    // calm pool deferred nothing
    let u = meter.snapshot().remove("tick").expect("tick usage");
    assert_eq!(u.requests.get("sqs:GetQueueAttributes"), Some(&2), "{:?}", u.requests);
    assert_eq!(u.requests.get("sqs:GetQueueUrl"), Some(&2), "main queue and low lane, once each");
    assert!(r.low_deferred.is_empty(), "{r:?}");
    env.cleanup().await;
    Ok(())
}

/// What the worker spends on `executions` (of one job, due now), delivered once each.
async fn worker_usage(
    env: &TestEnv,
    meter: &Meter,
    w: &sundial_core::execution::worker::Worker,
    job: &str,
    def: &sundial_model::JobDefinition,
    n: i64,
) -> anyhow::Result<sundial_testkit::metering::Usage> {
    use sundial_tests::fixtures;
    let now = chrono::Utc::now();
    let mut bodies = Vec::new();
    for i in 0..n {
        let e =
            fixtures::ready_execution("acme", job, def.clone(), now - chrono::Duration::seconds(i + 1), now);
        fixtures::put_execution(env, &e).await?;
        bodies.push(serde_json::to_string(&fixtures::message_of(&e, now))?);
    }
    meter.reset();
    let stop = tokio_util::sync::CancellationToken::new();
    for b in &bodies {
        w.handle("default", b, &sundial_core::execution::worker::NoExtend, &stop).await;
    }
    Ok(meter.snapshot().remove("worker").unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_limit_costs_one_gate_read_and_two_gate_writes_per_execution_and_no_sqs(
) -> anyhow::Result<()> {
    use sundial_core::execution::resource_limits::{Acquired, ResourceGates};
    use sundial_store::resource_limits as resources;
    use sundial_tests::fixtures::{self, Reply, WebhookServer};
    // GIVEN a limit `legacy-db` of 20, a metered worker, and a webhook that answers at once
    let env = TestEnv::new("meter-res").await?;
    let (ddb, jobs) = (&env.clients.ddb, &env.cfg.jobs_table);
    resources::put_limit(ddb, jobs, "legacy-db", 20, "ops", chrono::Utc::now()).await?;
    let hook = WebhookServer::start((0..100).map(|_| Reply::Status(200)).collect()).await?;
    let meter = Meter::new(&env.cfg);
    let clients = meter.clients(&sundial_tests::sdk_config(), "worker");
    let (w, _) = fixtures::worker_with_clients(
        &env,
        fixtures::settings("meter"),
        sundial_core::execution::target::in_process::Handlers::new(),
        &clients,
    )?;
    let plain = fixtures::http_definition(&hook.url("/run"));
    let mut limited = plain.clone();
    limited.resources = vec!["legacy-db".into()];
    const N: i64 = 10;

    // WHEN ten executions run without the resource, then ten with it (short runs: no heartbeat)
    let a = worker_usage(&env, &meter, &w, "plain", &plain, N).await?;
    let b = worker_usage(&env, &meter, &w, "limited", &limited, N).await?;
    let per =
        |u: &sundial_testkit::metering::Usage, op: &str| *u.requests.get(op).unwrap_or(&0) as f64 / N as f64;
    let delta = |op: &str| per(&b, op) - per(&a, op);
    eprintln!(
        "per execution using one resource, extra: GetItem {:.2}, UpdateItem {:.2}, WU {:.2}, RU {:.2}, SQS {:.2}",
        delta("dynamodb:GetItem"),
        delta("dynamodb:UpdateItem"),
        (b.write_units - a.write_units) / N as f64,
        (b.read_units - a.read_units) / N as f64,
        (b.service_requests("sqs") as f64 - a.service_requests("sqs") as f64) / N as f64,
    );
    // THEN each adds one strongly consistent read of the gate (1 RU) and two gate writes (join,
    // leave: 1 WU each), plus the limit's read (eventually consistent, ½ RU) once per worker per
    // 10 s (here: once for the ten), and no SQS request
    assert_eq!(
        b.requests.get("dynamodb:GetItem").copied().unwrap_or(0),
        a.requests.get("dynamodb:GetItem").copied().unwrap_or(0) + N as u64 + 1
    );
    assert_eq!(delta("dynamodb:UpdateItem"), 2.0);
    assert_eq!(b.write_units - a.write_units, 2.0 * N as f64);
    assert_eq!(b.read_units - a.read_units, 1.0 * N as f64 + 0.5);
    assert_eq!(b.service_requests("sqs"), a.service_requests("sqs"));

    // WHEN one execution finds the resource full (another holds its only unit)
    resources::put_limit(ddb, jobs, "busy-db", 1, "ops", chrono::Utc::now()).await?;
    let gates = ResourceGates::new(ddb.clone(), jobs.clone(), env.cfg.executions_table.clone());
    let now_ms = chrono::Utc::now().timestamp_millis();
    let mut uses = Vec::new();
    let got =
        gates.acquire_all(&["busy-db".into()], "beta:x@1", now_ms + 600_000, 200, now_ms, &mut uses).await?;
    assert!(matches!(got, Acquired::All(_)));
    let mut busy = plain.clone();
    busy.resources = vec!["busy-db".into()];
    let c = worker_usage(&env, &meter, &w, "busy", &busy, 1).await?;
    eprintln!("one resource wait: {:?} WU {} RU {}", c.requests, c.write_units, c.read_units);
    // THEN the wait costs the delivery's reads (execution, and the job before a first claim), the
    // limit read (cached afterwards), one gate read, one send of the fresh copy (a batch of one;
    // the queue URL is resolved once per process; the poll loop or the event source deletes the
    // delivered message), and, as the execution's first wait, one write moving its reconciler
    // look past the wait and raising its generation, and one marking that generation sent once
    // its copy is out (K15, docs/reconciler.md; a later wait within a grace writes nothing)
    assert_eq!(
        c.requests.get("dynamodb:UpdateItem"),
        Some(&2),
        "a first wait moves the look, then marks it sent"
    );
    assert_eq!(c.requests.get("sqs:SendMessageBatch"), Some(&1));
    assert_eq!(c.requests.get("dynamodb:GetItem"), Some(&3), "execution, limit, gate");
    assert_eq!(c.requests.get("dynamodb:Query"), Some(&1), "the job, with its batch covers");
    env.cleanup().await;
    Ok(())
}

/// Runs one fire of `def` on a worker whose every request is metered, to its end; the worker's
/// usage.
async fn metered_fire(
    env: &TestEnv,
    job: &str,
    def: sundial_model::JobDefinition,
) -> anyhow::Result<sundial_testkit::metering::Usage> {
    use std::sync::Arc;
    use sundial_core::execution::clock::SystemClock;
    use sundial_core::execution::metrics::MemorySink;
    use sundial_core::execution::target::in_process::{BoxFuture, Handler, HandlerContext, Handlers};
    use sundial_core::execution::worker::Worker;
    use sundial_tests::fixtures;
    struct Ok_;
    impl Handler for Ok_ {
        fn run(&self, _: HandlerContext) -> BoxFuture<'_, Result<(), sundial_model::retry::RunError>> {
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
    assert_eq!(s.exec.status, sundial_model::ExecStatus::Succeeded);
    Ok(meter.snapshot().remove("worker").unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_fire_costs_a_few_requests_per_child() -> anyhow::Result<()> {
    // GIVEN an ordinary fire and a fire of the same job sharded 8 ways, each run by a metered worker
    let env = TestEnv::new("meter-kids").await?;
    let def = sundial_tests::fixtures::definition(sundial_model::Target::in_process("ok"));
    let one = metered_fire(&env, "plain", def.clone()).await?;
    let n = 8u64;
    let mut sharded = def;
    sharded.shards = Some(n as u32);
    let all = metered_fire(&env, "sharded", sharded).await?;

    // THEN the DynamoDB requests are exactly: for the parent a read, the job check, its claim,
    // one conditional put per child and its wait; for each child a read, its claim, its finish
    // and its tally on the parent; and the parent's end
    let r = |u: &sundial_testkit::metering::Usage, op: &str| *u.requests.get(op).unwrap_or(&0);
    assert_eq!(r(&all, "dynamodb:PutItem"), n);
    assert_eq!(r(&all, "dynamodb:GetItem"), 1 + n);
    assert_eq!(r(&all, "dynamodb:Query"), 1, "the job check (with its batch covers)");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strongly_consistent_read_is_priced_a_whole_unit_and_an_eventual_one_half() -> anyhow::Result<()> {
    // GIVEN a small item, read through metered clients
    use aws_sdk_dynamodb::types::AttributeValue as Av;
    let env = TestEnv::new("meter-consistency").await?;
    let table = env.cfg.executions_table.clone();
    let key = |k: &str| (k.to_string(), Av::S("x".into()));
    env.clients
        .ddb
        .put_item()
        .table_name(&table)
        .item("pk", Av::S("P#1".into()))
        .item("sk", Av::S("x".into()))
        .send()
        .await?;
    let meter = Meter::new(&env.cfg);
    let ddb = meter.clients(&sundial_tests::sdk_config(), "reader").ddb;
    let get = |consistent: bool| {
        let (sk, v) = key("sk");
        ddb.get_item()
            .table_name(&table)
            .key("pk", Av::S("P#1".into()))
            .key(sk, v)
            .consistent_read(consistent)
    };
    // WHEN it is read once strongly consistent
    get(true).send().await?;
    let strong = meter.snapshot().remove("reader").unwrap_or_default().read_units;
    meter.reset();
    // AND once eventually consistent, and queried both ways
    get(false).send().await?;
    let eventual = meter.snapshot().remove("reader").unwrap_or_default().read_units;
    meter.reset();
    let query = |consistent: bool| {
        ddb.query()
            .table_name(&table)
            .key_condition_expression("pk = :p")
            .expression_attribute_values(":p", Av::S("P#1".into()))
            .consistent_read(consistent)
    };
    query(true).send().await?;
    let strong_query = meter.snapshot().remove("reader").unwrap_or_default().read_units;
    meter.reset();
    query(false).send().await?;
    let eventual_query = meter.snapshot().remove("reader").unwrap_or_default().read_units;
    env.cleanup().await;
    // THEN DynamoDB's rule: 1 unit per 4 KiB strongly consistent, half that eventually
    assert_eq!((strong, eventual), (1.0, 0.5), "GetItem");
    assert_eq!((strong_query, eventual_query), (1.0, 0.5), "Query");
    Ok(())
}
