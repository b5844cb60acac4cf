//! The `tick` binary through `cargo lambda watch`: an EventBridge scheduled event goes in
//! through aws-sdk-lambda `Invoke`, the real `lambda_runtime` loop runs the handler, and the
//! executions land in the emulator's tables and queues.

use aws_sdk_lambda::primitives::Blob;
use sundial_core::schedule::MisfirePolicy;
use sundial_tests::lambda_watch::LambdaWatch;
use sundial_tests::trigger::{create_job, definition, executions, queued};
use sundial_tests::TestEnv;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tick_lambda_creates_and_enqueues_executions() -> anyhow::Result<()> {
    // GIVEN a job firing every 15 seconds and the tick function running under cargo lambda watch
    let env = TestEnv::new("tick-lambda").await?;
    let now = chrono::Utc::now();
    create_job(&env, "acme", "q15", definition("*/15 * * * * *", "UTC", MisfirePolicy::FireOnce), now)
        .await?;
    let mut fn_env = env.cfg.to_env();
    fn_env.extend([
        ("AWS_ENDPOINT_URL".to_string(), sundial_tests::endpoint()),
        ("AWS_REGION".into(), "us-east-1".into()),
        ("AWS_ACCESS_KEY_ID".into(), "test".into()),
        ("AWS_SECRET_ACCESS_KEY".into(), "test".into()),
        ("SUNDIAL_FAIR_QUEUES".into(), "false".into()),
    ]);
    let watch = LambdaWatch::start("sundial-tick", &fn_env).await?;

    // WHEN EventBridge's scheduled event is invoked
    let event = serde_json::json!({
        "version": "0", "id": "tick-1", "detail-type": "Scheduled Event", "source": "aws.events",
        "account": "123456789012", "time": now.to_rfc3339(), "region": "us-east-1",
        "resources": ["arn:aws:events:us-east-1:123456789012:rule/sundial-tick"], "detail": {}
    });
    let out = watch
        .client()
        .invoke()
        .function_name("tick")
        .payload(Blob::new(serde_json::to_vec(&event)?))
        .send()
        .await?;
    assert!(
        out.function_error().is_none(),
        "tick failed: {:?}",
        out.payload().map(|p| String::from_utf8_lossy(p.as_ref()))
    );
    let body: serde_json::Value = serde_json::from_slice(out.payload().map(|p| p.as_ref()).unwrap_or(b"{}"))?;

    // THEN it reports and stores the fires up to the end of the next minute, and enqueues them
    let created = body["tick"]["created"].as_u64().unwrap_or(0);
    let ex = executions(&env, "acme", "q15").await?;
    assert!(created >= 4, "at least a full minute of 15-second fires: {body}");
    assert_eq!(ex.len() as u64, created);
    assert_eq!(queued(&env, "default").await?, created);
    assert!(
        ex.iter().all(|e| e.timeline[0].actor.starts_with("tick:")),
        "audit actor is the tick invocation"
    );
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tick_fans_shard_ranges_out_to_async_scan_invocations() -> anyhow::Result<()> {
    // GIVEN 32 shards, at most 8 scanned in-process, 8 per scan: the tick must fan out 4
    // asynchronous invocations (to itself, as the scan function)
    let env = TestEnv::with("tick-fanout", &["default"], 32).await?;
    let now = chrono::Utc::now();
    for i in 0..12 {
        let def = definition("*/30 * * * * *", "UTC", MisfirePolicy::FireOnce);
        create_job(&env, "acme", &format!("job-{i}"), def, now).await?;
    }
    let mut fn_env = env.cfg.to_env();
    fn_env.extend([
        ("AWS_ENDPOINT_URL".to_string(), sundial_tests::endpoint()),
        ("AWS_ENDPOINT_URL_LAMBDA".into(), "{watch}".into()),
        ("AWS_REGION".into(), "us-east-1".into()),
        ("AWS_ACCESS_KEY_ID".into(), "test".into()),
        ("AWS_SECRET_ACCESS_KEY".into(), "test".into()),
        ("SUNDIAL_FAIR_QUEUES".into(), "false".into()),
        ("SUNDIAL_SCAN_FUNCTION".into(), "tick".into()),
        ("SUNDIAL_TICK_IN_PROCESS_MAX_SHARDS".into(), "8".into()),
        ("SUNDIAL_SHARDS_PER_SCAN".into(), "8".into()),
    ]);
    let watch = LambdaWatch::start("sundial-tick", &fn_env).await?;
    // WHEN the scheduled event arrives
    let event = serde_json::json!({"detail-type": "Scheduled Event", "source": "aws.events",
        "time": now.to_rfc3339(), "detail": {}});
    let out = watch
        .client()
        .invoke()
        .function_name("tick")
        .payload(Blob::new(serde_json::to_vec(&event)?))
        .send()
        .await?;
    let body: serde_json::Value = serde_json::from_slice(out.payload().map(|p| p.as_ref()).unwrap_or(b"{}"))?;
    // THEN it reports the fan-out rather than scanning itself
    assert_eq!(body["tick"]["fannedOut"], 4, "{body}");
    // AND the four scans, run asynchronously, create every job's fires (polled: a guard, not a
    // timing assertion)
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let mut with = 0;
        for i in 0..12 {
            if !executions(&env, "acme", &format!("job-{i}")).await?.is_empty() {
                with += 1;
            }
        }
        if with == 12 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "only {with} of 12 jobs got executions from the fanned-out scans"
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    env.cleanup().await;
    Ok(())
}
