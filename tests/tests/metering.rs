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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_back_pressure_signal_costs_two_queue_reads_per_pool_per_ten_seconds_not_per_fire(
) -> anyhow::Result<()> {
    // GIVEN ten low-priority daily jobs due in the same minute (docs/priority.md), and ten
    // normal ones
    let env = TestEnv::with("meter-bp", &["default"], 4).await?;
    for i in 0..20 {
        let p = if i < 10 { sundial_core::priority::Priority::Low } else { Default::default() };
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
