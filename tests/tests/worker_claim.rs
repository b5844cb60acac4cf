//! Claim / heartbeat / finish as conditional writes against the emulator: the happy path, a
//! claim race, and the zombie worker of docs/execution.md §1 (pause past the lease, takeover,
//! wake-up).

use chrono::{Duration as CDuration, Utc};
use std::sync::Arc;
use sundial_core::execution::clock::Clock;
use sundial_core::execution::target::in_process::{BoxFuture, Handler, HandlerContext, Handlers};
use sundial_model::claim::{Finish, LeaseTerms};
use sundial_model::retry::RunError;
use sundial_model::{ExecStatus, Target};
use sundial_store::executions::{CheckpointError, ClaimOutcome, FinishResult, Heartbeat};
use sundial_tests::clock::ManualClock;
use sundial_tests::fixtures::{self, FencedResource};
use sundial_tests::TestEnv;

const TERMS: LeaseTerms = LeaseTerms { duration_ms: 1_000, skew_margin_ms: 100, may_take_over: true };

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claim_heartbeat_finish_is_one_write_each_and_audited() -> anyhow::Result<()> {
    // GIVEN a READY execution that is due
    let env = TestEnv::new("claim-happy").await?;
    let now = Utc::now();
    let e =
        fixtures::ready_execution("acme", "report", fixtures::http_definition("https://x.example"), now, now);
    let key = fixtures::put_execution(&env, &e).await?;
    let store = fixtures::store(&env);

    // WHEN worker A claims it
    let ClaimOutcome::Claimed(c) = store.claim(&key, "A", &TERMS, Utc::now()).await? else {
        anyhow::bail!("A could not claim a due READY execution")
    };
    // THEN it is RUNNING with token 1, attempt 1, owned by A
    assert_eq!((c.fence.token, c.fence.attempt, c.from, c.takeover), (1, 1, ExecStatus::Ready, false));
    assert_eq!(c.snapshot.exec.status, ExecStatus::Running);
    // AND B cannot claim it while the lease is live
    assert!(matches!(store.claim(&key, "B", &TERMS, Utc::now()).await?, ClaimOutcome::Held { .. }));
    // AND A's heartbeat extends the lease; B's forged one (same token, other owner) does not
    let lu = Utc::now().timestamp_millis() + 5_000;
    assert_eq!(store.heartbeat(&key, &c.fence, lu).await?, Heartbeat::Extended { cancel_requested: false });
    let forged = sundial_model::claim::Fence { owner: "B".into(), ..c.fence.clone() };
    assert_eq!(store.heartbeat(&key, &forged, lu).await?, Heartbeat::Lost);

    // WHEN A finishes SUCCEEDED
    assert_eq!(store.finish(&key, &c.fence, &Finish::Succeeded, Utc::now()).await?, FinishResult::Done);

    // THEN the timeline holds creation, claim and success with actors, tokens and attempts
    let s = fixtures::snapshot(&env, &key).await?;
    assert_eq!(s.exec.status, ExecStatus::Succeeded);
    let tl: Vec<_> =
        s.exec.timeline.iter().map(|a| (a.from, a.to, a.token, a.attempt, a.actor.as_str())).collect();
    assert_eq!(
        tl,
        vec![
            (None, ExecStatus::Ready, 0, 0, "tick:test"),
            (Some(ExecStatus::Ready), ExecStatus::Running, 1, 1, "worker:A"),
            (Some(ExecStatus::Running), ExecStatus::Succeeded, 1, 1, "worker:A"),
        ]
    );
    assert_eq!(s.exec.lease_until, None, "the lease is cleared");
    // AND the happy path stays one write unit per transition: the item is under 1 KiB
    let raw = env
        .clients
        .ddb
        .get_item()
        .table_name(&env.cfg.executions_table)
        .key("pk", aws_sdk_dynamodb::types::AttributeValue::S(key.pk()))
        .key("sk", aws_sdk_dynamodb::types::AttributeValue::S(key.sk()))
        .send()
        .await?
        .item
        .unwrap_or_default();
    let size: usize = raw.iter().map(|(k, v)| k.len() + av_size(v)).sum();
    assert!(size < 1024, "execution item is {size} bytes");
    // AND a late claim finds it final
    assert_eq!(
        store.claim(&key, "B", &TERMS, Utc::now()).await?,
        ClaimOutcome::Finished(ExecStatus::Succeeded)
    );
    env.cleanup().await;
    Ok(())
}

fn av_size(v: &aws_sdk_dynamodb::types::AttributeValue) -> usize {
    use aws_sdk_dynamodb::types::AttributeValue as A;
    match v {
        A::S(s) => s.len(),
        A::N(n) => n.len().div_ceil(2) + 1,
        A::Bool(_) | A::Null(_) => 1,
        A::L(l) => 3 + l.iter().map(|x| 1 + av_size(x)).sum::<usize>(),
        A::M(m) => 3 + m.iter().map(|(k, x)| 1 + k.len() + av_size(x)).sum::<usize>(),
        _ => 0,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_workers_racing_one_claim_make_one_owner() -> anyhow::Result<()> {
    // GIVEN one due execution and eight workers with their own clients
    let env = TestEnv::new("claim-race").await?;
    let now = Utc::now();
    let e =
        fixtures::ready_execution("acme", "race", fixtures::http_definition("https://x.example"), now, now);
    let key = fixtures::put_execution(&env, &e).await?;

    // WHEN they all claim at once
    let mut tasks = Vec::new();
    for i in 0..8 {
        let store = sundial_store::executions::ExecStore::new(
            sundial_tests::clients().ddb,
            env.cfg.executions_table.clone(),
        );
        let key = key.clone();
        tasks
            .push(tokio::spawn(async move { store.claim(&key, &format!("w{i}"), &TERMS, Utc::now()).await }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        if let ClaimOutcome::Claimed(c) = t.await?? {
            winners.push(c.fence);
        }
    }

    // THEN exactly one holds it, with token 1
    assert_eq!(winners.len(), 1, "{winners:?}");
    assert_eq!(winners[0].token, 1);
    let s = fixtures::snapshot(&env, &key).await?;
    assert_eq!(s.exec.timeline.len(), 2, "one claim event: {:?}", s.exec.timeline);
    env.cleanup().await;
    Ok(())
}

/// An in-process handler that writes a fenced resource with its token, checkpoints, and
/// succeeds.
struct WriteResource {
    res: Arc<FencedResource>,
    value: &'static str,
}

impl Handler for WriteResource {
    fn run(&self, ctx: HandlerContext) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(async move {
            let tok = ctx.invocation.fencing_token;
            let ok = self
                .res
                .write(tok, self.value)
                .await
                .map_err(|e| RunError::retryable("Resource", e.to_string()))?;
            if !ok {
                return Err(RunError::retryable("StaleToken", "resource refused the token"));
            }
            ctx.checkpoint(serde_json::json!({"written": self.value}))
                .await
                .map_err(|e| RunError::retryable("Checkpoint", e.to_string()))?;
            Ok(())
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zombie_worker_is_fenced_out_and_the_resource_keeps_the_new_owners_write() -> anyhow::Result<()> {
    // GIVEN a due in-process execution and a resource protected by fencing tokens, and a clock
    // that starts 1.5 s back: advanced past A's lease it reads about now, so B's clock agrees
    // with the emulator's `Date` header and B may take the lease over
    let env = TestEnv::new("zombie").await?;
    let clock = Arc::new(ManualClock::new(Utc::now() - CDuration::milliseconds(1_500)));
    let now = clock.now();
    let def = fixtures::definition(Target::in_process("write"));
    let e = fixtures::ready_execution("acme", "nightly", def, now - CDuration::seconds(1), now);
    let key = fixtures::put_execution(&env, &e).await?;
    let resource = Arc::new(FencedResource::new(&env, "report-output"));
    let store = fixtures::store(&env);

    // WHEN worker A claims it (1 s lease) and then pauses (a long GC, SIGSTOP) past its lease
    let ClaimOutcome::Claimed(a) = store.claim(&key, "A", &TERMS, clock.now()).await? else {
        anyhow::bail!("A could not claim")
    };
    assert_eq!(a.fence.token, 1);
    clock.advance(CDuration::milliseconds(1_500));

    // AND worker B, through the full worker path, takes it over and runs the handler
    let handlers =
        Handlers::new().with("write", WriteResource { res: resource.clone(), value: "B's report" });
    let (b, metrics) = fixtures::worker_with_clock(&env, fixtures::settings("B"), handlers, clock.clone())?;
    let body = serde_json::to_string(&fixtures::message_of(&e, now))?;
    let d = b
        .handle(
            "default",
            &body,
            &sundial_core::execution::worker::NoExtend,
            &tokio_util::sync::CancellationToken::new(),
        )
        .await;
    assert_eq!(d, sundial_core::execution::worker::Disposition::Delete);
    let s = fixtures::snapshot(&env, &key).await?;
    assert_eq!((s.exec.status, s.exec.fencing_token), (ExecStatus::Succeeded, 2), "B took over with token 2");
    assert_eq!(metrics.records()[0].takeovers, 1, "the takeover is counted");

    // AND A wakes up and tries to publish its work
    let a_resource = resource.write(a.fence.token, "A's report").await?;
    let a_checkpoint =
        store.checkpoint(&key, &a.fence, &serde_json::json!({"written": "A"}), clock.now_ms() + 1_000).await;
    let a_finish = store.finish(&key, &a.fence, &Finish::Succeeded, clock.now()).await?;

    // THEN A's resource write, checkpoint and finish are all refused
    assert!(!a_resource, "the resource accepted a stale token");
    assert!(matches!(a_checkpoint, Err(CheckpointError::Stale { token: 1, .. })), "{a_checkpoint:?}");
    assert_eq!(a_finish, FinishResult::TakenOver { status: Some(ExecStatus::Succeeded), token: Some(2) },);
    // AND the resource and the checkpoint keep B's write
    assert_eq!(resource.read().await?, Some(("B's report".to_string(), 2)));
    let s = fixtures::snapshot(&env, &key).await?;
    assert_eq!(s.checkpoint, Some(serde_json::json!({"written": "B's report"})));
    // AND the timeline records the takeover by B, and exactly one success
    let takeover =
        s.exec.timeline.iter().find(|a| a.from == Some(ExecStatus::Running) && a.to == ExecStatus::Running);
    assert_eq!(
        takeover.map(|a| (a.actor.as_str(), a.token, a.code.as_deref())),
        Some(("worker:B", 2, Some("LeaseExpired")))
    );
    assert_eq!(s.exec.timeline.iter().filter(|a| a.to == ExecStatus::Succeeded).count(), 1);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_clock_runs_fast_does_not_take_over_a_live_lease() -> anyhow::Result<()> {
    // GIVEN worker A holds a 2 s lease on a due execution
    let env = TestEnv::new("clock-skew").await?;
    let now = Utc::now();
    let e =
        fixtures::ready_execution("acme", "skew", fixtures::http_definition("https://x.example"), now, now);
    let key = fixtures::put_execution(&env, &e).await?;
    let terms = LeaseTerms { duration_ms: 2_000, skew_margin_ms: 200, may_take_over: true };
    let ClaimOutcome::Claimed(_) = fixtures::store(&env).claim(&key, "A", &terms, Utc::now()).await? else {
        anyhow::bail!("A could not claim")
    };

    // WHEN worker F, whose clock reads 30 s ahead (so by its clock A's lease ended long ago),
    // handles the execution's message
    let fast = Arc::new(ManualClock::new(Utc::now() + CDuration::seconds(30)));
    let (f, sink) = fixtures::worker_with_clock(&env, fixtures::settings("F"), Handlers::new(), fast)?;
    let body = serde_json::to_string(&fixtures::message_of(&e, now))?;
    let d = f
        .handle(
            "default",
            &body,
            &sundial_core::execution::worker::NoExtend,
            &tokio_util::sync::CancellationToken::new(),
        )
        .await;

    // THEN the service's Date header exposed the skew, F left the lease alone, and reported it
    // (the delivered message is replaced by a fresh copy delayed to the lease's end)
    assert_eq!(d, sundial_core::execution::worker::Disposition::Delete);
    assert_eq!(sundial_tests::trigger::queue_counts(&env, "default").await?.1, 1, "a delayed fresh copy");
    let s = fixtures::snapshot(&env, &key).await?;
    assert_eq!(
        (s.exec.status, s.exec.fencing_token, s.exec.lease_owner.as_deref()),
        (ExecStatus::Running, 1, Some("A"))
    );
    assert_eq!(sink.records()[0].clock_skew, 1);
    // AND a worker with a correct clock is trusted against the same service
    let (ok, _) = fixtures::worker_with(&env, fixtures::settings("G"), Handlers::new())?;
    ok.handle(
        "default",
        &body,
        &sundial_core::execution::worker::NoExtend,
        &tokio_util::sync::CancellationToken::new(),
    )
    .await;
    assert!(ok.clock_trusted(), "{:?}", ok.clock_check());
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_clock_runs_slow_writes_leases_that_hold_by_the_services_clock() -> anyhow::Result<()>
{
    // GIVEN two due executions of a tenant limited to one running execution, a webhook that
    // holds the first request it gets, and worker S whose clock reads 30 s behind the service's
    // (the emulator's `Date` header) while worker G's is right
    let env = TestEnv::new("clock-slow").await?;
    let release = Arc::new(tokio::sync::Notify::new());
    let hook = fixtures::WebhookServer::start(vec![fixtures::Reply::Hold(release.clone())]).await?;
    let now = Utc::now();
    // Due 40 s ago, so due by S's clock too: a slow clock would otherwise just wait for the fire.
    let due = now - CDuration::seconds(40);
    let e1 = fixtures::ready_execution("acme", "first", fixtures::http_definition(&hook.url("/1")), due, now);
    let e2 =
        fixtures::ready_execution("acme", "second", fixtures::http_definition(&hook.url("/2")), due, now);
    let (k1, k2) = (fixtures::put_execution(&env, &e1).await?, fixtures::put_execution(&env, &e2).await?);
    let limited = |id: &str| -> anyhow::Result<_> {
        let mut s = fixtures::settings(id);
        // A 10 s lease: far shorter than S's 30 s error, far longer than the test's steps.
        s.lease_ms = 10_000;
        s.tenant_limits =
            sundial_core::execution::policy::TenantLimits::parse("acme=1").map_err(anyhow::Error::msg)?;
        Ok(s)
    };
    let slow = Arc::new(ManualClock::new(Utc::now() - CDuration::seconds(30)));
    let (s, _) = fixtures::worker_with_clock(&env, limited("S")?, Handlers::new(), slow)?;
    let (g, _) = fixtures::worker_with(&env, limited("G")?, Handlers::new())?;
    let body = |e| serde_json::to_string(&fixtures::message_of(e, now));
    let (b1, b2) = (body(&e1)?, body(&e2)?);
    let no_stop = tokio_util::sync::CancellationToken::new();

    // WHEN S claims the first and is running it (the webhook holds the call)
    let s_run = {
        let (s, b1, stop) = (s.clone(), b1.clone(), no_stop.clone());
        tokio::spawn(async move {
            s.handle("default", &b1, &sundial_core::execution::worker::NoExtend, &stop).await
        })
    };
    hook.wait_requests(1, std::time::Duration::from_secs(30)).await?;
    let lease_end = fixtures::snapshot(&env, &k1).await?.exec.lease_until;
    // AND G gets a duplicate delivery of the first, and the second's message
    let dup = g.handle("default", &b1, &sundial_core::execution::worker::NoExtend, &no_stop).await;
    let other = g.handle("default", &b2, &sundial_core::execution::worker::NoExtend, &no_stop).await;

    // THEN S's lease and tenant gate entry are live by the service's clock: G neither took the
    // first over (the effect would run twice) nor started the second (the tenant limit is one)
    // (each delivered message is replaced by a fresh copy, delayed until it can run)
    assert_eq!(
        dup,
        sundial_core::execution::worker::Disposition::Delete,
        "S's lease ended at {lease_end:?}, the service's clock says about {}",
        Utc::now().timestamp_millis()
    );
    assert_eq!(other, sundial_core::execution::worker::Disposition::Delete);
    assert_eq!(sundial_tests::trigger::queue_counts(&env, "default").await?.1, 2, "two delayed fresh copies");
    assert_eq!(hook.received().len(), 1, "the webhook was called again while S ran");
    let s1 = fixtures::snapshot(&env, &k1).await?;
    assert_eq!(
        (s1.exec.status, s1.exec.fencing_token, s1.exec.lease_owner.as_deref()),
        (ExecStatus::Running, 1, Some("S"))
    );
    assert_eq!(fixtures::snapshot(&env, &k2).await?.exec.status, ExecStatus::Ready);
    // AND S, released, finishes its run
    release.notify_waiters();
    assert_eq!(s_run.await?, sundial_core::execution::worker::Disposition::Delete);
    assert_eq!(fixtures::snapshot(&env, &k1).await?.exec.status, ExecStatus::Succeeded);
    env.cleanup().await;
    Ok(())
}
