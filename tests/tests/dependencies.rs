//! Per-period dependencies (`after`, docs/dependencies.md) through the real worker on the
//! emulator: a downstream fire waits for its upstream run without a slot and without polling,
//! the upstream's final write wakes it, and its deadline policy applies when the upstream never
//! comes. Each delivery is handed to the worker by the test (no pollers, no sleeps): what is
//! visible on the pool's queue is exactly what a pool would receive next.

use chrono::{DateTime, Duration as CDuration, Utc};
use std::sync::Arc;
use sundial_core::control::{self, Caller, Control, ControlSettings};
use sundial_core::execution::target::in_process::Handlers;
use sundial_core::execution::worker::{NoExtend, Worker};
use sundial_model::dependency::{Dependency, DependencyPeriod, DependencyStatus, OnDependencyDeadline};
use sundial_model::{ExecMessage, ExecStatus, Execution, Job, JobDefinition};
use sundial_schedule::{MisfirePolicy, ScheduleSpec};
use sundial_store::executions::ExecKey;
use sundial_tests::fixtures::{self, Reply, WebhookServer};
use sundial_tests::trigger::{at, create_job, ctx, executions};
use sundial_tests::TestEnv;
use tokio_util::sync::CancellationToken;

fn after(job: &str) -> Dependency {
    Dependency {
        job: job.into(),
        period: DependencyPeriod::Same,
        offset_secs: None,
        status: DependencyStatus::Succeeded,
    }
}

/// A daily job at `expr` in `tz` calling `url`, whose fires may start years late (the chain
/// test puts fires of a past DST change): one attempt unless `attempts`.
fn daily(url: &str, expr: &str, tz: &str) -> JobDefinition {
    let mut def = fixtures::http_definition(url);
    def.schedule = ScheduleSpec::new(expr, tz);
    def.misfire = MisfirePolicy::FireAll { cap: 10 };
    def.retry.max_age_secs = 3_650 * 86_400;
    def.retry.base_delay_secs = 1;
    def
}

/// Puts the READY execution of `job` at `instant` (as a tick would have), expiring a day after
/// the wall clock (`fixtures::put_execution`), not 90 days after its creation: the chain test's
/// fires are created in March 2026, long enough ago that their retention has passed, and
/// MiniStack's TTL reaper (every 60 s, by the wall clock) deleted a waiting fire mid-test when
/// its sweep fell inside the test, so a wake was never sent (`woken.len()` below 6).
async fn put_fire(env: &TestEnv, job: &Job, instant: DateTime<Utc>) -> anyhow::Result<Execution> {
    let sch = sundial_schedule::Schedule::parse(&job.definition.schedule, job.anchor)?;
    let e = Execution::ready(job, &sch, instant, None, instant - CDuration::seconds(60), "tick");
    fixtures::put_execution(env, &e).await?;
    Ok(e)
}

/// One delivery of `e`'s first message to `w`.
async fn deliver(w: &Worker, e: &Execution) {
    let body = serde_json::to_string(&fixtures::message_of(e, Utc::now())).unwrap_or_default();
    w.handle("default", &body, &NoExtend, &CancellationToken::new()).await;
}

/// Hands every message visible on the default pool's queue to `w` (deleting it, as a pool
/// would on its disposition), until none is visible: the wakes. Delayed copies (a waiting
/// fire's backstop) stay delayed. Returns the executions delivered, in order.
async fn drain(env: &TestEnv, w: &Worker) -> anyhow::Result<Vec<ExecMessage>> {
    let url = env.queue_url("default").to_string();
    let mut seen = Vec::new();
    for _ in 0..20 {
        let msgs = fixtures::receive(env, &url, 60).await?;
        if msgs.is_empty() {
            break;
        }
        for m in msgs {
            let body = m.body().unwrap_or_default().to_string();
            if let Ok(parsed) = serde_json::from_str::<ExecMessage>(&body) {
                seen.push(parsed);
            }
            w.handle("default", &body, &NoExtend, &CancellationToken::new()).await;
            env.clients
                .sqs
                .delete_message()
                .queue_url(&url)
                .receipt_handle(m.receipt_handle().unwrap_or_default())
                .send()
                .await?;
        }
    }
    Ok(seen)
}

/// The instant (ms) of `e`'s first event moving to `to`.
fn first(e: &Execution, to: ExecStatus) -> Option<i64> {
    e.timeline.iter().find(|ev| ev.to == to).map(|ev| ev.at)
}

fn exec_at<'a>(es: &'a [Execution], t: &str) -> &'a Execution {
    es.iter().find(|e| e.scheduled_at == at(t)).unwrap_or_else(|| panic!("no execution at {t}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_of_three_daily_jobs_in_three_zones_runs_in_order_across_the_dst_change() -> anyhow::Result<()>
{
    // GIVEN close (23:30 New York), settle (06:00 London, after close) and report (09:00 Tokyo,
    // after settle), around the US change of 2026-03-08 (New York at UTC-4 from then, London
    // still at UTC+0 until 03-29). Each fire of settle waits for the close whose period
    // contains it, each report for the settle whose period contains it.
    let env = TestEnv::new("deps-chain").await?;
    let hook = WebhookServer::start(vec![]).await?;
    let created = at("2026-03-01T00:00:00Z");
    let close = create_job(
        &env,
        "acme",
        "close",
        daily(&hook.url("/close"), "0 30 23 * * *", "America/New_York"),
        created,
    )
    .await?;
    let settle_def = daily(&hook.url("/settle"), "0 0 6 * * *", "Europe/London").with_after(after("close"));
    let settle = create_job(&env, "acme", "settle", settle_def, created).await?;
    let report_def = daily(&hook.url("/report"), "0 0 9 * * *", "Asia/Tokyo").with_after(after("settle"));
    let report = create_job(&env, "acme", "report", report_def, created).await?;
    // close: 03-06 23:30 EST = 03-07T04:30Z; 03-07 23:30 EST = 03-08T04:30Z; 03-08 23:30 EDT = 03-09T03:30Z
    let closes = ["2026-03-07T04:30:00Z", "2026-03-08T04:30:00Z", "2026-03-09T03:30:00Z"];
    let settles = ["2026-03-07T06:00:00Z", "2026-03-08T06:00:00Z", "2026-03-09T06:00:00Z"];
    // report 09:00 JST = 00:00Z: the settle of the day before is the last at or before it
    let reports = ["2026-03-08T00:00:00Z", "2026-03-09T00:00:00Z", "2026-03-10T00:00:00Z"];
    let mut fires = Vec::new();
    for t in reports {
        fires.push(put_fire(&env, &report, at(t)).await?);
    }
    for t in settles {
        fires.push(put_fire(&env, &settle, at(t)).await?);
    }
    let mut close_fires = Vec::new();
    for t in closes {
        close_fires.push(put_fire(&env, &close, at(t)).await?);
    }
    let (w, _) = fixtures::worker_with(&env, fixtures::settings("w"), Handlers::new())?;

    // WHEN the downstream fires are delivered first: they wait, calling nothing
    for e in &fires {
        deliver(&w, e).await;
    }
    assert!(hook.received().is_empty(), "nothing ran before its upstream: {:?}", hook.received());
    for e in &fires {
        let s = fixtures::snapshot(&env, &ExecKey::of(e)).await?;
        assert_eq!(s.exec.status, ExecStatus::Ready, "{}", e.id());
        assert!(
            s.exec.timeline.iter().any(|ev| ev.code.as_deref() == Some("WaitingForUpstream")),
            "{}",
            e.id()
        );
    }
    // AND the closes run, one delivery each, and every wake is handed on
    for e in &close_fires {
        deliver(&w, e).await;
    }
    let woken = drain(&env, &w).await?;

    // THEN every fire ran once, each after the run it waited for, which is the one its period
    // rule names across the change (checked by hand above)
    assert_eq!(woken.len(), 6, "each downstream woken once, by its own upstream: {woken:?}");
    let cs = executions(&env, "acme", "close").await?;
    let ss = executions(&env, "acme", "settle").await?;
    let rs = executions(&env, "acme", "report").await?;
    for e in cs.iter().chain(&ss).chain(&rs) {
        assert_eq!(e.status, ExecStatus::Succeeded, "{}: {:?}", e.id(), e.timeline);
    }
    for (up, down) in closes.iter().zip(settles).map(|(c, s)| (exec_at(&cs, c), exec_at(&ss, s))) {
        assert!(
            first(up, ExecStatus::Succeeded) <= first(down, ExecStatus::Running),
            "{} before {}",
            up.id(),
            down.id()
        );
    }
    for (up, down) in settles.iter().zip(reports).map(|(s, r)| (exec_at(&ss, s), exec_at(&rs, r))) {
        assert!(
            first(up, ExecStatus::Succeeded) <= first(down, ExecStatus::Running),
            "{} before {}",
            up.id(),
            down.id()
        );
    }
    assert_eq!(hook.received().len(), 9);
    env.cleanup().await;
    Ok(())
}

/// An hourly upstream `up` and a downstream `down` after it, both due an hour-aligned instant
/// `t` ago, with the given upstream webhook script; the downstream's own webhook answers 200.
async fn pair(
    env: &TestEnv,
    up_script: Vec<Reply>,
    up_attempts: u32,
    configure: impl FnOnce(&mut JobDefinition),
) -> anyhow::Result<(WebhookServer, Execution, Execution)> {
    let hook = WebhookServer::start(up_script).await?;
    let secs = Utc::now().timestamp();
    let t = DateTime::from_timestamp(secs - secs % 3_600, 0).unwrap_or_default() - CDuration::hours(1);
    let mut up_def = fixtures::http_definition(&hook.url("/up"));
    up_def.schedule = ScheduleSpec::new("0 0 * * * *", "UTC");
    up_def.retry.base_delay_secs = 1;
    up_def.retry.max_age_secs = 10 * 86_400;
    let mut down_def = up_def.clone().with_after(after("up"));
    up_def.retry.max_attempts = up_attempts;
    let up = create_job(env, "acme", "up", up_def, t - CDuration::hours(2)).await?;
    down_def.target = sundial_model::Target::http(hook.url("/down"));
    configure(&mut down_def);
    let down = create_job(env, "acme", "down", down_def, t - CDuration::hours(2)).await?;
    let ue = put_fire(env, &up, t).await?;
    let de = put_fire(env, &down, t + CDuration::minutes(5)).await?;
    Ok((hook, ue, de))
}

/// Calls the webhook received for `job`'s executions (their idempotency keys name the job).
fn calls(hook: &WebhookServer, job: &str) -> usize {
    let prefix = format!("acme:{job}@");
    hook.received().iter().filter(|r| r.idempotency_key.starts_with(&prefix)).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_fails_then_succeeds_on_retry_starts_the_downstream_only_after_the_success(
) -> anyhow::Result<()> {
    // GIVEN an upstream whose first attempt fails (500, retried) and a downstream waiting on it
    let env = TestEnv::new("deps-retry").await?;
    let (hook, ue, de) = pair(&env, vec![Reply::Status(500), Reply::Status(200)], 3, |_| {}).await?;
    let (w, _) = fixtures::worker_with(&env, fixtures::settings("w"), Handlers::new())?;
    deliver(&w, &de).await;
    let up_key = ExecKey::of(&ue);
    let down_key = ExecKey::of(&de);

    // WHEN the upstream's first attempt fails
    deliver(&w, &ue).await;
    assert_eq!(fixtures::snapshot(&env, &up_key).await?.exec.status, ExecStatus::RetryWait);
    // THEN the downstream still waits: a retry is not an end, nothing woke it
    assert_eq!(fixtures::snapshot(&env, &down_key).await?.exec.status, ExecStatus::Ready);
    assert_eq!(calls(&hook, "down"), 0);

    // WHEN the retry succeeds (its copy is due within the worker's early hold)
    deliver(&w, &ue).await;
    assert_eq!(fixtures::snapshot(&env, &up_key).await?.exec.status, ExecStatus::Succeeded);
    let woken = drain(&env, &w).await?;

    // THEN the success woke the downstream, which ran once, after it
    assert!(woken.iter().any(|m| m.job_id == "down"), "{woken:?}");
    let d = fixtures::snapshot(&env, &down_key).await?.exec;
    assert_eq!(d.status, ExecStatus::Succeeded, "{:?}", d.timeline);
    let u = fixtures::snapshot(&env, &up_key).await?.exec;
    assert!(first(&u, ExecStatus::Succeeded) <= first(&d, ExecStatus::Running));
    assert_eq!(calls(&hook, "down"), 1);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_replayed_from_the_dlq_wakes_the_downstream_when_the_replay_succeeds(
) -> anyhow::Result<()> {
    // GIVEN an upstream with one attempt that fails (DEAD, dead-lettered) and a waiting downstream
    let env = TestEnv::new("deps-replay").await?;
    let (hook, ue, de) = pair(&env, vec![Reply::Status(500), Reply::Status(200)], 1, |_| {}).await?;
    let (w, _) = fixtures::worker_with(&env, fixtures::settings("w"), Handlers::new())?;
    deliver(&w, &de).await;
    deliver(&w, &ue).await;
    let up_key = ExecKey::of(&ue);
    assert_eq!(fixtures::snapshot(&env, &up_key).await?.exec.status, ExecStatus::Dead);
    // the DEAD end woke the downstream, which looked, found it unmet, and waits again
    drain(&env, &w).await?;
    let down_key = ExecKey::of(&de);
    assert_eq!(fixtures::snapshot(&env, &down_key).await?.exec.status, ExecStatus::Ready);
    assert_eq!(calls(&hook, "down"), 0);

    // WHEN an operator replays the upstream and it succeeds
    let ctl = Control::new(ctx(&env), ControlSettings::default());
    let caller = Caller { tenant: "acme".into(), principal: "ops".into() };
    control::dlq::replay(&ctl, &caller, &ue.id(), Utc::now()).await?;
    let delivered = drain(&env, &w).await?;

    // THEN the replay ran the upstream, its success woke the downstream, which ran once
    assert!(
        delivered.iter().any(|m| m.job_id == "up") && delivered.iter().any(|m| m.job_id == "down"),
        "{delivered:?}"
    );
    assert_eq!(fixtures::snapshot(&env, &up_key).await?.exec.status, ExecStatus::Succeeded);
    assert_eq!(fixtures::snapshot(&env, &down_key).await?.exec.status, ExecStatus::Succeeded);
    assert_eq!(calls(&hook, "down"), 1);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_past_its_deadline_skips_fails_or_runs_as_its_policy_says() -> anyhow::Result<()> {
    for policy in [OnDependencyDeadline::Skip, OnDependencyDeadline::Fail, OnDependencyDeadline::Run] {
        // GIVEN a downstream whose one-second dependency deadline has passed, and an upstream
        // run that never ran (READY)
        let env = TestEnv::new("deps-deadline").await?;
        let (hook, ue, de) = pair(&env, vec![], 3, |d| {
            d.dependency_deadline_secs = Some(1);
            d.on_dependency_deadline = policy;
        })
        .await?;
        let (w, _) = fixtures::worker_with(&env, fixtures::settings("w"), Handlers::new())?;

        // WHEN the downstream is delivered
        deliver(&w, &de).await;

        // THEN the policy decided, audited with DependencyNotMet (or the run-anyway note)
        let d = fixtures::snapshot(&env, &ExecKey::of(&de)).await?.exec;
        let codes: Vec<&str> = d.timeline.iter().filter_map(|ev| ev.code.as_deref()).collect();
        match policy {
            OnDependencyDeadline::Skip => {
                assert_eq!(d.status, ExecStatus::Skipped, "{:?}", d.timeline);
                assert_eq!(d.last_error.as_ref().map(|e| e.0.as_str()), Some("DependencyNotMet"));
                assert!(d.last_error.as_ref().is_some_and(|e| e.1.contains(&ue.id())), "{:?}", d.last_error);
                assert_eq!(calls(&hook, "down"), 0);
            }
            OnDependencyDeadline::Fail => {
                assert_eq!(d.status, ExecStatus::Dead, "{:?}", d.timeline);
                assert_eq!(d.last_error.as_ref().map(|e| e.0.as_str()), Some("DependencyNotMet"));
                assert_eq!(calls(&hook, "down"), 0);
                let dlq = fixtures::dlq_bodies(&env, "default").await?;
                assert_eq!(dlq.len(), 1, "copied to the DLQ: {dlq:?}");
            }
            OnDependencyDeadline::Run => {
                assert_eq!(d.status, ExecStatus::Succeeded, "{:?}", d.timeline);
                assert!(codes.contains(&"DependencyDeadlineRun"), "{codes:?}");
                assert_eq!(calls(&hook, "down"), 1);
            }
        }
        // AND the upstream was left alone
        assert_eq!(fixtures::snapshot(&env, &ExecKey::of(&ue)).await?.exec.status, ExecStatus::Ready);
        env.cleanup().await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_fire_holds_no_slot_registers_once_and_sleeps_on_one_delayed_copy() -> anyhow::Result<()> {
    // GIVEN a FORBID downstream waiting for an upstream that has not run
    let env = TestEnv::new("deps-wait").await?;
    let (_hook, ue, de) =
        pair(&env, vec![], 3, |d| d.concurrency = sundial_model::ConcurrencyPolicy::Forbid).await?;
    let (w, _) = fixtures::worker_with(&env, fixtures::settings("w"), Handlers::new())?;

    // WHEN it is delivered twice (the second, a duplicate of the first message)
    deliver(&w, &de).await;
    deliver(&w, &de).await;

    // THEN it is READY, registered once on the upstream's item, noted once as waiting, and
    // sleeps on one delayed copy (the wait started a new generation: the duplicate of the old
    // one dropped itself); it took no FORBID slot
    let d = fixtures::snapshot(&env, &ExecKey::of(&de)).await?;
    assert_eq!(d.exec.status, ExecStatus::Ready);
    let notes = d.exec.timeline.iter().filter(|ev| ev.code.as_deref() == Some("WaitingForUpstream")).count();
    assert_eq!(notes, 1);
    let item = env
        .clients
        .ddb
        .get_item()
        .table_name(&env.cfg.executions_table)
        .key("pk", aws_sdk_dynamodb::types::AttributeValue::S(ExecKey::of(&ue).pk()))
        .key("sk", aws_sdk_dynamodb::types::AttributeValue::S(ExecKey::of(&ue).sk()))
        .consistent_read(true)
        .send()
        .await?
        .item
        .unwrap_or_default();
    assert_eq!(sundial_store::executions::downstream_of(&item), vec![de.id()]);
    let (visible, delayed, _) = sundial_tests::trigger::queue_counts(&env, "default").await?;
    assert_eq!((visible, delayed), (0, 1), "one delayed copy");
    let slot = sundial_store::slots::get_slot(&env.clients.ddb, &env.cfg.executions_table, &ExecKey::of(&de))
        .await?;
    assert_eq!(slot.holder, None, "no slot held while waiting");
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cycle_or_a_missing_upstream_is_refused_naming_it_and_nothing_is_written() -> anyhow::Result<()> {
    let env = TestEnv::new("deps-cycle").await?;
    let ctl = Arc::new(Control::new(ctx(&env), ControlSettings::default()));
    let caller = Caller { tenant: "acme".into(), principal: "dev".into() };
    let now = Utc::now();
    let def = || fixtures::http_definition("https://hooks.example.com/run");
    control::jobs::create(&ctl, &caller, "a", def(), now).await?;
    control::jobs::create(&ctl, &caller, "b", def().with_after(after("a")), now).await?;
    control::jobs::create(&ctl, &caller, "c", def().with_after(after("b")), now).await?;

    // a missing upstream: 400 on after[0].job
    let e = control::jobs::create(&ctl, &caller, "d", def().with_after(after("nope")), now).await.err();
    let Some(control::error::ControlError::Invalid(v)) = e else { panic!("{e:?}") };
    assert_eq!(v.field, "after[0].job", "{v}");

    // an edit of a that would wait for c: 400 on after naming a → c → b → a; a is unchanged
    let e = control::jobs::update(&ctl, &caller, "a", 1, def().with_after(after("c")), now).await.err();
    let Some(control::error::ControlError::Invalid(v)) = e else { panic!("{e:?}") };
    assert_eq!(v.field, "after");
    assert!(v.reason.contains("a → c → b → a"), "{v}");
    let a = control::jobs::get(&ctl, &caller, "a").await?;
    assert_eq!((a.version, a.definition.after.len()), (1, 0));

    // a job's own run of the same period: refused; its previous run: allowed, and so is a
    // cycle closed through the past (c waits for a's previous run)
    let e = control::jobs::update(&ctl, &caller, "a", 1, def().with_after(after("a")), now).await.err();
    let Some(control::error::ControlError::Invalid(v)) = e else { panic!("{e:?}") };
    assert_eq!(v.field, "after[0].period");
    let prev = |j: &str| Dependency { period: DependencyPeriod::Previous, ..after(j) };
    control::jobs::update(&ctl, &caller, "a", 1, def().with_after(prev("a")), now).await?;
    control::jobs::update(&ctl, &caller, "a", 2, def().with_after(prev("c")), now).await?;
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_condemned_fire_whose_worker_died_after_the_claim_is_ended_dead_by_the_takeover_not_run(
) -> anyhow::Result<()> {
    // GIVEN a downstream past its dependency deadline under `fail`, whose worker condemned it
    // (the note on the READY item) and claimed it, then died before its DEAD finish (the
    // simulator's seed 7006: the takeover ran the target)
    let env = TestEnv::new("deps-condemned").await?;
    let (hook, _ue, de) = pair(&env, vec![], 3, |d| {
        d.dependency_deadline_secs = Some(1);
        d.on_dependency_deadline = OnDependencyDeadline::Fail;
    })
    .await?;
    let store = fixtures::store(&env);
    let key = ExecKey::of(&de);
    let now = Utc::now();
    assert!(store.note_ready(&de, "DependencyNotMet", "worker:gone", now.timestamp_millis()).await?);
    let seen = store.get(&key, true).await?;
    // a lease that ended ten seconds ago, as if its worker died then
    let terms = sundial_model::claim::LeaseTerms { duration_ms: 1, skew_margin_ms: 0, may_take_over: true };
    let claimed = store.claim_from(&key, seen, "gone", &terms, now - CDuration::seconds(10)).await?;
    assert!(matches!(claimed, sundial_store::executions::ClaimOutcome::Claimed(_)), "{claimed:?}");

    // WHEN another worker takes it over
    let (w, _) = fixtures::worker_with(&env, fixtures::settings("w"), Handlers::new())?;
    deliver(&w, &de).await;

    // THEN it ends DEAD, DependencyNotMet, without calling the target
    let d = fixtures::snapshot(&env, &key).await?.exec;
    assert_eq!(d.status, ExecStatus::Dead, "{:?}", d.timeline);
    assert_eq!(d.last_error.as_ref().map(|e| e.0.as_str()), Some("DependencyNotMet"));
    assert_eq!(calls(&hook, "down"), 0);
    env.cleanup().await;
    Ok(())
}
