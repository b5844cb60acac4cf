//! Priorities, back-pressure and tenant fairness (docs/priority.md) against the emulator:
//! a noisy tenant's 10,000 queued low-priority executions do not hold back a quiet tenant's
//! on-time fire by more than the stated bound (counted in noisy starts, not in seconds); a
//! busy pool's low-priority fires are deferred by the tick while normal and high ones are not;
//! a saturated lane refuses new work for it with 429 `saturated` (the API side is in
//! `functions/api/tests/api/priority.rs`).

use chrono::{TimeZone, Utc};
use std::time::Duration;
use sundial_core::control::{self, Caller, Control, ControlError, ControlSettings};
use sundial_core::trigger::scan::ScanOptions;
use sundial_core::Ctx;
use sundial_model::priority::{quiet_start_bound, Backpressure, Lane, Priority};
use sundial_model::{JobDefinition, Target};
use sundial_schedule::ScheduleSpec;
use sundial_store::queue::PoolQueues;
use sundial_tests::fairness::{self, Scenario};
use sundial_tests::{trigger as tr, TestEnv};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_noisy_tenants_low_priority_backlog_does_not_hold_back_a_quiet_tenants_on_time_fire(
) -> anyhow::Result<()> {
    // GIVEN 10,000 queued low-priority executions of one tenant, and 2 workers of 10 slots busy
    // with them
    let env = TestEnv::new("prio-fair").await?;
    // (1,000 on moto, whose SQS send is O(queue depth): queuing 10,000 takes it an hour; the
    // bound does not depend on the backlog's size)
    let sc = Scenario {
        noisy: if sundial_tests::on_moto() { 1_000 } else { 10_000 },
        noisy_ms: 20,
        workers: 2,
        slots: 10,
        quiet_fires: 5,
        quiet_every: Duration::from_millis(300),
        warmup: 100,
        lanes: true,
        within: Duration::from_secs(120),
    };
    // WHEN another tenant's on-time fires arrive
    let out = fairness::run(&env, &sc).await?;

    // THEN each started after at most the bound of noisy starts (the receives already in flight
    // and one anti-starvation turn per worker), not behind the backlog
    let bound = quiet_start_bound(sc.workers as u64, sc.slots as u64) + (sc.workers * sc.slots) as u64;
    let worst = out.quiet.iter().map(|q| q.noisy_between).max().unwrap_or(0);
    assert!(worst <= bound, "a quiet fire waited for {worst} noisy starts (bound {bound}): {:?}", out.quiet);
    assert!(
        out.noisy_started < sc.noisy as u64,
        "the backlog was still there when the quiet fires ran ({} of {} started)",
        out.noisy_started,
        sc.noisy
    );
    env.cleanup().await;
    Ok(())
}

fn low_def() -> JobDefinition {
    JobDefinition::new(ScheduleSpec::new("0 * * * * *", "UTC"), Target::http("https://example.com/x"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_pool_defers_low_priority_fires_first_and_keeps_them() -> anyhow::Result<()> {
    // GIVEN a pool whose main queue holds 5 visible messages (the defer threshold in this test)
    let env = TestEnv::new("prio-defer").await?;
    let now = Utc.with_ymd_and_hms(2031, 3, 4, 12, 0, 30).unwrap();
    for i in 0..5 {
        env.clients
            .sqs
            .send_message()
            .queue_url(env.queue_url("default"))
            .message_body(format!("x{i}"))
            .send()
            .await?;
    }
    // AND one job of each priority due in the next minute
    for (id, p) in [("hi", Priority::High), ("mid", Priority::Normal), ("lo", Priority::Low)] {
        tr::create_job(&env, "acme", id, low_def().with_priority(p), now).await?;
    }
    // WHEN the tick scans with deferral at 5 messages, 120 s
    let bp = Backpressure { defer_depth: 5, defer_secs: 120, saturated_depth: 1_000 };
    let opts = ScanOptions { backpressure: Some(bp), ..Default::default() };
    let report = tr::scan(&env, now, &opts).await?;

    // THEN only the low-priority fire is deferred; every fire has its execution (READY, listed)
    assert_eq!(report.low_deferred.get("default").copied(), Some(1), "{report:?}");
    assert_eq!(report.created, 3);
    let low = env
        .clients
        .sqs
        .get_queue_attributes()
        .queue_url(&env.queues["default"].low_url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesDelayed)
        .send()
        .await?;
    let delayed: u64 = low
        .attributes()
        .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesDelayed))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert_eq!(delayed, 1, "the low fire's message waits in the low lane");
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saturated_lane_refuses_its_new_work_with_retry_after() -> anyhow::Result<()> {
    // GIVEN a really deep low lane (50 visible messages, the saturation threshold here) and a
    // calm main queue
    let env = TestEnv::new("prio-429").await?;
    let low_url = env.queues["default"].low_url.clone();
    for chunk in 0..5 {
        let mut req = env.clients.sqs.send_message_batch().queue_url(&low_url);
        for i in 0..10 {
            req = req.entries(
                aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                    .id(format!("m{i}"))
                    .message_body(format!("{chunk}-{i}"))
                    .build()?,
            );
        }
        req.send().await?;
    }
    let ctx = Ctx {
        ddb: env.clients.ddb.clone(),
        queues: PoolQueues::new(env.clients.sqs.clone(), env.cfg.clone()),
        cfg: env.cfg.clone(),
    };
    let settings = ControlSettings {
        backpressure: Backpressure { defer_depth: 10, defer_secs: 30, saturated_depth: 50 },
        ..ControlSettings::default()
    };
    let ctl = Control::new(ctx, settings);
    let caller = Caller { tenant: "acme".into(), principal: "t".into() };
    let now = Utc::now();

    // WHEN a low-priority job is created, THEN 429 saturated with Retry-After 30
    let e = control::jobs::create(&ctl, &caller, "lo", low_def().with_priority(Priority::Low), now)
        .await
        .expect_err("a low job into a saturated low lane");
    assert!(
        matches!(
            e,
            ControlError::Limited { code: sundial_model::ErrorCode::Saturated, retry_after_secs: 30, .. }
        ),
        "{e:?}"
    );
    // AND a normal job (main lane) is created, and its trigger-now works
    control::jobs::create(&ctl, &caller, "mid", low_def(), now).await?;
    control::executions::trigger_now(&ctl, &caller, "mid", now).await?;
    // AND its backfill (bulk: the low lane) is refused
    let req = control::executions::BackfillRequest {
        from: now - chrono::Duration::minutes(3),
        to: now - chrono::Duration::minutes(1),
        pace_secs: 0,
        params: None,
    };
    let e = control::executions::backfill(&ctl, &caller, "mid", &req, now).await.expect_err("saturated");
    assert!(matches!(e, ControlError::Limited { code: sundial_model::ErrorCode::Saturated, .. }), "{e:?}");
    assert_eq!(Lane::Low, sundial_model::priority::backfill_lane());
    env.cleanup().await;
    Ok(())
}
