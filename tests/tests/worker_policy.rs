//! Concurrency policies (docs/execution.md §6) with a job whose run outlasts its interval, the
//! per-tenant running limit, and cancellation of READY and RUNNING executions.

use chrono::{Duration as CDuration, Utc};
use std::sync::Arc;
use std::time::Duration;
use sundial_core::execution::policy::{Seat, TenantGate};
use sundial_core::execution::target::in_process::{BoxFuture, Handler, HandlerContext, Handlers};
use sundial_model::retry::RunError;
use sundial_model::{ConcurrencyPolicy, ExecStatus, JobDefinition, Target};
use sundial_store::executions::{CancelOutcome, ExecKey};
use sundial_store::slots;
use sundial_tests::fixtures::{self, Reply, WebhookServer};
use sundial_tests::TestEnv;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

const WITHIN: Duration = Duration::from_secs(60);

fn job(url: &str, policy: ConcurrencyPolicy) -> JobDefinition {
    let mut d = fixtures::http_definition(url);
    d.concurrency = policy;
    d
}

/// Three fires of one job, one second apart, all due now (the run of the first outlasts the
/// interval because its webhook holds it).
async fn three_fires(env: &TestEnv, def: &JobDefinition) -> anyhow::Result<Vec<ExecKey>> {
    let t0 = Utc::now() - CDuration::seconds(3);
    let mut keys = Vec::new();
    for i in 0..3 {
        keys.push(
            fixtures::create_ready(env, "acme", "every-second", def.clone(), t0 + CDuration::seconds(i))
                .await?,
        );
    }
    Ok(keys)
}

async fn all_final(env: &TestEnv, keys: &[ExecKey]) -> anyhow::Result<Vec<ExecStatus>> {
    let mut out = Vec::new();
    for k in keys {
        out.push(fixtures::wait_for(env, k, WITHIN, |s| s.exec.status.is_terminal()).await?.exec.status);
    }
    Ok(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_lets_overlapping_fires_run_at_once() -> anyhow::Result<()> {
    // GIVEN an ALLOW job whose runs hold until all three are in flight
    let env = TestEnv::new("policy-allow").await?;
    let gate = Arc::new(Notify::new());
    let hook = WebhookServer::start((0..3).map(|_| Reply::Hold(gate.clone())).collect()).await?;
    let keys = three_fires(&env, &job(&hook.url("/run"), ConcurrencyPolicy::Allow)).await?;

    // WHEN a worker with enough slots polls
    let (w, _) = fixtures::worker_with(&env, fixtures::settings("allow"), Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller(w, 4);
    hook.wait_requests(3, WITHIN).await?;
    gate.notify_waiters();
    let statuses = all_final(&env, &keys).await?;
    stop.cancel();
    poller.await??;

    // THEN all three overlapped and succeeded
    assert_eq!(hook.max_in_flight(), 3);
    assert_eq!(statuses, vec![ExecStatus::Succeeded; 3]);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbid_skips_fires_that_come_while_a_run_is_going_and_says_why() -> anyhow::Result<()> {
    // GIVEN a FORBID job whose first run holds
    let env = TestEnv::new("policy-forbid").await?;
    let gate = Arc::new(Notify::new());
    let hook = WebhookServer::start(vec![Reply::Hold(gate.clone())]).await?;
    let keys = three_fires(&env, &job(&hook.url("/run"), ConcurrencyPolicy::Forbid)).await?;

    // WHEN a worker polls, and the held run is released once the other fires were decided
    let (w, metrics) = fixtures::worker_with(&env, fixtures::settings("forbid"), Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller(w, 4);
    let first = hook.wait_requests(1, WITHIN).await?;
    let runner = first[0].idempotency_key.clone();
    for k in keys.iter().filter(|k| k.global_id() != runner) {
        fixtures::wait_for(&env, k, WITHIN, |s| s.exec.status == ExecStatus::Skipped).await?;
    }
    gate.notify_waiters();
    all_final(&env, &keys).await?;
    stop.cancel();
    poller.await??;

    // THEN one run succeeded and the other two were SKIPPED, naming the running execution
    for k in &keys {
        let s = fixtures::snapshot(&env, k).await?;
        if k.global_id() == runner {
            assert_eq!(s.exec.status, ExecStatus::Succeeded);
        } else {
            assert_eq!(s.exec.status, ExecStatus::Skipped);
            let (code, why) = s.exec.last_error.clone().unwrap_or_default();
            assert_eq!(code, "ForbidOverlap");
            let local = runner.split_once(':').map_or(runner.as_str(), |(_, id)| id);
            assert!(why.contains(local), "{why}");
            assert_eq!(
                s.exec.timeline.last().map(|a| (a.from, a.to)),
                Some((Some(ExecStatus::Ready), ExecStatus::Skipped))
            );
        }
    }
    assert_eq!(hook.received().len(), 1);
    assert_eq!(metrics.records().iter().filter(|m| m.outcome == Some(ExecStatus::Skipped)).count(), 2);
    env.cleanup().await;
    Ok(())
}

/// Runs the execution `e` once through worker `w`, delivered by its message.
async fn deliver(
    env: &TestEnv,
    w: &sundial_core::execution::worker::Worker,
    e: &sundial_model::Execution,
) -> anyhow::Result<ExecKey> {
    let key = fixtures::put_execution(env, e).await?;
    let body = serde_json::to_string(&fixtures::message_of(e, Utc::now()))?;
    w.handle("default", &body, &sundial_core::execution::worker::NoExtend, &CancellationToken::new()).await;
    Ok(key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbid_run_leaves_its_slot_to_the_next_fire_without_a_release_write() -> anyhow::Result<()> {
    // GIVEN a FORBID job whose first fire ran to SUCCEEDED
    let env = TestEnv::new("policy-forbid-next").await?;
    let hook = WebhookServer::start(vec![Reply::Status(200), Reply::Status(200)]).await?;
    let def = job(&hook.url("/run"), ConcurrencyPolicy::Forbid);
    let (w, _) = fixtures::worker_with(&env, fixtures::settings("forbid-next"), Handlers::new())?;
    let now = Utc::now();
    let first = fixtures::ready_execution("acme", "daily", def.clone(), now - CDuration::seconds(2), now);
    let k1 = deliver(&env, &w, &first).await?;
    assert_eq!(fixtures::snapshot(&env, &k1).await?.exec.status, ExecStatus::Succeeded);
    // THEN its finish wrote nothing to the slot: the finished run still names it (the next
    // acquirer reads the holder's execution, finds it final and takes the slot over by CAS;
    // FORBID never reads `released`)
    let slot = slots::get_slot(&env.clients.ddb, &env.cfg.executions_table, &k1).await?;
    assert_eq!(slot.holder, Some(k1.scheduled_ms), "{slot:?}");
    // WHEN the next fire comes
    let second = fixtures::ready_execution("acme", "daily", def, now - CDuration::seconds(1), now);
    let k2 = deliver(&env, &w, &second).await?;
    // THEN it runs (the finished holder does not block it) and holds the slot in turn
    assert_eq!(fixtures::snapshot(&env, &k2).await?.exec.status, ExecStatus::Succeeded);
    assert_eq!(hook.received().len(), 2);
    let slot = slots::get_slot(&env.clients.ddb, &env.cfg.executions_table, &k2).await?;
    assert_eq!(slot.holder, Some(k2.scheduled_ms), "{slot:?}");
    env.cleanup().await;
    Ok(())
}

/// The body and delay of every message a worker sends.
#[derive(Debug, Clone, Default)]
struct Sends(Arc<std::sync::Mutex<Vec<(serde_json::Value, i32)>>>);

impl sundial_testkit::intercept::Observer for Sends {
    const NAME: &'static str = "SendsRecorder";

    fn on_request(
        &self,
        _meta: &aws_smithy_runtime_api::client::orchestrator::Metadata,
        input: &aws_smithy_runtime_api::client::interceptors::context::Input,
    ) {
        use aws_sdk_sqs::operation::send_message_batch::SendMessageBatchInput;
        let Some(i) = input.downcast_ref::<SendMessageBatchInput>() else { return };
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for e in i.entries() {
            let body = serde_json::from_str(e.message_body()).unwrap_or_default();
            seen.push((body, e.delay_seconds().unwrap_or(0)));
        }
    }
}

impl Sends {
    /// The (delay, wait generation) of each message sent for the fire scheduled at `ms`.
    fn of(&self, ms: i64) -> Vec<(i32, u64)> {
        let seen = self.0.lock().map(|g| g.clone()).unwrap_or_default();
        seen.iter()
            .filter(|(b, _)| b["s"].as_i64() == Some(ms))
            .map(|(b, d)| (*d, b["g"].as_u64().unwrap_or(0)))
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serialize_fire_is_woken_by_the_release_instead_of_polling_every_two_seconds() -> anyhow::Result<()>
{
    // GIVEN a SERIALIZE job whose fire A runs (its webhook holds it) and a later fire B, both
    // due, through a worker whose sends are recorded
    let env = TestEnv::new("policy-serial-wake").await?;
    let gate = Arc::new(Notify::new());
    let hook = WebhookServer::start(vec![Reply::Hold(gate.clone()), Reply::Status(200)]).await?;
    let def = job(&hook.url("/run"), ConcurrencyPolicy::Serialize);
    let sends = Sends::default();
    let seen = sends.clone();
    let clients = sundial_testkit::intercept::with_interceptors(env.clients.clone(), move |_| {
        sundial_testkit::intercept::Observe(seen.clone())
    });
    let (w, _) =
        fixtures::worker_with_clients(&env, fixtures::settings("serial-wake"), Handlers::new(), &clients)?;
    let now = Utc::now();
    let a = fixtures::ready_execution("acme", "serial", def.clone(), now - CDuration::seconds(2), now);
    let b = fixtures::ready_execution("acme", "serial", def, now - CDuration::seconds(1), now);
    let kb = fixtures::put_execution(&env, &b).await?;
    let ka = fixtures::put_execution(&env, &a).await?;
    let body_a = serde_json::to_string(&fixtures::message_of(&a, Utc::now()))?;
    let wa = w.clone();
    let run_a = tokio::spawn(async move {
        wa.handle("default", &body_a, &sundial_core::execution::worker::NoExtend, &CancellationToken::new())
            .await
    });
    hook.wait_requests(1, WITHIN).await?;

    // WHEN B is delivered while A holds the slot
    deliver_message(&w, &b).await?;
    // THEN B waits (still READY) and its copy comes back only after the backstop (30 s), not
    // in 2 s: a waiting fire no longer polls
    assert_eq!(fixtures::snapshot(&env, &kb).await?.exec.status, ExecStatus::Ready);
    let waits = sends.of(kb.scheduled_ms);
    assert_eq!(waits.len(), 1, "{waits:?}");
    assert!(waits[0].0 >= 25, "the waiting copy is delayed {} s", waits[0].0);

    // WHEN A finishes
    gate.notify_waiters();
    run_a.await?;
    assert_eq!(fixtures::snapshot(&env, &ka).await?.exec.status, ExecStatus::Succeeded);
    // THEN its release woke B: a copy sent at once, of a newer wait generation, so the older
    // waiting copy drops itself when it comes back
    let after = sends.of(kb.scheduled_ms);
    assert_eq!(after.len(), 2, "{after:?}");
    let (delay, gen) = after[1];
    assert_eq!(delay, 0);
    assert!(gen > waits[0].1, "wake generation {gen} vs waiting copy {}", waits[0].1);
    assert_eq!(fixtures::snapshot(&env, &kb).await?.wait_gen, gen);
    // AND that copy runs B, while the old one is dropped
    let mut msg = fixtures::message_of(&b, Utc::now());
    msg.wait_gen = gen;
    let stop = CancellationToken::new();
    let nx = sundial_core::execution::worker::NoExtend;
    w.handle("default", &serde_json::to_string(&msg)?, &nx, &stop).await;
    assert_eq!(fixtures::snapshot(&env, &kb).await?.exec.status, ExecStatus::Succeeded);
    assert_eq!(hook.received().len(), 2);
    env.cleanup().await;
    Ok(())
}

/// Delivers `e`'s message (generation 0) to worker `w` once.
async fn deliver_message(
    w: &sundial_core::execution::worker::Worker,
    e: &sundial_model::Execution,
) -> anyhow::Result<()> {
    let body = serde_json::to_string(&fixtures::message_of(e, Utc::now()))?;
    w.handle("default", &body, &sundial_core::execution::worker::NoExtend, &CancellationToken::new()).await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serialize_keeps_every_fire_and_runs_them_one_at_a_time_in_order() -> anyhow::Result<()> {
    // GIVEN a SERIALIZE job whose first run holds, with its fires' messages sent newest first
    let env = TestEnv::new("policy-serial").await?;
    let gate = Arc::new(Notify::new());
    let hook = WebhookServer::start(vec![Reply::Hold(gate.clone())]).await?;
    let def = job(&hook.url("/run"), ConcurrencyPolicy::Serialize);
    let t0 = Utc::now() - CDuration::seconds(3);
    let mut execs = Vec::new();
    for i in 0..3 {
        let e = fixtures::ready_execution(
            "acme",
            "every-second",
            def.clone(),
            t0 + CDuration::seconds(i),
            Utc::now(),
        );
        fixtures::put_execution(&env, &e).await?;
        execs.push(e);
    }
    for e in execs.iter().rev() {
        fixtures::enqueue(&env, e, 0).await?;
    }
    let keys: Vec<ExecKey> = execs.iter().map(ExecKey::of).collect();

    // WHEN a worker with several slots polls
    let (w, metrics) = fixtures::worker_with(&env, fixtures::settings("serial"), Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller(w, 4);
    let first = hook.wait_requests(1, WITHIN).await?;
    // THEN the earliest fire runs first, and the later ones wait (still READY) while it runs,
    // once the worker has handled their messages
    assert_eq!(first[0].idempotency_key, keys[0].global_id());
    for k in &keys[1..] {
        fixtures::wait_handled(&metrics, k, WITHIN).await?;
    }
    assert_eq!(hook.received().len(), 1);
    for k in &keys[1..] {
        assert_eq!(fixtures::snapshot(&env, k).await?.exec.status, ExecStatus::Ready);
    }
    // WHEN the first run ends
    gate.notify_waiters();
    let statuses = all_final(&env, &keys).await?;
    stop.cancel();
    poller.await??;

    // THEN every fire ran, one at a time, in scheduled order
    assert_eq!(statuses, vec![ExecStatus::Succeeded; 3]);
    let order: Vec<String> = hook.received().into_iter().map(|r| r.idempotency_key).collect();
    assert_eq!(order, keys.iter().map(ExecKey::global_id).collect::<Vec<_>>());
    assert_eq!(hook.max_in_flight(), 1);
    env.cleanup().await;
    Ok(())
}

/// Works until cancelled (`params.spin = true`), or returns at once. Its one safe point is
/// waiting on its cancellation token.
struct Spin;

impl Handler for Spin {
    fn run(&self, ctx: HandlerContext) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(async move {
            if !ctx.invocation.params["spin"].as_bool().unwrap_or(false) {
                return Ok(());
            }
            ctx.cancelled().await;
            Err(RunError::cancelled())
        })
    }
}

fn spin_job(spin: bool, policy: ConcurrencyPolicy) -> JobDefinition {
    let mut d = fixtures::definition(Target::in_process("spin"));
    d.params = serde_json::json!({ "spin": spin });
    d.concurrency = policy;
    d
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_cancels_the_running_fire_then_starts_the_new_one() -> anyhow::Result<()> {
    // GIVEN a REPLACE job whose current run works until cancelled
    let env = TestEnv::new("policy-replace").await?;
    let (w, _) =
        fixtures::worker_with(&env, fixtures::settings("replace"), Handlers::new().with("spin", Spin))?;
    let (stop, poller) = fixtures::spawn_poller(w, 4);
    let now = Utc::now();
    let old = fixtures::create_ready(
        &env,
        "acme",
        "rebuild",
        spin_job(true, ConcurrencyPolicy::Replace),
        now - CDuration::seconds(2),
    )
    .await?;
    fixtures::wait_for(&env, &old, WITHIN, |s| s.exec.status == ExecStatus::Running).await?;

    // WHEN the next fire comes
    let new =
        fixtures::create_ready(&env, "acme", "rebuild", spin_job(false, ConcurrencyPolicy::Replace), now)
            .await?;
    let n = fixtures::wait_for(&env, &new, WITHIN, |s| s.exec.status.is_terminal()).await?;
    let o = fixtures::wait_for(&env, &old, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN the old run was CANCELED (its handler stopped at a safe point) and the new one
    // started only after that, then succeeded
    assert_eq!(o.exec.status, ExecStatus::Canceled);
    assert_eq!(o.exec.last_error.map(|e| e.0), Some("Canceled".into()));
    assert_eq!(n.exec.status, ExecStatus::Succeeded);
    let cancelled_at = o.exec.timeline.last().map(|a| a.at).unwrap_or(i64::MAX);
    let started_at = n.exec.timeline.iter().find(|a| a.to == ExecStatus::Running).map(|a| a.at).unwrap_or(0);
    assert!(started_at >= cancelled_at, "new run started at {started_at}, old one ended at {cancelled_at}");
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_limit_holds_further_executions_until_one_finishes() -> anyhow::Result<()> {
    // GIVEN a tenant limited to one running execution, and two due jobs of that tenant
    let env = TestEnv::new("tenant-limit").await?;
    let gate = Arc::new(Notify::new());
    let hook = WebhookServer::start(vec![Reply::Hold(gate.clone())]).await?;
    let now = Utc::now();
    let a = fixtures::create_ready(&env, "acme", "job-a", fixtures::http_definition(&hook.url("/a")), now)
        .await?;
    let b = fixtures::create_ready(&env, "acme", "job-b", fixtures::http_definition(&hook.url("/b")), now)
        .await?;
    let mut settings = fixtures::settings("limited");
    settings.tenant_limits =
        sundial_core::execution::policy::TenantLimits::parse("acme=1").map_err(anyhow::Error::msg)?;

    // WHEN a worker with spare slots polls
    let (w, metrics) = fixtures::worker_with(&env, settings, Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller(w, 4);
    let first = hook.wait_requests(1, WITHIN).await?;
    let waiting = if first[0].idempotency_key == a.global_id() { &b } else { &a };
    // THEN the second stays READY while the first runs, once the worker has handled its message
    fixtures::wait_handled(&metrics, waiting, WITHIN).await?;
    assert_eq!(fixtures::snapshot(&env, waiting).await?.exec.status, ExecStatus::Ready);
    // AND runs once the first finishes
    gate.notify_waiters();
    let statuses = all_final(&env, &[a.clone(), b.clone()]).await?;
    stop.cancel();
    poller.await??;
    assert_eq!(statuses, vec![ExecStatus::Succeeded; 2]);
    assert_eq!(hook.max_in_flight(), 1);
    let gate_table = sundial_core::execution::policy::TenantGate::new(
        env.clients.ddb.clone(),
        env.cfg.executions_table.clone(),
    );
    assert!(gate_table.running("acme", 1, 0).await?.is_empty(), "entries are released");
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_whose_limit_the_workers_cannot_exceed_runs_without_a_gate_entry() -> anyhow::Result<()> {
    // GIVEN a stack whose workers run at most 4 executions at once, a tenant limited to 4 (the
    // workers cannot exceed it) and one limited to 3 (they could), each with a running execution
    let env = TestEnv::new("tenant-capacity").await?;
    let gate = Arc::new(Notify::new());
    let hook = WebhookServer::start(vec![Reply::Hold(gate.clone()), Reply::Hold(gate.clone())]).await?;
    let now = Utc::now();
    let def = fixtures::http_definition(&hook.url("/run"));
    let big = fixtures::create_ready(&env, "big", "job", def.clone(), now).await?;
    let small = fixtures::create_ready(&env, "small", "job", def, now).await?;
    let mut settings = fixtures::settings("capacity");
    settings.tenant_limits =
        sundial_core::execution::policy::TenantLimits::parse("big=4,small=3").map_err(anyhow::Error::msg)?;
    settings.worker_capacity = Some(4);
    let (w, _) = fixtures::worker_with(&env, settings, Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller(w, 4);
    hook.wait_requests(2, WITHIN).await?;

    // THEN while both run, only the tenant whose limit is below the capacity is in its gate
    let gates = TenantGate::new(env.clients.ddb.clone(), env.cfg.executions_table.clone());
    let at = Utc::now().timestamp_millis();
    assert_eq!(gates.running("small", 3, at).await?, vec![small.id()]);
    assert!(gates.running("big", 4, at).await?.is_empty(), "no gate entry for a limit ≥ the capacity");
    // AND both finish
    gate.notify_waiters();
    let statuses = all_final(&env, &[big, small]).await?;
    stop.cancel();
    poller.await??;
    assert_eq!(statuses, vec![ExecStatus::Succeeded; 2]);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_confined_to_a_cell_no_larger_than_its_limit_runs_without_a_gate_entry() -> anyhow::Result<()>
{
    // GIVEN two pools of 4 slots each (a stack of 8), a tenant the allowlists confine to the
    // default pool (its cell: 4) and one allowed both (8), each limited to 4 and each with a
    // running execution delivered by the default pool
    let env = TestEnv::with("tenant-cell", &["default", "cell-b"], 16).await?;
    let gate = Arc::new(Notify::new());
    let hook = WebhookServer::start(vec![Reply::Hold(gate.clone()), Reply::Hold(gate.clone())]).await?;
    let now = Utc::now();
    let def = fixtures::http_definition(&hook.url("/run"));
    let cellular = fixtures::create_ready(&env, "cellular", "job", def.clone(), now).await?;
    let wide = fixtures::create_ready(&env, "wide", "job", def, now).await?;
    let mut cfg = env.cfg.clone();
    cfg.targets.tenants = Some(
        sundial_model::outbound::TenantTargets::parse(
            r#"{"cellular": {"http": ["*"], "pools": ["default"]}, "wide": {"http": ["*"], "pools": ["*"]}}"#,
        )
        .map_err(anyhow::Error::msg)?,
    );
    let mut settings = fixtures::settings("cell");
    settings.tenant_limits = sundial_core::execution::policy::TenantLimits::parse("cellular=4,wide=4")
        .map_err(anyhow::Error::msg)?;
    settings.worker_capacity = Some(8);
    cfg.pool_capacity = [("default".to_string(), 4), ("cell-b".to_string(), 4)].into();
    let (w, _) = fixtures::worker_with_config(&env, cfg, settings, Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller(w, 4);
    hook.wait_requests(2, WITHIN).await?;

    // THEN while both run, only the tenant whose pools could run more than its limit is gated
    let gates = TenantGate::new(env.clients.ddb.clone(), env.cfg.executions_table.clone());
    let at = Utc::now().timestamp_millis();
    assert_eq!(gates.running("wide", 4, at).await?, vec![wide.id()]);
    assert!(gates.running("cellular", 4, at).await?.is_empty(), "no gate entry inside a cell of ≤ its limit");
    // AND both finish
    gate.notify_waiters();
    let statuses = all_final(&env, &[cellular, wide]).await?;
    stop.cancel();
    poller.await??;
    assert_eq!(statuses, vec![ExecStatus::Succeeded; 2]);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_ready_execution_stops_it_from_running() -> anyhow::Result<()> {
    // GIVEN a READY execution with its message in the queue
    let env = TestEnv::new("cancel-ready").await?;
    let hook = WebhookServer::start(vec![]).await?;
    let key = fixtures::create_ready(
        &env,
        "acme",
        "nope",
        fixtures::http_definition(&hook.url("/run")),
        Utc::now(),
    )
    .await?;

    // WHEN it is cancelled, then its message is delivered
    let store = fixtures::store(&env);
    assert_eq!(store.request_cancel(&key, "api:alice", Utc::now()).await?, CancelOutcome::Canceled);
    let msgs = fixtures::receive_n(&env, "default", 1, 30, WITHIN).await?;
    let (w, _) = fixtures::worker_with(&env, fixtures::settings("cancel"), Handlers::new())?;
    let resp = sundial_worker::lambda::handle_event(
        &w,
        fixtures::sqs_event(&env, "default", &msgs)?,
        &CancellationToken::new(),
    )
    .await;

    // THEN the message is consumed without running anything, and the cancel is audited
    assert!(resp.batch_item_failures.is_empty());
    assert!(hook.received().is_empty());
    let s = fixtures::snapshot(&env, &key).await?;
    assert_eq!(s.exec.status, ExecStatus::Canceled);
    assert_eq!(s.exec.timeline.last().map(|a| a.actor.as_str()), Some("api:alice"));
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_running_execution_is_seen_at_the_next_safe_point() -> anyhow::Result<()> {
    // GIVEN an in-process execution that works until cancelled
    let env = TestEnv::new("cancel-running").await?;
    let (w, metrics) =
        fixtures::worker_with(&env, fixtures::settings("cancel-run"), Handlers::new().with("spin", Spin))?;
    let (stop, poller) = fixtures::spawn_poller(w, 2);
    let key =
        fixtures::create_ready(&env, "acme", "spinner", spin_job(true, ConcurrencyPolicy::Allow), Utc::now())
            .await?;
    fixtures::wait_for(&env, &key, WITHIN, |s| s.exec.status == ExecStatus::Running).await?;

    // WHEN a user cancels it
    let out = fixtures::store(&env).request_cancel(&key, "api:bob", Utc::now()).await?;

    // THEN the flag is set, the handler stops at its next check, and the run is CANCELED
    assert_eq!(out, CancelOutcome::Requested);
    let s = fixtures::wait_for(&env, &key, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;
    assert_eq!(s.exec.status, ExecStatus::Canceled);
    assert_eq!(
        s.exec.timeline.last().map(|a| (a.from, a.actor.as_str())),
        Some((Some(ExecStatus::Running), "worker:cancel-run"))
    );
    assert_eq!(metrics.records().iter().filter(|m| m.outcome == Some(ExecStatus::Canceled)).count(), 1);
    env.cleanup().await;
    Ok(())
}

/// Two instants far from now: the tenant gate judges liveness only by the `now_ms` it is given.
const T0: i64 = 1_800_000_000_000;
const MARGIN: i64 = 200;

fn gate_key(tenant: &str, job: &str) -> ExecKey {
    ExecKey { tenant: tenant.into(), job_id: job.into(), scheduled_ms: T0, child: None }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_racing_a_heartbeat_cannot_undo_its_extension() -> anyhow::Result<()> {
    // GIVEN a tenant limited to two running executions, and X running with a lease to T0 + 1 s
    let env = TestEnv::new("gate-extend").await?;
    let gate = TenantGate::new(env.clients.ddb.clone(), env.cfg.executions_table.clone());
    let (ddb, table) = (&env.clients.ddb, env.cfg.executions_table.as_str());
    let (x, y, z) = (gate_key("acme", "x"), gate_key("acme", "y"), gate_key("acme", "z"));
    assert_eq!(gate.acquire(&x, &x.id(), 2, T0 + 1_000, MARGIN, T0).await?, Seat::Admitted { shard: 0 });

    // WHEN Y's acquire reads the gate, X's heartbeat then extends X's entry to T0 + 10 s, and
    // Y's acquire writes back what it read plus itself (retrying on a conflict, as acquire does)
    let read = slots::get_running(ddb, table, "acme", 0).await?;
    gate.extend(&x, &x.id(), 0, T0 + 10_000).await?;
    let mut with_y = read.leases.clone();
    with_y.insert(y.id(), T0 + 10_000);
    if !slots::put_running(ddb, table, "acme", 0, &with_y, read.version).await? {
        assert_eq!(gate.acquire(&y, &y.id(), 2, T0 + 10_000, MARGIN, T0).await?, Seat::Admitted { shard: 0 });
    }

    // THEN X's entry keeps its extension
    let after = slots::get_running(ddb, table, "acme", 0).await?;
    assert_eq!(after.leases.get(&x.id()), Some(&(T0 + 10_000)), "{after:?}");
    // AND at T0 + 1.5 s, with X and Y both running, Z is refused: the limit is two
    let z_at = T0 + 1_500;
    assert!(
        matches!(gate.acquire(&z, &z.id(), 2, z_at + 1_000, MARGIN, z_at).await?, Seat::Full { .. }),
        "Z joined a full gate"
    );
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_racing_a_release_cannot_bring_the_released_entry_back() -> anyhow::Result<()> {
    // GIVEN a tenant limited to two running executions, and X running
    let env = TestEnv::new("gate-release").await?;
    let gate = TenantGate::new(env.clients.ddb.clone(), env.cfg.executions_table.clone());
    let (ddb, table) = (&env.clients.ddb, env.cfg.executions_table.as_str());
    let (x, y, z) = (gate_key("acme", "x"), gate_key("acme", "y"), gate_key("acme", "z"));
    assert_eq!(gate.acquire(&x, &x.id(), 2, T0 + 10_000, MARGIN, T0).await?, Seat::Admitted { shard: 0 });

    // WHEN Y's acquire reads the gate, X finishes and releases its entry, and Y's acquire writes
    // back what it read plus itself (retrying on a conflict, as acquire does)
    let read = slots::get_running(ddb, table, "acme", 0).await?;
    gate.release(&x, &x.id(), 0).await?;
    let mut with_y = read.leases.clone();
    with_y.insert(y.id(), T0 + 10_000);
    if !slots::put_running(ddb, table, "acme", 0, &with_y, read.version).await? {
        assert_eq!(gate.acquire(&y, &y.id(), 2, T0 + 10_000, MARGIN, T0).await?, Seat::Admitted { shard: 0 });
    }

    // THEN X's entry stays released, and Z may join Y
    let after = slots::get_running(ddb, table, "acme", 0).await?;
    assert!(!after.leases.contains_key(&x.id()), "X's released entry came back: {after:?}");
    assert_eq!(
        gate.acquire(&z, &z.id(), 2, T0 + 10_000, MARGIN, T0).await?,
        Seat::Admitted { shard: 0 },
        "Z was kept out by X's ghost"
    );
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_leaves_a_fresh_message_instead_of_burning_a_receive_toward_the_dlq() -> anyhow::Result<()> {
    // Issue 13 scenario 2: each policy or tenant-limit wait used to return the same message with
    // a visibility change, and every receive counts toward `maxReceiveCount` (50): a long wait
    // moved a live execution's only message to the DLQ.
    // GIVEN a tenant limited to one running execution, whose slot another execution holds for
    // ten minutes, and a due execution of that tenant
    let env = TestEnv::new("wait-fresh").await?;
    let now = Utc::now();
    let holder = ExecKey { tenant: "acme".into(), job_id: "long".into(), scheduled_ms: 1, child: None };
    let gate = TenantGate::new(env.clients.ddb.clone(), env.cfg.executions_table.clone());
    let lease_end = now.timestamp_millis() + 600_000;
    assert_eq!(
        gate.acquire(&holder, &holder.id(), 1, lease_end, 2_000, now.timestamp_millis()).await?,
        Seat::Admitted { shard: 0 }
    );
    let def = fixtures::http_definition("https://hooks.example.com/run");
    let e = fixtures::ready_execution("acme", "waits", def, now, now);
    let key = fixtures::put_execution(&env, &e).await?;
    let mut settings = fixtures::settings("waiter");
    settings.tenant_limits =
        sundial_core::execution::policy::TenantLimits::parse("acme=1").map_err(anyhow::Error::msg)?;
    let (w, _) = fixtures::worker_with(&env, settings, Handlers::new())?;

    // WHEN the worker handles a delivery of its message
    let body = serde_json::to_string(&fixtures::message_of(&e, now))?;
    let stop = tokio_util::sync::CancellationToken::new();
    let d = w.handle("default", &body, &sundial_core::execution::worker::NoExtend, &stop).await;

    // THEN the delivered message is done with, and a fresh one (receive count 0) waits, delayed,
    // in the pool queue: waiting never counts toward the DLQ
    assert_eq!(d, sundial_core::execution::worker::Disposition::Delete);
    let (visible, delayed, in_flight) = sundial_tests::trigger::queue_counts(&env, "default").await?;
    assert_eq!((visible + delayed + in_flight, delayed), (1, 1), "one fresh, delayed message");
    assert_eq!(fixtures::snapshot(&env, &key).await?.exec.status, ExecStatus::Ready);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_tenant_limit_spreads_its_gate_over_shards_and_admits_exactly_the_limit() -> anyhow::Result<()>
{
    // GIVEN a tenant limited to 45 running executions: its gate is three items (≤ 20 entries
    // each, quotas 15 + 15 + 15), each its own partition
    let env = TestEnv::new("gate-shards").await?;
    let gate = TenantGate::new(env.clients.ddb.clone(), env.cfg.executions_table.clone());
    let limit = 45;
    assert_eq!(sundial_core::execution::policy::gate_shards(limit), 3);

    // WHEN 46 executions try to join
    let mut shards_used = std::collections::BTreeMap::<u32, u32>::new();
    for i in 0..45 {
        match gate
            .acquire(
                &gate_key("acme", &format!("j{i}")),
                &gate_key("acme", &format!("j{i}")).id(),
                limit,
                T0 + 60_000,
                MARGIN,
                T0,
            )
            .await?
        {
            Seat::Admitted { shard } => *shards_used.entry(shard).or_default() += 1,
            Seat::Full { .. } => panic!("execution {i} refused below the limit"),
        }
    }
    let last = gate_key("acme", "j45");
    let refused = gate.acquire(&last, &last.id(), limit, T0 + 60_000, MARGIN, T0).await?;

    // THEN exactly 45 got in, spread over the three shards, and the 46th waits
    assert_eq!(shards_used, std::collections::BTreeMap::from([(0, 15), (1, 15), (2, 15)]));
    assert!(matches!(refused, Seat::Full { .. }), "{refused:?}");
    assert_eq!(gate.running("acme", limit, T0).await?.len(), 45);
    // AND once one leaves (from its shard), the 46th is admitted
    let first = gate_key("acme", "j0");
    let shard_of_first = (0..3).find(|s| shard_holds(&env, *s, &first.id())).expect("j0 is in some shard");
    gate.release(&first, &first.id(), shard_of_first).await?;
    assert!(matches!(
        gate.acquire(&last, &last.id(), limit, T0 + 60_000, MARGIN, T0).await?,
        Seat::Admitted { .. }
    ));
    assert_eq!(gate.running("acme", limit, T0).await?.len(), 45);
    env.cleanup().await;
    Ok(())
}

/// Whether shard `shard` of acme's gate holds `id` (a blocking read for a `find` closure).
fn shard_holds(env: &TestEnv, shard: u32, id: &str) -> bool {
    let (ddb, table) = (env.clients.ddb.clone(), env.cfg.executions_table.clone());
    let id = id.to_string();
    tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(async move {
            slots::get_running(&ddb, &table, "acme", shard)
                .await
                .map(|s| s.leases.contains_key(&id))
                .unwrap_or(false)
        })
    })
}
