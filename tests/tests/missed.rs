//! Start deadlines: a fire no worker has started by its job's
//! `startDeadlineSecs` is reported exactly once, as an operations-log entry, a `FireMissed`
//! event on the stack's EventBridge bus and one `FiresMissed` count, whoever notices it (the
//! reconciler, several reconcilers, or a worker that finally claims it late).
//!
//! The event is observed as a user would: an EventBridge rule on the bus that matches one job
//! (`detail.jobId`) and targets an SQS queue, read back through the real SDK.

use anyhow::{Context, Result};
use chrono::{Duration, DurationRound, Utc};
use sundial_core::config::Config;
use sundial_core::execution::mapreduce::{count_key, Count, MapReduceSpec, MapState};
use sundial_core::execution::metrics::MemorySink;
use sundial_core::execution::target::in_process::{BoxFuture, Handler, HandlerContext, Handlers};
use sundial_core::metrics::Emf;
use sundial_core::reconcile::{reconcile, ReconcileOptions, ReconcileReport};
use sundial_core::trigger::scan::ScanOptions;
use sundial_model::children::{child_of, ChildKey};
use sundial_model::claim::{Finish, LeaseTerms};
use sundial_model::retry::RunError;
use sundial_model::{ExecStatus, JobDefinition, OpsAction, OpsEntry, Target};
use sundial_schedule::MisfirePolicy;
use sundial_store::executions::{ClaimOutcome, ExecKey};
use sundial_tests::fixtures;
use sundial_tests::trigger::{at, create_job, ctx, definition, executions, scan};
use sundial_tests::TestEnv;

/// Where FireMissed events of one job land: the bus, and the queue a rule on it fills.
struct Observed {
    bus: String,
    queue_url: String,
}

/// Creates the stack's bus for `env` (as the CDK construct does) and a user's rule on it that
/// sends the `FireMissed` events of `job` to a fresh SQS queue.
async fn bus_with_rule_for(env: &TestEnv, job: &str) -> Result<Observed> {
    let events = &env.clients.events;
    let prefix = env.cfg.jobs_table.trim_end_matches("sundial-jobs").to_string();
    let bus = format!("{prefix}sundial-events");
    events.create_event_bus().name(&bus).send().await.context("CreateEventBus")?;
    let queue = format!("{prefix}fire-missed-{job}");
    let queue_url =
        env.clients.sqs.create_queue().queue_name(&queue).send().await?.queue_url.unwrap_or_default();
    let arn = env
        .clients
        .sqs
        .get_queue_attributes()
        .queue_url(&queue_url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await?
        .attributes()
        .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::QueueArn).cloned())
        .context("queue ARN")?;
    // The rule a user writes to alert on one job (docs/reconciler.md, "Start deadlines").
    let pattern = serde_json::json!({
        "source": ["sundial"], "detail-type": ["FireMissed"], "detail": {"jobId": [job]}
    });
    events
        .put_rule()
        .name(format!("{job}-missed"))
        .event_bus_name(&bus)
        .event_pattern(pattern.to_string())
        .send()
        .await
        .context("PutRule")?;
    let target = aws_sdk_eventbridge::types::Target::builder().id("queue").arn(arn).build()?;
    events
        .put_targets()
        .rule(format!("{job}-missed"))
        .event_bus_name(&bus)
        .targets(target)
        .send()
        .await
        .context("PutTargets")?;
    Ok(Observed { bus, queue_url })
}

/// The event bodies the rule delivered so far: polls (long polling, 1 s) until at least `min`
/// arrived, then once more to see that no more come. Fails after 20 s without `min`: a guard.
async fn delivered(env: &TestEnv, o: &Observed, min: usize) -> Result<Vec<serde_json::Value>> {
    fixtures::received(env, &o.queue_url, min).await
}

/// The FireMissed entries of a job in the operations log.
async fn missed_entries(env: &TestEnv, tenant: &str, job: &str) -> Result<Vec<OpsEntry>> {
    let page =
        sundial_store::ops::list(&env.clients.ddb, &env.cfg.jobs_table, tenant, Some(job), 100, None).await?;
    Ok(page.items.into_iter().filter(|e| e.action == OpsAction::FireMissed).collect())
}

/// The `FiresMissed` count in a set of EMF records (what CloudWatch would sum).
fn fires_missed(lines: &[Emf]) -> u64 {
    lines
        .iter()
        .flat_map(|l| l.lines(0))
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
        .filter_map(|v| v["FiresMissed"].as_u64())
        .sum()
}

fn report_count(r: &Result<ReconcileReport, sundial_core::reconcile::ReconcileError>) -> u64 {
    match r {
        Ok(r) => fires_missed(&r.metric_lines()),
        Err(e) => panic!("reconcile failed: {e}"),
    }
}

fn with_bus(env: &TestEnv, bus: &str) -> Config {
    let mut cfg = env.cfg.clone();
    cfg.event_bus = Some(bus.to_string());
    cfg
}

fn reconciler(env: &TestEnv, name: &str) -> ReconcileOptions {
    ReconcileOptions {
        actor: format!("reconciler:{name}"),
        events: Some(env.clients.events.clone()),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fire_not_started_by_its_deadline_is_reported_once_with_workers_stopped() -> Result<()> {
    // GIVEN a daily 09:00 UTC job that must start within 60 s, a rule on the stack's bus for
    // its FireMissed events, and no worker running
    let mut env = TestEnv::new("missed-stopped").await?;
    let observed = bus_with_rule_for(&env, "nightly").await?;
    env.cfg = with_bus(&env, &observed.bus);
    let def: JobDefinition =
        definition("0 0 9 * * *", "UTC", MisfirePolicy::FireOnce).with_start_deadline_secs(60);
    create_job(&env, "acme", "nightly", def, at("2026-12-01T08:50:00Z")).await?;
    // AND an unrelated job's miss, which the rule must not deliver
    let other = definition("0 0 9 * * *", "UTC", MisfirePolicy::FireOnce).with_start_deadline_secs(60);
    create_job(&env, "acme", "other", other, at("2026-12-01T08:50:00Z")).await?;

    // WHEN the tick's scan at 08:59:30 queues the 09:00 fire
    scan(&env, at("2026-12-01T08:59:30Z"), &ScanOptions::default()).await?;
    let fires = executions(&env, "acme", "nightly").await?;
    assert_eq!(fires.len(), 1, "one fire queued: {fires:?}");
    let key = ExecKey::of(&fires[0]);
    let deadline = at("2026-12-01T09:01:00Z").timestamp_millis();
    // THEN the reconciler will look at it at its deadline, not a grace after its delivery
    // (a daily job's fires are otherwise put outside the `open` index)
    let snap = fixtures::snapshot(&env, &key).await?;
    assert_eq!(snap.open_due, Some(deadline), "the index entry is due at the start deadline");

    // WHEN the reconciler runs just before the deadline
    let before = reconcile(&ctx(&env), at("2026-12-01T09:00:59Z"), &reconciler(&env, "r0")).await;
    assert_eq!(report_count(&before), 0, "nothing is missed before the deadline");

    // AND two reconcilers run at once past it, and another a minute later
    let past = at("2026-12-01T09:01:30Z");
    let (c1, c2) = (ctx(&env), ctx(&env));
    let (o1, o2) = (reconciler(&env, "r1"), reconciler(&env, "r2"));
    let (a, b) = tokio::join!(reconcile(&c1, past, &o1), reconcile(&c2, past, &o2));
    let later = reconcile(&ctx(&env), at("2026-12-01T09:02:30Z"), &reconciler(&env, "r3")).await;

    // THEN exactly one miss per fire is counted, in a metric without a job dimension (two
    // fires missed: this job's and the other's)...
    assert_eq!(report_count(&a) + report_count(&b) + report_count(&later), 2, "one FiresMissed count a fire");
    for r in [&a, &b, &later].into_iter().flatten() {
        for line in r.metric_lines().iter().flat_map(|l| l.lines(0)) {
            if line.contains("FiresMissed") {
                assert!(line.contains(r#"[["Pool"]]"#), "FiresMissed has the Pool dimension only: {line}");
                assert!(!line.contains("nightly"), "no job id in the metric record: {line}");
            }
        }
    }
    // ...one operations-log entry by a reconciler...
    let ops = missed_entries(&env, "acme", "nightly").await?;
    assert_eq!(ops.len(), 1, "one fire_missed entry: {ops:?}");
    assert!(ops[0].actor.starts_with("reconciler:r"), "{:?}", ops[0].actor);
    assert_eq!(ops[0].execution_id.as_deref(), Some(fires[0].id().as_str()));
    // ...and one FireMissed event, delivered by the job's rule
    let events = delivered(&env, &observed, 1).await?;
    assert_eq!(events.len(), 1, "one event for the job: {events:?}");
    let ev = &events[0];
    assert_eq!((ev["source"].as_str(), ev["detail-type"].as_str()), (Some("sundial"), Some("FireMissed")));
    let d = &ev["detail"];
    assert_eq!(d["tenant"], "acme");
    assert_eq!(d["jobId"], "nightly");
    assert_eq!(d["executionId"], fires[0].id());
    assert_eq!(
        d["eventId"],
        format!("acme/{}/FireMissed", fires[0].id()),
        "one id per fire, to deduplicate by"
    );
    assert_eq!(d["scheduledAt"], "2026-12-01T09:00:00.000Z");
    assert_eq!(d["deadline"], "2026-12-01T09:01:00.000Z");
    assert_eq!(d["observedAt"], "2026-12-01T09:01:30.000Z");
    assert_eq!(
        (d["reason"].as_str(), d["status"].as_str(), d["pool"].as_str()),
        (Some("notStarted"), Some("READY"), Some("default"))
    );

    // AND the fire itself is untouched: still READY, to run late when a worker takes it, with
    // the miss on its timeline
    let snap = fixtures::snapshot(&env, &key).await?;
    assert_eq!(snap.exec.status, ExecStatus::Ready);
    assert!(snap.missed_at.is_some());
    let notes: Vec<_> =
        snap.exec.timeline.iter().filter(|e| e.code.as_deref() == Some("StartDeadlineMissed")).collect();
    assert_eq!(notes.len(), 1, "{:?}", snap.exec.timeline);
    // AND the other job's miss was reported to its own log, not through this job's rule
    assert_eq!(missed_entries(&env, "acme", "other").await?.len(), 1);
    env.cleanup().await;
    Ok(())
}

/// An in-process handler that succeeds at once.
struct Noop;

impl Handler for Noop {
    fn run(&self, _ctx: HandlerContext) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_late_worker_claim_racing_two_reconcilers_reports_the_miss_exactly_once() -> Result<()> {
    // GIVEN a fire past its start deadline, queued by the scan, that nobody started
    let f = late_fire("missed-race").await?;
    let key = ExecKey::of(&f.fire);
    assert!(f.fire.scheduled_at + Duration::seconds(30) < Utc::now(), "the deadline has passed");

    // WHEN a worker finally receives its message while two reconcilers run
    let (c1, c2) = (ctx(&f.env), ctx(&f.env));
    let (o1, o2) = (reconciler(&f.env, "r1"), reconciler(&f.env, "r2"));
    let (disposition, a, b) =
        tokio::join!(f.deliver(), reconcile(&c1, Utc::now(), &o1), reconcile(&c2, Utc::now(), &o2));

    // THEN the fire ran anyway (the deadline is an alert, not a budget)...
    assert_eq!(disposition, sundial_core::execution::worker::Disposition::Delete);
    let snap = fixtures::snapshot(&f.env, &key).await?;
    assert_eq!(snap.exec.status, ExecStatus::Succeeded);
    // ...and whoever won the conditional write reported it, once: one count in all...
    let worker_count: u64 = f.sink.records().iter().map(|m| m.fires_missed).sum();
    assert_eq!(worker_count + report_count(&a) + report_count(&b), 1, "one FiresMissed count in all");
    // ...one log entry, by the winner...
    let ops = missed_entries(&f.env, "acme", "minutely").await?;
    assert_eq!(ops.len(), 1, "{ops:?}");
    let by_worker = ops[0].actor == "worker:late";
    assert_eq!(by_worker, worker_count == 1, "the log entry is the counter's: {:?}", ops[0].actor);
    // ...one event, whose reason says who noticed
    let events = delivered(&f.env, &f.observed, 1).await?;
    assert_eq!(events.len(), 1, "{events:?}");
    let reason = if by_worker { "startedLate" } else { "notStarted" };
    assert_eq!(events[0]["detail"]["reason"], reason);
    assert_eq!(events[0]["detail"]["executionId"], f.fire.id());
    let notes =
        snap.exec.timeline.iter().filter(|e| e.code.as_deref() == Some("StartDeadlineMissed")).count();
    assert_eq!(notes, 1, "{:?}", snap.exec.timeline);

    // AND a reconciler after the run finds nothing more to report
    let after = reconcile(&ctx(&f.env), Utc::now(), &reconciler(&f.env, "r3")).await;
    assert_eq!(report_count(&after), 0);
    assert_eq!(missed_entries(&f.env, "acme", "minutely").await?.len(), 1);
    f.env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_miss_whose_event_cannot_be_sent_is_still_counted_logged_and_fails_the_run() -> Result<()> {
    // GIVEN a deployment whose EventBridge endpoint does not answer (a closed port: every
    // PutEvents fails to dispatch; a bus that does not exist is no use here, since MiniStack
    // accepts events for any bus name, docs/emulators.md)
    let mut env = TestEnv::new("missed-nobus").await?;
    let observed = bus_with_rule_for(&env, "nightly").await?;
    env.cfg = with_bus(&env, &observed.bus);
    let unreachable = aws_sdk_eventbridge::Client::from_conf(
        aws_sdk_eventbridge::config::Builder::from(&sundial_tests::sdk_config())
            .endpoint_url("http://127.0.0.1:9")
            .build(),
    );
    let def = definition("0 0 9 * * *", "UTC", MisfirePolicy::FireOnce).with_start_deadline_secs(60);
    create_job(&env, "acme", "nightly", def, at("2026-12-01T08:50:00Z")).await?;
    scan(&env, at("2026-12-01T08:59:30Z"), &ScanOptions::default()).await?;
    // WHEN the reconciler finds the fire missed
    let opts = ReconcileOptions { events: Some(unreachable), ..reconciler(&env, "r1") };
    let r = reconcile(&ctx(&env), at("2026-12-01T09:01:30Z"), &opts).await;
    // THEN the run fails (the reconciler's error alarm), the miss is still counted and logged
    let Err(sundial_core::reconcile::ReconcileError::Partial { report, first, .. }) = r else {
        anyhow::bail!("expected a failed run, got {r:?}")
    };
    assert!(matches!(*first, sundial_core::reconcile::ReconcileError::Report(_)), "{first}");
    assert_eq!(fires_missed(&report.metric_lines()), 1);
    assert_eq!(missed_entries(&env, "acme", "nightly").await?.len(), 1);
    // AND a later run does not report it again (the miss is recorded once)
    let again = reconcile(&ctx(&env), at("2026-12-01T09:02:30Z"), &reconciler(&env, "r2")).await;
    assert_eq!(report_count(&again), 0);
    // AND no event reached the bus: this report is lost, as documented (marked first)
    let none =
        env.clients.sqs.receive_message().queue_url(&observed.queue_url).wait_time_seconds(1).send().await?;
    assert!(none.messages().is_empty());
    env.cleanup().await;
    Ok(())
}

/// A job that wants its fires started within 30 s, whose fire about four minutes ago the scan
/// queued and nobody started (instants relative to the real time, which the worker reads); a
/// worker that would run it, and the message it would receive.
struct LateFire {
    env: TestEnv,
    observed: Observed,
    fire: sundial_model::Execution,
    worker: std::sync::Arc<sundial_core::execution::worker::Worker>,
    sink: std::sync::Arc<sundial_core::execution::metrics::MemorySink>,
    body: String,
}

async fn late_fire(label: &str) -> Result<LateFire> {
    let mut env = TestEnv::new(label).await?;
    let observed = bus_with_rule_for(&env, "minutely").await?;
    env.cfg = with_bus(&env, &observed.bus);
    let minute = Utc::now().duration_trunc(Duration::minutes(1))? - Duration::minutes(5);
    let mut def = definition("0 * * * * *", "UTC", MisfirePolicy::FireOnce).with_start_deadline_secs(30);
    def.target = Target::in_process("noop");
    create_job(&env, "acme", "minutely", def, minute + Duration::seconds(20)).await?;
    scan(&env, minute + Duration::seconds(30), &ScanOptions::default()).await?;
    let fire = executions(&env, "acme", "minutely").await?.pop().context("a queued fire")?;
    let handlers = Handlers::new().with("noop", Noop);
    let (worker, sink) =
        fixtures::worker_with_config(&env, env.cfg.clone(), fixtures::settings("late"), handlers)?;
    let body = serde_json::to_string(&fixtures::message_of(&fire, minute + Duration::seconds(30)))?;
    Ok(LateFire { env, observed, fire, worker, sink, body })
}

impl LateFire {
    async fn deliver(&self) -> sundial_core::execution::worker::Disposition {
        let stop = tokio_util::sync::CancellationToken::new();
        self.worker.handle("default", &self.body, &sundial_core::execution::worker::NoExtend, &stop).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_starts_a_fire_late_reports_it_when_no_reconciler_did() -> Result<()> {
    // GIVEN a fire past its start deadline that no reconciler has looked at
    let f = late_fire("missed-worker").await?;
    // WHEN a worker finally takes it
    assert_eq!(f.deliver().await, sundial_core::execution::worker::Disposition::Delete);
    // THEN the worker reports the late start once, and the fire ran
    assert_eq!(f.sink.records().iter().map(|m| m.fires_missed).sum::<u64>(), 1);
    let ops = missed_entries(&f.env, "acme", "minutely").await?;
    assert_eq!(ops.iter().map(|o| o.actor.as_str()).collect::<Vec<_>>(), vec!["worker:late"]);
    let events = delivered(&f.env, &f.observed, 1).await?;
    assert_eq!(events.len(), 1);
    assert_eq!(
        (&events[0]["detail"]["reason"], &events[0]["detail"]["status"]),
        (&serde_json::json!("startedLate"), &serde_json::json!("RUNNING"))
    );
    assert_eq!(fixtures::snapshot(&f.env, &ExecKey::of(&f.fire)).await?.exec.status, ExecStatus::Succeeded);
    // AND a reconciler afterwards finds nothing to report
    assert_eq!(report_count(&reconcile(&ctx(&f.env), Utc::now(), &reconciler(&f.env, "r1")).await), 0);
    f.env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_starts_a_fire_the_reconciler_reported_reports_nothing() -> Result<()> {
    // GIVEN a fire past its start deadline that the reconciler has reported
    let f = late_fire("missed-after").await?;
    let r = reconcile(&ctx(&f.env), Utc::now(), &reconciler(&f.env, "r1")).await;
    assert_eq!(report_count(&r), 1);
    // WHEN a worker finally takes it
    assert_eq!(f.deliver().await, sundial_core::execution::worker::Disposition::Delete);
    // THEN it runs, and nothing more is reported
    assert_eq!(f.sink.records().iter().map(|m| m.fires_missed).sum::<u64>(), 0);
    let ops = missed_entries(&f.env, "acme", "minutely").await?;
    assert_eq!(ops.iter().map(|o| o.actor.as_str()).collect::<Vec<_>>(), vec!["reconciler:r1"]);
    assert_eq!(delivered(&f.env, &f.observed, 1).await?.len(), 1);
    assert_eq!(fixtures::snapshot(&f.env, &ExecKey::of(&f.fire)).await?.exec.status, ExecStatus::Succeeded);
    f.env.cleanup().await;
    Ok(())
}

/// A worker running in-process `noop` and the map-reduce `count` handler, recording metrics.
fn first_start_worker(
    env: &TestEnv,
) -> Result<(std::sync::Arc<sundial_core::execution::worker::Worker>, std::sync::Arc<MemorySink>)> {
    let handlers = Handlers::new().with("noop", Noop).with_map_reduce("count", Count);
    fixtures::worker_with_config(env, env.cfg.clone(), fixtures::settings("first"), handlers)
}

/// Delivers `e`'s latest message to `worker` once (the copy of its current wait generation: the
/// reconciler's re-send, if it re-sent it).
async fn deliver_once(
    env: &TestEnv,
    worker: &sundial_core::execution::worker::Worker,
    e: &sundial_model::Execution,
) -> Result<sundial_core::execution::worker::Disposition> {
    let mut msg = fixtures::message_of(e, Utc::now());
    msg.wait_gen = fixtures::snapshot(env, &ExecKey::of(e)).await?.wait_gen;
    let body = serde_json::to_string(&msg)?;
    let stop = tokio_util::sync::CancellationToken::new();
    Ok(worker.handle("default", &body, &sundial_core::execution::worker::NoExtend, &stop).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_map_reduce_fire_started_on_time_reports_no_miss_at_its_reduce() -> Result<()> {
    // GIVEN a map-reduce fire with a 30 s start deadline, scheduled ten minutes ago and claimed
    // on time; its one item finished, and its reduce was started now (READY, attempts from 0)
    let env = TestEnv::new("missed-reduce").await?;
    let store = fixtures::store(&env);
    let sched = Utc::now().duration_trunc(Duration::seconds(1))? - Duration::minutes(10);
    let mut def = fixtures::definition(Target::in_process("count")).with_start_deadline_secs(30);
    def.map_reduce = Some(MapReduceSpec::default());
    def.params = serde_json::json!({ "items": 1 });
    let e = fixtures::ready_execution("acme", "mr", def, sched, sched);
    let key = fixtures::put_execution(&env, &e).await?;
    let terms = LeaseTerms { duration_ms: 30_000, skew_margin_ms: 200, may_take_over: true };
    let at = sched + Duration::seconds(1);
    let ClaimOutcome::Claimed(p) = store.claim(&key, "w", &terms, at).await? else { anyhow::bail!("claim") };
    let mut item = child_of(&e, ChildKey::Item(count_key(0)), at, "worker:w");
    item.map_reduce = Some(MapState::Item { input: serde_json::json!({ "i": 0 }), result: None });
    let lu = at.timestamp_millis() + 30_000;
    store.emit_items(&key, &p.fence, &[item.clone()], &serde_json::json!({ "next": 1 }), lu, 10).await?;
    let ClaimOutcome::Claimed(i) = store.claim(&ExecKey::of(&item), "w", &terms, at).await? else {
        anyhow::bail!("item claim")
    };
    let r = serde_json::json!({ "i": 0 });
    store.finish_item(&ExecKey::of(&item), &i.fence, &Finish::Succeeded, Some(&r), at).await?;
    let sealed = store.seal_map(&key, &p.fence, at.timestamp_millis(), at).await?;
    let Ok(waiting) = sealed else { anyhow::bail!("seal") };
    // (a few seconds ago: available to a worker whose clock the service's `Date` corrects)
    assert!(store.start_reduce(&key, &waiting, "worker:w", Utc::now() - Duration::seconds(5)).await?);

    // WHEN the reconciler looks at it, and a worker then claims and runs the reduce
    let look = Utc::now() + Duration::minutes(3); // past its first look (a grace)
    let r = reconcile(&ctx(&env), look, &ReconcileOptions::default()).await;
    let reconciler_missed = report_count(&r);
    let (worker, sink) = first_start_worker(&env)?;
    assert_eq!(deliver_once(&env, &worker, &e).await?, sundial_core::execution::worker::Disposition::Delete);

    // THEN no miss is reported (the fire started on time), and the reduce adds no start-lag sample
    assert_eq!(reconciler_missed, 0, "the reconciler reported the reduce as a missed start");
    let recs = sink.records();
    assert_eq!(recs.iter().map(|m| m.fires_missed).sum::<u64>(), 0, "the worker reported the reduce late");
    assert!(recs.iter().all(|m| m.start_lag_ms.is_none()), "start lag of a reduce: {recs:?}");
    let s = fixtures::snapshot(&env, &key).await?;
    assert_eq!((s.exec.status, s.missed_at), (ExecStatus::Succeeded, None), "{:?}", s.exec.last_error);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_dead_fire_with_a_start_deadline_is_not_reported_missed() -> Result<()> {
    // GIVEN a fire with a 30 s start deadline, scheduled ten minutes ago, started on time,
    // that went DEAD and that an operator replays now
    let env = TestEnv::new("missed-replay").await?;
    let store = fixtures::store(&env);
    let sched = Utc::now().duration_trunc(Duration::seconds(1))? - Duration::minutes(10);
    let def = fixtures::definition(Target::in_process("noop")).with_start_deadline_secs(30);
    let e = fixtures::ready_execution("acme", "once", def, sched, sched);
    let key = fixtures::put_execution(&env, &e).await?;
    let terms = LeaseTerms { duration_ms: 30_000, skew_margin_ms: 200, may_take_over: true };
    let at = sched + Duration::seconds(1);
    let ClaimOutcome::Claimed(c) = store.claim(&key, "w", &terms, at).await? else { anyhow::bail!("claim") };
    let dead = Finish::Dead {
        reason: "attemptsExhausted".into(),
        error: RunError::retryable("Boom", "down"),
        digest: String::new(),
    };
    store.finish(&key, &c.fence, &dead, at).await?;
    let replayed_at = Utc::now() - Duration::seconds(5); // available to any worker's clock
    assert!(store.replay(&key, c.fence.token, "api:ops", "replay", replayed_at).await?);

    // WHEN the reconciler looks at it, and a worker then claims and runs it
    let look = Utc::now() + Duration::minutes(3); // past its first look (a grace)
    let r = reconcile(&ctx(&env), look, &ReconcileOptions::default()).await;
    let reconciler_missed = report_count(&r);
    let (worker, sink) = first_start_worker(&env)?;
    assert_eq!(deliver_once(&env, &worker, &e).await?, sundial_core::execution::worker::Disposition::Delete);

    // THEN the replay is not reported (docs/reconciler.md: "Not reported: … a replay"), and it
    // adds no start-lag sample
    assert_eq!(reconciler_missed, 0, "the reconciler reported the replay as a missed start");
    let recs = sink.records();
    assert_eq!(recs.iter().map(|m| m.fires_missed).sum::<u64>(), 0, "the worker reported the replay late");
    assert!(recs.iter().all(|m| m.start_lag_ms.is_none()), "start lag of a replay: {recs:?}");
    assert!(missed_entries(&env, "acme", "once").await?.is_empty());
    let s = fixtures::snapshot(&env, &key).await?;
    assert_eq!((s.exec.status, s.missed_at), (ExecStatus::Succeeded, None), "{:?}", s.exec.last_error);
    env.cleanup().await;
    Ok(())
}
