//! No fire is ever lost (docs/reconciler.md: every due execution is eventually claimed): executions
//! whose delivery is gone are found from the execution records and sent again. Fixed instants,
//! an injected clock, the real SDK against the emulator.

use chrono::{DateTime, Duration, Utc};
use std::collections::BTreeSet;
use sundial_core::reconcile::{reconcile, ReconcileOptions};
use sundial_core::trigger::plan::CatchUpBudget;
use sundial_core::trigger::scan::{scan_shards, ScanOptions};
use sundial_core::Ctx;
use sundial_model::{ExecMessage, ExecStatus};
use sundial_schedule::MisfirePolicy;
use sundial_store::queue::PoolQueues;
use sundial_tests::fixtures;
use sundial_tests::trigger::{at, create_job, ctx, definition, executions};
use sundial_tests::TestEnv;
use tokio::sync::Mutex;

/// The trigger context with SQS unreachable: every queue URL lookup fails, as when SQS is down.
fn ctx_without_sqs(env: &TestEnv) -> Ctx {
    let mut cfg = env.cfg.clone();
    cfg.queue_prefix = format!("{}unreachable-", cfg.queue_prefix);
    Ctx { ddb: env.clients.ddb.clone(), queues: PoolQueues::new(env.clients.sqs.clone(), cfg.clone()), cfg }
}

/// What the deployed system runs in one minute at `now`: the tick's scan of every shard, and
/// the reconciler (its own schedule in the CDK app and in `sundial dev`).
async fn one_minute(env: &TestEnv, ctx: &Ctx, now: DateTime<Utc>) {
    let budget = Mutex::new(CatchUpBudget::new(100_000, 100_000));
    let opts = ScanOptions::default();
    if let Err(e) = scan_shards(ctx, 0..env.cfg.shards, now, &budget, &opts).await {
        eprintln!("{now}: scan failed (as SQS is down): {e}");
    }
    if let Err(e) = reconcile(ctx, now, &ReconcileOptions::default()).await {
        eprintln!("{now}: reconcile failed (as SQS is down): {e}");
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
    // GIVEN an every-minute `fireOnce` job, and SQS down from 12:00 to 12:05: each tick writes
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
    // `fireOnce`, does not include them, so only the execution records know they exist)
    let queued = messages(&env).await?;
    let unsent: Vec<i64> =
        written.iter().copied().filter(|ms| !queued.contains(&("minutely".to_string(), *ms))).collect();
    assert!(unsent.is_empty(), "READY executions never sent: {unsent:?} (queued: {queued:?})");
    env.cleanup().await;
    Ok(())
}

/// Lease terms of a test worker holding leases of `duration_ms`.
fn lease(duration_ms: i64) -> sundial_model::claim::LeaseTerms {
    sundial_model::claim::LeaseTerms { duration_ms, skew_margin_ms: 2_000, may_take_over: true }
}

/// Stores `n` READY executions of job `job` firing at `fire` whose message was lost (never
/// enqueued), and returns their keys.
async fn stranded(
    env: &TestEnv,
    job: &str,
    fire: DateTime<Utc>,
    n: i64,
) -> anyhow::Result<Vec<sundial_store::executions::ExecKey>> {
    let mut keys = Vec::new();
    for i in 0..n {
        let at = fire + Duration::milliseconds(i);
        let def = fixtures::http_definition("https://hooks.example.com/run");
        keys.push(fixtures::put_execution(env, &fixtures::ready_execution("acme", job, def, at, at)).await?);
    }
    Ok(keys)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_message_is_sent_again_after_its_grace_with_an_audit_note_and_backs_off() -> anyhow::Result<()>
{
    // GIVEN a READY execution due at 12:00 whose message was lost
    let env = TestEnv::new("reconcile-lost").await?;
    let fire = at("2026-11-30T12:00:00Z");
    let key = stranded(&env, "lost", fire, 1).await?.remove(0);
    let ctx = ctx(&env);
    let opts = ReconcileOptions { actor: "reconciler:test".into(), ..Default::default() };
    let grace = Duration::milliseconds(sundial_core::reconcile::GRACE_MS);

    // WHEN the reconciler runs within the grace: nothing is due for a look
    let r = reconcile(&ctx, fire + grace - Duration::seconds(1), &opts).await?;
    assert_eq!((r.examined, r.resent_total()), (0, 0));
    assert!(messages(&env).await?.is_empty());

    // WHEN it runs after the grace: the message is sent again, once, with a note
    let r = reconcile(&ctx, fire + grace + Duration::seconds(1), &opts).await?;
    assert_eq!((r.examined, r.resent_total()), (1, 1), "{r:?}");
    assert_eq!(messages(&env).await?, BTreeSet::from([("lost".to_string(), fire.timestamp_millis())]));
    let s = fixtures::snapshot(&env, &key).await?;
    let note = s.exec.timeline.last().cloned().unwrap_or_else(|| panic!("no timeline"));
    assert_eq!(
        (note.from, note.to, note.code.as_deref(), note.actor.as_str()),
        (Some(ExecStatus::Ready), ExecStatus::Ready, Some("Resent"), "reconciler:test")
    );
    assert_eq!((s.exec.status, s.exec.fencing_token, s.resends), (ExecStatus::Ready, 0, 1));

    // AND a run right after does not send it again (it backs off), one after the backoff does
    let r = reconcile(&ctx, fire + grace + Duration::seconds(2), &opts).await?;
    assert_eq!(r.resent_total(), 0);
    let r = reconcile(&ctx, fire + grace * 2 + Duration::seconds(2), &opts).await?;
    assert_eq!(r.resent_total(), 1);
    assert_eq!(fixtures::snapshot(&env, &key).await?.resends, 2);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_execution_leaves_the_open_index_when_final_and_a_live_lease_is_left_alone() -> anyhow::Result<()>
{
    // GIVEN two stranded executions; a worker claims both, one finishes, one keeps running
    let env = TestEnv::new("reconcile-final").await?;
    let fire = at("2026-11-30T12:00:00Z");
    let keys = stranded(&env, "two", fire, 2).await?;
    let store = fixtures::store(&env);
    let terms = lease(600_000);
    let mut fences = Vec::new();
    for k in &keys {
        match store.claim(k, "w1", &terms, fire + Duration::seconds(1)).await? {
            sundial_store::executions::ClaimOutcome::Claimed(c) => fences.push(c.fence),
            other => panic!("{other:?}"),
        }
    }
    let finish = sundial_model::claim::Finish::Succeeded;
    store.finish(&keys[0], &fences[0], &finish, fire + Duration::seconds(1)).await?;
    let raw = store.raw(&keys[0]).await?.unwrap_or_default();
    assert!(!raw.contains_key("open_pk") && !raw.contains_key("open_due"), "a final execution is not open");

    // WHEN the reconciler runs after the grace, while the other's 10-minute lease is live
    let grace = Duration::milliseconds(sundial_core::reconcile::GRACE_MS);
    let r = reconcile(&ctx(&env), fire + grace + Duration::seconds(1), &ReconcileOptions::default()).await?;

    // THEN the running one is only looked at again after its lease (no message), and the
    // finished one was never examined
    assert_eq!((r.examined, r.looked_again, r.resent_total()), (1, 1, 0), "{r:?}");
    let s = fixtures::snapshot(&env, &keys[1]).await?;
    let lease_end = s.exec.lease_until.unwrap_or_default();
    assert_eq!(s.open_due, Some(lease_end + 2_000 + sundial_core::reconcile::GRACE_MS));
    assert!(messages(&env).await?.is_empty());

    // WHEN its worker is gone and the lease is long over
    let later = sundial_store::items::ms_to_dt(s.open_due.unwrap_or_default() + 1);
    let r = reconcile(&ctx(&env), later, &ReconcileOptions::default()).await?;
    // THEN it is sent again, so a worker can take it over with the next fencing token
    assert_eq!(r.resent_total(), 1, "{r:?}");
    assert_eq!(messages(&env).await?, BTreeSet::from([("two".to_string(), keys[1].scheduled_ms)]));
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reconciler_costs_o_of_the_open_executions_not_of_the_table() -> anyhow::Result<()> {
    // GIVEN 200 finished executions and 20 stranded ones
    let env = TestEnv::new("reconcile-cost").await?;
    let fire = at("2026-11-30T12:00:00Z");
    let done = stranded(&env, "done", fire, 200).await?;
    let store = fixtures::store(&env);
    let terms = lease(60_000);
    for k in &done {
        if let sundial_store::executions::ClaimOutcome::Claimed(c) =
            store.claim(k, "w", &terms, fire + Duration::seconds(1)).await?
        {
            let finish = sundial_model::claim::Finish::Succeeded;
            store.finish(k, &c.fence, &finish, fire).await?;
        }
    }
    stranded(&env, "lost", fire, 20).await?;

    // WHEN a metered reconciler runs after the grace
    let meter = sundial_testkit::metering::Meter::new(&env.cfg);
    let clients = meter.clients(&sundial_tests::sdk_config(), "reconciler");
    let metered = Ctx {
        ddb: clients.ddb.clone(),
        cfg: env.cfg.clone(),
        queues: PoolQueues::new(clients.sqs.clone(), env.cfg.clone()),
    };
    let now = fire + Duration::minutes(3);
    let r = reconcile(&metered, now, &ReconcileOptions::default()).await?;
    assert_eq!((r.examined, r.resent_total()), (20, 20), "{r:?}");

    // THEN it read only the 20 open ones: one Query per open partition, one read and two
    // conditional writes per open execution (the re-send marked, then marked sent once it is
    // out), and the sends
    let u = meter.snapshot().remove("reconciler").unwrap_or_default();
    let partitions = u64::from(sundial_model::keys::OPEN_PARTITIONS);
    assert_eq!(u.requests.get("dynamodb:Query"), Some(&partitions));
    assert_eq!(u.requests.get("dynamodb:GetItem"), Some(&20));
    assert_eq!(u.requests.get("dynamodb:UpdateItem"), Some(&40));
    let per_open_read = (u.read_units - partitions as f64 * 0.5) / 20.0;
    let per_open_write = u.write_units / 20.0;
    println!(
        "reconciler cost per open execution: {per_open_read:.2} read units, {per_open_write:.2} write units, {:.2} SQS requests (+ {partitions} Queries of ½ unit per run)",
        (u.service_requests("sqs") as f64) / 20.0
    );
    // Two conditional writes per re-send, each charged for the item's size.
    assert!(per_open_read <= 1.0 && per_open_write <= 6.0, "{u:?}");
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlogged_low_lane_is_not_flooded_with_duplicates_of_its_low_priority_executions(
) -> anyhow::Result<()> {
    // GIVEN a low-priority READY execution due at 12:00 with no message, in a pool whose low
    // lane holds a visible backlog of 100 low-priority messages (docs/priority.md) and whose
    // main queue is empty
    let env = TestEnv::new("reconcile-lowlane").await?;
    let fire = at("2026-11-30T12:00:00Z");
    let low = fixtures::http_definition("https://hooks.example.com/run")
        .with_priority(sundial_model::priority::Priority::Low);
    fixtures::put_execution(&env, &fixtures::ready_execution("acme", "late", low.clone(), fire, fire))
        .await?;
    let other = fixtures::ready_execution("acme", "other", low, fire, fire);
    let backlog = sundial_core::reconcile::rules::BACKLOG_MIN_VISIBLE;
    let msgs: Vec<sundial_store::queue::Outgoing> =
        (0..backlog).map(|_| sundial_store::queue::Outgoing::for_execution(&other, fire)).collect();
    let ctx = ctx(&env);
    ctx.queues.send_all("default", &msgs).await?;
    let grace = Duration::milliseconds(sundial_core::reconcile::GRACE_MS);

    // WHEN the reconciler runs just after the grace
    let r = reconcile(&ctx, fire + grace + Duration::seconds(1), &ReconcileOptions::default()).await?;
    // THEN it puts the re-send off: the low lane's backlog counts for low-priority executions
    assert_eq!((r.examined, r.resent_total(), r.deferred_backlog), (1, 0, 1), "{r:?}");
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_with_a_backlog_is_not_flooded_with_duplicates() -> anyhow::Result<()> {
    // GIVEN a READY execution due at 12:00 with no message, in a pool whose queue holds a
    // visible backlog of 100 messages (workers are behind: this one may be among them)
    let env = TestEnv::new("reconcile-backlog").await?;
    let fire = at("2026-11-30T12:00:00Z");
    stranded(&env, "late", fire, 1).await?;
    let other =
        fixtures::ready_execution("acme", "other", fixtures::http_definition("https://x"), fire, fire);
    let backlog = sundial_core::reconcile::rules::BACKLOG_MIN_VISIBLE;
    let msgs: Vec<sundial_store::queue::Outgoing> =
        (0..backlog).map(|_| sundial_store::queue::Outgoing::for_execution(&other, fire)).collect();
    let ctx = ctx(&env);
    ctx.queues.send_all("default", &msgs).await?;
    let grace = Duration::milliseconds(sundial_core::reconcile::GRACE_MS);

    // WHEN the reconciler runs just after the grace
    let r = reconcile(&ctx, fire + grace + Duration::seconds(1), &ReconcileOptions::default()).await?;
    // THEN it puts the re-send off (looks again a grace later) instead of adding a duplicate
    assert_eq!((r.examined, r.resent_total(), r.deferred_backlog), (1, 0, 1), "{r:?}");

    // WHEN it is still due long after, backlog or not
    let later = fire + grace * (sundial_core::reconcile::rules::BACKLOG_GRACES as i32) + Duration::seconds(1);
    let r = reconcile(&ctx, later, &ReconcileOptions::default()).await?;
    // THEN it is sent again
    assert_eq!(r.resent_total(), 1, "{r:?}");
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_execution_whose_message_was_lost_is_resent_on_the_usual_backoff() -> anyhow::Result<()> {
    // GIVEN a fire that went DEAD and was replayed at `t` (DEAD → READY), whose replay message
    // was lost
    let env = TestEnv::new("reconcile-replay").await?;
    let store = fixtures::store(&env);
    let t = Utc::now();
    let sched = t - Duration::minutes(10);
    let e = fixtures::ready_execution(
        "acme",
        "once",
        fixtures::http_definition("https://x.example"),
        sched,
        sched,
    );
    let key = fixtures::put_execution(&env, &e).await?;
    let terms =
        sundial_model::claim::LeaseTerms { duration_ms: 30_000, skew_margin_ms: 200, may_take_over: true };
    let sundial_store::executions::ClaimOutcome::Claimed(c) = store.claim(&key, "w", &terms, sched).await?
    else {
        anyhow::bail!("claim")
    };
    let dead = sundial_model::claim::Finish::Dead {
        reason: "attemptsExhausted".into(),
        error: sundial_model::retry::RunError::retryable("Boom", "down"),
        digest: String::new(),
    };
    store.finish(&key, &c.fence, &dead, sched).await?;
    assert!(store.replay(&key, c.fence.token, "api:ops", "replay", t).await?);

    // WHEN the reconciler runs a grace later
    let now = t + Duration::minutes(3);
    let report = reconcile(&ctx(&env), now, &ReconcileOptions::default()).await?;

    // THEN it re-sends it once, counts one re-send, and looks again after the first backoff
    assert_eq!(report.resent_total(), 1);
    let s = fixtures::snapshot(&env, &key).await?;
    assert_eq!(s.resends, 1);
    let first_backoff = sundial_core::reconcile::backoff_ms(0, sundial_core::reconcile::GRACE_MS);
    assert_eq!(s.open_due, Some(now.timestamp_millis() + first_backoff));
    env.cleanup().await;
    Ok(())
}
