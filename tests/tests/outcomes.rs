//! Per-job outcome events (docs/outcomes.md), observed as a user would: an EventBridge rule on
//! the stack's bus matching one job (`detail.jobId`) fills an SQS queue, read back through the
//! real SDK.
//!
//! Each event's exactly-once emission is shown under a crash between the transition and the
//! emit: the worker that writes the transition cannot reach the bus (its PutEvents fails to
//! dispatch, as a worker killed right after its write would never send), so the event exists
//! only as the outbox entry its finish wrote. The reconciler, or the next worker to claim the
//! execution, sends it; a second reconciler run and a second claim send nothing more. Every
//! instant the reconciler judges by is passed in (no sleeps).

use anyhow::{Context, Result};
use chrono::{DateTime, Duration, DurationRound, Utc};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use sundial_core::control::outcomes::ControlPause;
use sundial_core::control::{jobs, Caller, Control, ControlSettings};
use sundial_core::execution::notify::HttpNotifier;
use sundial_core::execution::target::in_process::{BoxFuture, Handler, HandlerContext, Handlers};
use sundial_core::execution::worker::{Disposition, NoExtend, Worker};
use sundial_core::reconcile::{reconcile, ReconcileOptions};
use sundial_core::trigger::scan::ScanOptions;
use sundial_model::retry::RunError;
use sundial_model::{ExecStatus, Execution, JobDefinition, JobState, OpsAction, RetryPolicy, Target};
use sundial_schedule::MisfirePolicy;
use sundial_store::executions::ExecKey;
use sundial_tests::fixtures;
use sundial_tests::trigger::{create_job, ctx, definition, executions, scan};
use sundial_tests::TestEnv;

const KINDS: [&str; 6] = [
    "ExecutionSucceeded",
    "ExecutionFailed",
    "ExecutionDead",
    "JobRecovered",
    "JobAutoPaused",
    "FinishDeadlineMissed",
];

/// The stack's bus for `env` and a user's rule sending `job`'s outcome events to a fresh queue.
async fn bus_with_rule_for(env: &TestEnv, job: &str) -> Result<(String, String)> {
    let events = &env.clients.events;
    let prefix = env.cfg.jobs_table.trim_end_matches("sundial-jobs").to_string();
    let bus = format!("{prefix}sundial-events");
    events.create_event_bus().name(&bus).send().await.context("CreateEventBus")?;
    let queue_url = env
        .clients
        .sqs
        .create_queue()
        .queue_name(format!("{prefix}outcomes-{job}"))
        .send()
        .await?
        .queue_url
        .unwrap_or_default();
    let arn = fixtures::queue_arn(env, &queue_url).await?;
    // The rule a team writes to route one job's outcomes to its owner (docs/outcomes.md).
    let pattern =
        serde_json::json!({"source": ["sundial"], "detail-type": KINDS, "detail": {"jobId": [job]}});
    let rule = format!("{job}-outcomes");
    events.put_rule().name(&rule).event_bus_name(&bus).event_pattern(pattern.to_string()).send().await?;
    let target = aws_sdk_eventbridge::types::Target::builder().id("queue").arn(arn).build()?;
    events.put_targets().rule(&rule).event_bus_name(&bus).targets(target).send().await?;
    Ok((bus, queue_url))
}

/// The events delivered since the last call ([`fixtures::received`]).
async fn delivered(env: &TestEnv, queue_url: &str, min: usize) -> Result<Vec<serde_json::Value>> {
    fixtures::received(env, queue_url, min).await
}

fn kinds(events: &[serde_json::Value]) -> Vec<String> {
    let mut k: Vec<String> =
        events.iter().map(|e| e["detail-type"].as_str().unwrap_or("?").to_string()).collect();
    k.sort();
    k
}

/// An in-process handler that fails (retryably) or succeeds, as scripted, in call order.
#[derive(Clone, Default)]
struct Scripted(Arc<Mutex<VecDeque<bool>>>);

impl Scripted {
    fn then(&self, ok: bool) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push_back(ok);
    }
}

impl Handler for Scripted {
    fn run(&self, _ctx: HandlerContext) -> BoxFuture<'_, Result<(), RunError>> {
        let ok = self.0.lock().unwrap_or_else(|e| e.into_inner()).pop_front().unwrap_or(true);
        Box::pin(async move {
            if ok {
                Ok(())
            } else {
                Err(RunError::retryable("Http503", "upstream busy"))
            }
        })
    }
}

struct World {
    env: TestEnv,
    queue_url: String,
    handler: Scripted,
    /// A worker whose PutEvents never reaches the bus: its transitions are written, its
    /// events are not (the crash between the two).
    crashing: Arc<Worker>,
    /// A worker that reaches the bus.
    healthy: Arc<Worker>,
    /// The consumer of the default pool's notification queue.
    notifier: Arc<Worker>,
    control: Control,
}

impl World {
    async fn new(label: &str, job: &str) -> Result<World> {
        World::with_bus(label, job, true).await
    }

    /// `bus`: whether the deployment has an event bus (without one, `queue_url` is empty).
    async fn with_bus(label: &str, job: &str, bus: bool) -> Result<World> {
        let mut env = TestEnv::new(label).await?;
        let queue_url = if bus {
            let (bus, queue_url) = bus_with_rule_for(&env, job).await?;
            env.cfg.event_bus = Some(bus);
            queue_url
        } else {
            String::new()
        };
        let handler = Scripted::default();
        let handlers = || Handlers::new().with("scripted", handler.clone());
        let mut cut = env.clients.clone();
        cut.events = aws_sdk_eventbridge::Client::from_conf(
            aws_sdk_eventbridge::config::Builder::from(&sundial_tests::sdk_config())
                .endpoint_url("http://127.0.0.1:9")
                .build(),
        );
        let (crashing, _) =
            fixtures::worker_with_clients(&env, fixtures::settings("crashing"), handlers(), &cut)?;
        let (healthy, _) = fixtures::worker_with(&env, fixtures::settings("healthy"), handlers())?;
        let control = Control::new(ctx(&env), ControlSettings::default());
        // The notification queue's consumer: a receiver that does not answer is given up on
        // after a second (the deployment's timeout is 3 s).
        let (notifier, _) = fixtures::worker_with(&env, fixtures::settings("notifier"), Handlers::new())?;
        let http = HttpNotifier::for_tenants(&env.clients, Default::default(), env.cfg.clone())
            .with_timeout(std::time::Duration::from_secs(1));
        let notifier =
            Arc::new(Arc::into_inner(notifier).context("one owner")?.with_notifier(Arc::new(http)));
        Ok(World { env, queue_url, handler, crashing, healthy, notifier, control })
    }

    fn reconciler(&self, name: &str) -> ReconcileOptions {
        ReconcileOptions {
            actor: format!("reconciler:{name}"),
            events: Some(self.env.clients.events.clone()),
            pause: Some(Arc::new(ControlPause::new(Control::new(
                ctx(&self.env),
                ControlSettings::default(),
            )))),
            ..Default::default()
        }
    }

    /// One reconciler run at `now`; the count of outcome events it sent.
    async fn reconcile(&self, name: &str, now: DateTime<Utc>) -> Result<u64> {
        // Boxed: the reconciler's future (with the pause's) is large for a test thread's stack.
        let r = Box::pin(reconcile(&ctx(&self.env), now, &self.reconciler(name))).await?;
        Ok(r.outcome_events)
    }

    /// Hands every visible message of the default pool's notification queue to the `notifier`
    /// worker, as its consumer would (a delivered one deleted; a failed one re-queued by the
    /// worker with its count raised, at once in these tests), until none is left: how many
    /// deliveries were tried.
    async fn deliver_notifications(&self) -> Result<usize> {
        let url = self.env.queues["default"].notify_url.clone();
        let mut tried = 0;
        for _ in 0..20 {
            let msgs = fixtures::receive(&self.env, &url, 60).await?;
            if msgs.is_empty() {
                break;
            }
            for m in msgs {
                tried += 1;
                let d = self.notifier.deliver_notification("default", m.body().unwrap_or_default()).await;
                assert_eq!(d, Disposition::Delete, "each message ends, or is replaced by its retry");
                let receipt = m.receipt_handle().unwrap_or_default();
                self.env.clients.sqs.delete_message().queue_url(&url).receipt_handle(receipt).send().await?;
            }
        }
        Ok(tried)
    }

    async fn deliver(&self, worker: &Worker, e: &Execution) -> Result<Disposition> {
        let mut msg = fixtures::message_of(e, Utc::now());
        msg.wait_gen = fixtures::snapshot(&self.env, &ExecKey::of(e)).await?.wait_gen;
        let body = serde_json::to_string(&msg)?;
        let stop = tokio_util::sync::CancellationToken::new();
        Ok(worker.handle("default", &body, &NoExtend, &stop).await)
    }

    /// The fire of `job` at `minute`, queued by the tick's scan a few seconds after it.
    async fn fire(&self, job: &str, minute: DateTime<Utc>) -> Result<Execution> {
        scan(&self.env, minute + Duration::seconds(5), &ScanOptions::default()).await?;
        let all = executions(&self.env, "acme", job).await?;
        all.into_iter().find(|e| e.scheduled_at == minute).context("the minute's fire")
    }

    async fn outbox(&self, e: &Execution) -> Result<Vec<String>> {
        Ok(fixtures::snapshot(&self.env, &ExecKey::of(e)).await?.outbox)
    }
}

fn job(max_attempts: u32) -> JobDefinition {
    let mut def = definition("0 * * * * *", "UTC", MisfirePolicy::FireAll { cap: 10 });
    def.target = Target::in_process("scripted");
    def.retry = RetryPolicy { max_attempts, base_delay_secs: 1, ..RetryPolicy::default() };
    def
}

fn minutes_ago(n: i64) -> Result<DateTime<Utc>> {
    Ok(Utc::now().duration_trunc(Duration::minutes(1))? - Duration::minutes(n))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_fires_a_recovery_and_an_auto_pause_are_each_sent_once_after_a_crash_before_the_emit(
) -> Result<()> {
    // On the heap: this walk's future is larger than a test thread's stack in a debug build.
    Box::pin(dead_fires_recovery_and_auto_pause()).await
}

async fn dead_fires_recovery_and_auto_pause() -> Result<()> {
    // GIVEN a minutely job with one attempt per fire that pauses after 2 dead fires in a row
    // and asks for its successes too, and a rule routing its outcomes to a queue
    let w = World::new("outcomes-dead", "settle").await?;
    let base = minutes_ago(10)?;
    let mut def = job(1);
    def.auto_pause_after_dead_fires = Some(2);
    def.outcome_events = Some(sundial_model::outcome::OutcomeEvents { succeeded: true });
    create_job(&w.env, "acme", "settle", def, base + Duration::seconds(10)).await?;
    let later = |fire: &Execution| fire.scheduled_at + Duration::minutes(30);

    // WHEN its first fire fails for good on a worker that dies before it can send the event
    let a = w.fire("settle", base + Duration::minutes(1)).await?;
    w.handler.then(false);
    assert_eq!(w.deliver(&w.crashing, &a).await?, Disposition::Delete);
    // THEN the transition is written with its event pending, and nothing reached the bus
    assert_eq!(fixtures::snapshot(&w.env, &ExecKey::of(&a)).await?.exec.status, ExecStatus::Dead);
    assert_eq!(w.outbox(&a).await?, ["ExecutionDead#1#retryable#Http503"]);
    let snap = fixtures::snapshot(&w.env, &ExecKey::of(&a)).await?;
    assert!(snap.open_due.is_some(), "a final fire with unsent events stays in the open index");
    // AND the reconciler sends it, once: a second run, and a run much later, send nothing
    assert_eq!(w.reconcile("r1", later(&a)).await?, 1);
    assert_eq!(w.reconcile("r2", later(&a)).await?, 0);
    let events = delivered(&w.env, &w.queue_url, 1).await?;
    assert_eq!(kinds(&events), ["ExecutionDead"]);
    let d = &events[0]["detail"];
    assert_eq!(d["executionId"], a.id());
    assert_eq!(d["eventId"], format!("acme/{}/ExecutionDead#1#retryable#Http503", a.id()));
    assert_eq!(
        (d["tenant"].as_str(), d["status"].as_str(), d["attempt"].as_u64(), d["deadFires"].as_u64()),
        (Some("acme"), Some("DEAD"), Some(1), Some(1))
    );
    assert_eq!((d["errorClass"].as_str(), d["errorCode"].as_str()), (Some("retryable"), Some("Http503")));
    assert_eq!(d["scheduledAt"], a.scheduled_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    let snap = fixtures::snapshot(&w.env, &ExecKey::of(&a)).await?;
    assert!(snap.outbox.is_empty() && snap.open_due.is_none(), "sent, then closed: {snap:?}");

    // WHEN the next fire succeeds, its worker dying before the emit again
    let b = w.fire("settle", base + Duration::minutes(2)).await?;
    w.handler.then(true);
    assert_eq!(w.deliver(&w.crashing, &b).await?, Disposition::Delete);
    // THEN it is the recovery: its success and JobRecovered are pending, then sent once each
    let mut pending = w.outbox(&b).await?;
    pending.sort();
    assert_eq!(pending, ["ExecutionSucceeded#1##", "JobRecovered#1##"]);
    assert_eq!(w.reconcile("r3", later(&b)).await?, 2);
    assert_eq!(w.reconcile("r4", later(&b)).await?, 0);
    let events = delivered(&w.env, &w.queue_url, 2).await?;
    assert_eq!(kinds(&events), ["ExecutionSucceeded", "JobRecovered"]);
    let recovered = events.iter().find(|e| e["detail-type"] == "JobRecovered").context("JobRecovered")?;
    assert_eq!(recovered["detail"]["deadFires"], 1, "it ended one dead fire");

    // WHEN two more fires fail for good, each on a dying worker
    let c = w.fire("settle", base + Duration::minutes(3)).await?;
    w.handler.then(false);
    assert_eq!(w.deliver(&w.crashing, &c).await?, Disposition::Delete);
    assert_eq!(w.reconcile("r5", later(&c)).await?, 1);
    let d2 = w.fire("settle", base + Duration::minutes(4)).await?;
    w.handler.then(false);
    assert_eq!(w.deliver(&w.crashing, &d2).await?, Disposition::Delete);
    // AND two reconcilers run at once, then another
    let (r6, r7) = tokio::join!(w.reconcile("r6", later(&d2)), w.reconcile("r7", later(&d2)));
    let r8 = w.reconcile("r8", later(&d2)).await?;
    // THEN the second dead fire's event and one JobAutoPaused went out, once each
    let events = delivered(&w.env, &w.queue_url, 3).await?;
    assert_eq!(kinds(&events), ["ExecutionDead", "ExecutionDead", "JobAutoPaused"]);
    assert_eq!(r6? + r7? + r8, 2, "the reconcilers sent two events between them");
    let paused = events.iter().find(|e| e["detail-type"] == "JobAutoPaused").context("JobAutoPaused")?;
    assert_eq!(paused["detail"]["executionId"], d2.id());
    assert_eq!(paused["detail"]["deadFires"], 2);
    // AND the job is paused, audited as the auto-pause of that fire
    let caller = Caller { tenant: "acme".into(), principal: "test".into() };
    let view = jobs::get(&w.control, &caller, "settle").await?;
    assert_eq!(view.state, JobState::Paused);
    let ops = sundial_store::ops::list(
        &w.env.clients.ddb,
        &w.env.cfg.jobs_table,
        "acme",
        Some("settle"),
        100,
        None,
    )
    .await?;
    let pauses: Vec<_> = ops.items.iter().filter(|o| o.action == OpsAction::Pause).collect();
    assert_eq!(pauses.len(), 1, "{pauses:?}");
    assert_eq!(pauses[0].actor, format!("auto-pause:{}", d2.id()));

    // WHEN the owner resumes it and the next fire dies too
    Box::pin(jobs::set_state(&w.control, &caller, "settle", JobState::Enabled, None, Utc::now())).await?;
    let e = w.fire("settle", base + Duration::minutes(5)).await?;
    w.handler.then(false);
    assert_eq!(w.deliver(&w.healthy, &e).await?, Disposition::Delete);
    // THEN a healthy worker sends its event itself, and the count started over: one dead fire,
    // no second pause
    let events = delivered(&w.env, &w.queue_url, 1).await?;
    assert_eq!(kinds(&events), ["ExecutionDead"]);
    assert_eq!(events[0]["detail"]["deadFires"], 1);
    assert!(w.outbox(&e).await?.is_empty());
    assert_eq!(jobs::get(&w.control, &caller, "settle").await?.state, JobState::Enabled);
    assert_eq!(w.reconcile("r9", later(&e)).await?, 0);
    w.env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_attempts_event_is_sent_once_by_the_next_worker_to_claim_the_fire() -> Result<()> {
    // GIVEN a minutely job with three attempts per fire and a rule for its outcomes
    let w = World::new("outcomes-retry", "sync").await?;
    let base = minutes_ago(10)?;
    create_job(&w.env, "acme", "sync", job(3), base + Duration::seconds(10)).await?;
    let f = w.fire("sync", base + Duration::minutes(1)).await?;

    // WHEN its first attempt fails on a worker that dies before the emit
    w.handler.then(false);
    let first = w.deliver(&w.crashing, &f).await?;
    assert!(
        matches!(first, Disposition::RetryAfter(_) | Disposition::Delete | Disposition::Leave),
        "{first:?}"
    );
    let snap = fixtures::snapshot(&w.env, &ExecKey::of(&f)).await?;
    assert_eq!(snap.exec.status, ExecStatus::RetryWait);
    assert_eq!(snap.outbox, ["ExecutionFailed#1#retryable#Http503"]);
    // AND its retry comes due (time passes: the availability is moved to now, as waiting would)
    fixtures::make_available(&w.env, &ExecKey::of(&f)).await?;

    // THEN the next worker to claim it sends the missing event before running attempt 2,
    // which succeeds
    w.handler.then(true);
    assert_eq!(w.deliver(&w.healthy, &f).await?, Disposition::Delete);
    let events = delivered(&w.env, &w.queue_url, 1).await?;
    assert_eq!(kinds(&events), ["ExecutionFailed"]);
    let d = &events[0]["detail"];
    assert_eq!((d["attempt"].as_u64(), d["status"].as_str()), (Some(1), Some("RETRY_WAIT")));
    let snap = fixtures::snapshot(&w.env, &ExecKey::of(&f)).await?;
    assert_eq!(snap.exec.status, ExecStatus::Succeeded);
    assert!(snap.outbox.is_empty());
    // AND no reconciler sends it again; a success nobody asked about sends nothing
    assert_eq!(w.reconcile("r1", f.scheduled_at + Duration::minutes(30)).await?, 0);
    let none =
        w.env.clients.sqs.receive_message().queue_url(&w.queue_url).wait_time_seconds(1).send().await?;
    assert!(none.messages().is_empty(), "{:?}", none.messages());
    w.env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missed_finish_deadline_is_reported_once_whether_the_fire_is_still_open_or_finished_late(
) -> Result<()> {
    Box::pin(finish_deadlines()).await
}

async fn finish_deadlines() -> Result<()> {
    // GIVEN a minutely job whose fires must finish within 60 s of their instant
    let w = World::new("outcomes-finish", "report").await?;
    let base = minutes_ago(10)?;
    create_job(&w.env, "acme", "report", job(1).with_finish_deadline_secs(60), base + Duration::seconds(10))
        .await?;

    // WHEN a fire nobody started is still open past its deadline, and two reconcilers look
    // at once, then another (before the next fire's deadline)
    let a = w.fire("report", base + Duration::minutes(1)).await?;
    let snap = fixtures::snapshot(&w.env, &ExecKey::of(&a)).await?;
    let deadline = a.scheduled_at + Duration::seconds(60);
    assert!(
        snap.open_due.is_some_and(|d| d <= deadline.timestamp_millis()),
        "looked at by its deadline: {snap:?}"
    );
    let past = deadline + Duration::seconds(1);
    let (r1, r2) = tokio::join!(w.reconcile("r1", past), w.reconcile("r2", past));
    let r3 = w.reconcile("r3", past + Duration::seconds(30)).await?;
    // THEN one FinishDeadlineMissed names it, still READY, with the deadline
    assert_eq!(r1? + r2? + r3, 1);
    let events = delivered(&w.env, &w.queue_url, 1).await?;
    assert_eq!(kinds(&events), ["FinishDeadlineMissed"]);
    let d = &events[0]["detail"];
    assert_eq!((d["executionId"].as_str(), d["status"].as_str()), (Some(a.id().as_str()), Some("READY")));
    assert_eq!(d["deadline"], deadline.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    let snap = fixtures::snapshot(&w.env, &ExecKey::of(&a)).await?;
    let notes =
        snap.exec.timeline.iter().filter(|e| e.code.as_deref() == Some("FinishDeadlineMissed")).count();
    assert_eq!(notes, 1, "{:?}", snap.exec.timeline);

    // WHEN it finally runs, and the next fire, whose deadline no reconciler has looked at
    // yet, is run late too
    assert_eq!(w.deliver(&w.healthy, &a).await?, Disposition::Delete);
    let b = w.fire("report", base + Duration::minutes(2)).await?;
    assert_eq!(w.deliver(&w.healthy, &b).await?, Disposition::Delete);
    // THEN the late finish stays in the index, due now...
    let snap = fixtures::snapshot(&w.env, &ExecKey::of(&b)).await?;
    assert_eq!(snap.exec.status, ExecStatus::Succeeded);
    assert!(snap.open_due.is_some(), "a late finish waits for the reconciler's look");
    // ...and the next reconcilers report that one once, SUCCEEDED, and nothing more for the first
    // (the scan may have queued the next minute's fire too, as open past its deadline now: it
    // is reported once as well, READY)
    let now = Utc::now() + Duration::seconds(1);
    let (r4, r5) = tokio::join!(w.reconcile("r4", now), w.reconcile("r5", now));
    let sent = r4? + r5? + w.reconcile("r6", now + Duration::minutes(5)).await?;
    let events = delivered(&w.env, &w.queue_url, 1).await?;
    assert_eq!(sent as usize, events.len(), "{events:?}");
    let of =
        |e: &Execution| events.iter().filter(|v| v["detail"]["executionId"] == e.id()).collect::<Vec<_>>();
    let for_b = of(&b);
    assert_eq!(for_b.len(), 1, "{events:?}");
    assert_eq!(
        (for_b[0]["detail-type"].as_str(), for_b[0]["detail"]["status"].as_str()),
        (Some("FinishDeadlineMissed"), Some("SUCCEEDED"))
    );
    assert!(of(&a).is_empty(), "the first fire was reported already: {events:?}");
    let mut ids: Vec<&str> = events.iter().filter_map(|v| v["detail"]["executionId"].as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), events.len(), "one report per fire: {events:?}");
    for e in [&a, &b] {
        let snap = fixtures::snapshot(&w.env, &ExecKey::of(e)).await?;
        assert_eq!(snap.exec.status, ExecStatus::Succeeded);
        assert!(snap.open_due.is_none() && snap.outbox.is_empty(), "reported, then closed: {snap:?}");
    }
    w.env.cleanup().await;
    Ok(())
}

const NOTIFY_KEY: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// A job of one attempt per fire whose outcome events are also POSTed, signed, to `hook`.
async fn notifying_job(w: &World, job_id: &str, hook: &fixtures::WebhookServer) -> Result<Execution> {
    let arn = fixtures::tenant_secret(&w.env, &format!("{job_id}-notify"), NOTIFY_KEY, Some("acme")).await?;
    let base = minutes_ago(10)?;
    let mut def = job(1);
    def.outcome_notify = Some(sundial_model::outcome::OutcomeNotify {
        url: hook.url("/outcomes"),
        signing_secret_arn: Some(arn),
    });
    create_job(&w.env, "acme", job_id, def, base + Duration::seconds(10)).await?;
    // WHEN its first fire fails for good on a worker that dies before it can send anything
    let a = w.fire(job_id, base + Duration::minutes(1)).await?;
    w.handler.then(false);
    assert_eq!(w.deliver(&w.crashing, &a).await?, Disposition::Delete);
    let mut pending = w.outbox(&a).await?;
    pending.sort();
    assert_eq!(
        pending,
        ["ExecutionDead#1#retryable#Http503", "Notify:0::ExecutionDead#1#retryable#Http503"],
        "the transition wrote the bus event and its notification"
    );
    assert!(hook.received().is_empty());
    Ok(a)
}

/// Checks one notification as a receiver would: the signature over the raw body with the
/// job's key, `webhook-id` = the event's id, and the bus event's detail with `detailType`.
fn verify_notification(r: &fixtures::Received, a: &Execution, kind: &str) -> Result<()> {
    use sundial_idempotency::webhook::{self, Headers};
    let event_id = format!("acme/{}/ExecutionDead#1#retryable#Http503", a.id());
    assert_eq!(r.header("webhook-id"), event_id);
    assert_eq!(r.header("idempotency-key"), event_id);
    let h = Headers {
        id: r.header("webhook-id"),
        timestamp: r.header("webhook-timestamp"),
        signature: r.header("webhook-signature"),
    };
    let ts: i64 = r.header("webhook-timestamp").parse()?;
    let v = webhook::verify(&[NOTIFY_KEY], &h, &r.raw_body, ts, webhook::DEFAULT_TOLERANCE_SECS);
    assert!(v.is_ok(), "the signature verifies: {v:?}");
    let wrong = webhook::verify(
        &["whsec_c3VuZGlhbC10ZXN0LXJvdGF0ZWQta2V5LTAx"],
        &h,
        &r.raw_body,
        ts,
        webhook::DEFAULT_TOLERANCE_SECS,
    );
    assert!(wrong.is_err(), "another key does not verify");
    let b = &r.body;
    assert_eq!((b["detailType"].as_str(), b["eventId"].as_str()), (Some(kind), Some(event_id.as_str())));
    assert_eq!((b["tenant"].as_str(), b["executionId"].as_str()), (Some("acme"), Some(a.id().as_str())));
    assert_eq!((b["status"].as_str(), b["errorCode"].as_str()), (Some("DEAD"), Some("Http503")));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_is_sent_once_signed_by_the_reconciler_after_a_crash_before_the_emit() -> Result<()> {
    Box::pin(notified_once_after_a_crash()).await
}

async fn notified_once_after_a_crash() -> Result<()> {
    // GIVEN a job notifying a receiver that accepts everything, and a fire whose worker died
    // after its transition
    let w = World::new("outcomes-notify", "notify").await?;
    let hook = fixtures::WebhookServer::start(vec![]).await?;
    let a = notifying_job(&w, "notify", &hook).await?;
    // WHEN the reconciler runs, then another
    let later = a.scheduled_at + Duration::minutes(30);
    assert_eq!(w.reconcile("r1", later).await?, 1);
    assert_eq!(w.reconcile("r2", later + Duration::minutes(1)).await?, 0);
    // AND the pool's notification consumer takes what they queued
    assert_eq!(w.deliver_notifications().await?, 1);
    // THEN the bus event went out once, and one signed notification carrying the same detail
    let events = delivered(&w.env, &w.queue_url, 1).await?;
    assert_eq!(kinds(&events), ["ExecutionDead"]);
    let got = hook.received();
    assert_eq!(got.len(), 1, "{got:?}");
    verify_notification(&got[0], &a, "ExecutionDead")?;
    assert_eq!(got[0].body["eventId"], events[0]["detail"]["eventId"]);
    let snap = fixtures::snapshot(&w.env, &ExecKey::of(&a)).await?;
    assert!(snap.outbox.is_empty() && snap.open_due.is_none(), "sent, then closed: {snap:?}");
    w.env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_notification_is_retried_by_the_next_flush_without_resending_the_bus_event() -> Result<()> {
    Box::pin(notification_retried()).await
}

async fn notification_retried() -> Result<()> {
    // GIVEN a job notifying a receiver that answers 500 once, then 200
    let w = World::new("outcomes-notify-500", "notify500").await?;
    let hook = fixtures::WebhookServer::start(vec![fixtures::Reply::Status(500)]).await?;
    let a = notifying_job(&w, "notify500", &hook).await?;
    // WHEN the reconciler flushes the fire's outbox, and the notification queue is consumed
    let later = a.scheduled_at + Duration::minutes(30);
    assert_eq!(w.reconcile("r1", later).await?, 1);
    assert!(w.outbox(&a).await?.is_empty(), "the notification moved to its queue");
    // THEN the refused delivery was retried from the queue and accepted; later reconcilers
    // send nothing to the bus
    assert_eq!(w.deliver_notifications().await?, 2);
    assert_eq!(w.reconcile("r2", later + Duration::minutes(1)).await?, 0);
    assert_eq!(w.reconcile("r3", later + Duration::minutes(2)).await?, 0);
    let events = delivered(&w.env, &w.queue_url, 1).await?;
    assert_eq!(kinds(&events), ["ExecutionDead"], "the bus event once");
    let got = hook.received();
    assert_eq!(got.len(), 2, "one refused, one accepted: {got:?}");
    for r in &got {
        verify_notification(r, &a, "ExecutionDead")?;
    }
    let snap = fixtures::snapshot(&w.env, &ExecKey::of(&a)).await?;
    assert!(snap.outbox.is_empty() && snap.open_due.is_none(), "delivered, then closed: {snap:?}");
    w.env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_never_answers_is_given_up_after_the_bound_and_the_bus_event_still_goes_once(
) -> Result<()> {
    Box::pin(notification_given_up()).await
}

async fn notification_given_up() -> Result<()> {
    // GIVEN a job notifying a receiver that never answers
    let w = World::new("outcomes-notify-dead", "notifydead").await?;
    let never = Arc::new(tokio::sync::Notify::new());
    let script = (0..10).map(|_| fixtures::Reply::Hold(never.clone())).collect();
    let hook = fixtures::WebhookServer::start(script).await?;
    let a = notifying_job(&w, "notifydead", &hook).await?;
    // WHEN reconcilers run a minute apart, more times than the bound
    let later = a.scheduled_at + Duration::minutes(30);
    let bound = sundial_model::outcome::MAX_NOTIFY_FAILURES as i64;
    let mut sent = 0;
    for i in 0..bound + 2 {
        sent += w.reconcile(&format!("r{i}"), later + Duration::minutes(i)).await?;
    }
    // AND the notification queue is consumed (each failure re-queues it at once here)
    assert_eq!(w.deliver_notifications().await?, bound as usize);
    // THEN the bus event went out once, the notification was tried exactly the bound's times,
    // then given up with a note on the timeline, and the fire is closed
    assert_eq!(sent, 1);
    let events = delivered(&w.env, &w.queue_url, 1).await?;
    assert_eq!(kinds(&events), ["ExecutionDead"]);
    assert_eq!(hook.received().len(), bound as usize);
    let snap = fixtures::snapshot(&w.env, &ExecKey::of(&a)).await?;
    assert!(snap.outbox.is_empty() && snap.open_due.is_none(), "given up, then closed: {snap:?}");
    let notes = snap.exec.timeline.iter().filter(|e| e.code.as_deref() == Some("OutcomeNotifyAbandoned"));
    assert_eq!(notes.count(), 1, "{:?}", snap.exec.timeline);
    w.env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_is_delivered_when_the_deployment_has_no_event_bus() -> Result<()> {
    Box::pin(notified_without_a_bus()).await
}

async fn notified_without_a_bus() -> Result<()> {
    // GIVEN a deployment with no event bus, and a job whose outcomes are POSTed to a receiver
    let w = World::with_bus("outcomes-notify-nobus", "nobus", false).await?;
    let hook = fixtures::WebhookServer::start(vec![]).await?;
    let arn = fixtures::tenant_secret(&w.env, "nobus-notify", NOTIFY_KEY, Some("acme")).await?;
    let base = minutes_ago(10)?;
    let mut def = job(1);
    def.outcome_notify = Some(sundial_model::outcome::OutcomeNotify {
        url: hook.url("/outcomes"),
        signing_secret_arn: Some(arn),
    });
    create_job(&w.env, "acme", "nobus", def, base + Duration::seconds(10)).await?;
    // WHEN its fire fails for good, and the reconciler runs after it
    let a = w.fire("nobus", base + Duration::minutes(1)).await?;
    w.handler.then(false);
    assert_eq!(w.deliver(&w.healthy, &a).await?, Disposition::Delete);
    w.reconcile("r1", a.scheduled_at + Duration::minutes(30)).await?;
    assert_eq!(w.deliver_notifications().await?, 1);
    // THEN the receiver got the notification once, though no bus event could go out
    let got = hook.received();
    assert_eq!(got.len(), 1, "the notification does not depend on a bus: {got:?}");
    verify_notification(&got[0], &a, "ExecutionDead")?;
    let snap = fixtures::snapshot(&w.env, &ExecKey::of(&a)).await?;
    assert!(snap.outbox.is_empty(), "delivered, then gone: {snap:?}");
    w.env.cleanup().await;
    Ok(())
}

/// The control plane's pause, then a crash before the flush can go on (the entry stays).
#[derive(Debug)]
struct PauseThenCrash(ControlPause);

impl sundial_core::execution::outcome::AutoPause for PauseThenCrash {
    fn pause<'a>(
        &'a self,
        tenant: &'a str,
        job_id: &'a str,
        execution_id: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<(), sundial_core::execution::outcome::OutcomeError>> {
        Box::pin(async move {
            self.0.pause(tenant, job_id, execution_id, now).await?;
            Err(sundial_core::execution::outcome::OutcomeError::Pause("crashed after the pause".into()))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auto_pause_retried_after_the_owner_resumed_does_not_pause_the_job_again() -> Result<()> {
    Box::pin(auto_pause_not_reapplied()).await
}

async fn auto_pause_not_reapplied() -> Result<()> {
    // GIVEN a job that pauses after one dead fire, and a fire that died
    let w = World::new("outcomes-repause", "repause").await?;
    let base = minutes_ago(10)?;
    let mut def = job(1);
    def.auto_pause_after_dead_fires = Some(1);
    create_job(&w.env, "acme", "repause", def, base + Duration::seconds(10)).await?;
    let a = w.fire("repause", base + Duration::minutes(1)).await?;
    w.handler.then(false);
    assert_eq!(w.deliver(&w.crashing, &a).await?, Disposition::Delete);
    // AND a reconciler that paused the job, then died before its JobAutoPaused entry was done
    let crash = PauseThenCrash(ControlPause::new(Control::new(ctx(&w.env), ControlSettings::default())));
    let opts = ReconcileOptions { pause: Some(Arc::new(crash)), ..w.reconciler("r1") };
    let later = a.scheduled_at + Duration::minutes(30);
    let _partial = Box::pin(reconcile(&ctx(&w.env), later, &opts)).await;
    let caller = Caller { tenant: "acme".into(), principal: "test".into() };
    assert_eq!(jobs::get(&w.control, &caller, "repause").await?.state, JobState::Paused);
    assert!(w.outbox(&a).await?.iter().any(|x| x.starts_with("JobAutoPaused")), "the entry stays");
    // WHEN the owner resumes the job, and the next reconciler retries the entry
    Box::pin(jobs::set_state(&w.control, &caller, "repause", JobState::Enabled, None, Utc::now())).await?;
    w.reconcile("r2", later + Duration::minutes(2)).await?;
    // THEN the job stays enabled: the owner's resume is not undone by a stale auto-pause
    assert_eq!(jobs::get(&w.control, &caller, "repause").await?.state, JobState::Enabled);
    assert!(w.outbox(&a).await?.is_empty(), "the stale entry is done");
    w.env.cleanup().await;
    Ok(())
}
