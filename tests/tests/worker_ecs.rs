//! The ECS worker: a process killed with SIGKILL mid-run is taken over and the execution
//! finishes once; SIGTERM releases what it holds (with its checkpoint) for another worker;
//! receives never exceed free slots; visibility is extended while a run outlasts it.

use chrono::Utc;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sundial_core::execution::target::in_process::{BoxFuture, Handler, HandlerContext, Handlers, Sleep};
use sundial_model::retry::RunError;
use sundial_model::{ExecStatus, Target};
use sundial_tests::fixtures::{self, Reply, WebhookServer};
use sundial_tests::TestEnv;
use tokio::sync::Notify;

const WITHIN: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_run_is_taken_over_and_the_execution_finishes_once() -> anyhow::Result<()> {
    // GIVEN a webhook that never answers its first request, and a due execution targeting it
    let env = TestEnv::new("ecs-kill").await?;
    let never = Arc::new(Notify::new());
    let hook = WebhookServer::start(vec![Reply::Hold(never.clone())]).await?;
    let key = fixtures::create_ready(
        &env,
        "acme",
        "killme",
        fixtures::http_definition(&hook.url("/run")),
        Utc::now(),
    )
    .await?;

    // WHEN the worker-ecs process (2 s leases) starts it and is killed with SIGKILL mid-run
    let mut victim = fixtures::spawn_worker_ecs(&env, &[("SUNDIAL_WORKER_ID", "victim")]).await?;
    let first = hook.wait_requests(1, WITHIN).await?;
    assert_eq!(first[0].token, 1);
    victim.start_kill()?; // SIGKILL
    let status = victim.wait().await?;
    assert!(!status.success(), "the worker was killed, not stopped: {status:?}");

    // AND another worker polls the pool
    let (rescuer, metrics) = fixtures::worker_with(&env, fixtures::settings("rescuer"), Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller(rescuer, 2);
    let s = fixtures::wait_for(&env, &key, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN the rescuer took it over with token 2 and it SUCCEEDED exactly once
    assert_eq!((s.exec.status, s.exec.fencing_token, s.exec.attempt), (ExecStatus::Succeeded, 2, 2));
    let tl: Vec<(Option<ExecStatus>, ExecStatus, &str, u64)> =
        s.exec.timeline.iter().map(|a| (a.from, a.to, a.actor.as_str(), a.token)).collect();
    use ExecStatus::*;
    assert_eq!(
        tl,
        vec![
            (None, Ready, "tick:test", 0),
            (Some(Ready), Running, "worker:victim", 1),
            (Some(Running), Running, "worker:rescuer", 2),
            (Some(Running), Succeeded, "worker:rescuer", 2),
        ]
    );
    let tokens: Vec<u64> = hook.received().iter().map(|r| r.token).collect();
    assert_eq!(tokens, vec![1, 2], "the killed attempt and the takeover, nothing more");
    assert_eq!(metrics.records().iter().map(|m| m.takeovers).sum::<u64>(), 1);
    assert!(fixtures::receive(&env, env.queue_url("default"), 30).await?.is_empty(), "message deleted");
    never.notify_waiters();
    env.cleanup().await;
    Ok(())
}

/// Records where each attempt resumed from, then behaves like [`Sleep`].
#[derive(Clone, Default)]
struct Resume {
    seen: Arc<Mutex<Vec<Option<serde_json::Value>>>>,
}

impl Handler for Resume {
    fn run(&self, ctx: HandlerContext) -> BoxFuture<'_, Result<(), RunError>> {
        if let Ok(mut s) = self.seen.lock() {
            s.push(ctx.resumed_from.clone());
        }
        Sleep.run(ctx)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_releases_the_running_execution_and_the_next_worker_resumes_from_its_checkpoint(
) -> anyhow::Result<()> {
    // GIVEN a long in-process `sleep` job (3 s, a checkpoint every 100 ms) running in worker-ecs
    // with a 300 ms shutdown grace
    let env = TestEnv::new("ecs-term").await?;
    let mut def = fixtures::definition(Target::in_process("sleep"));
    def.params = serde_json::json!({"ms": 3000, "stepMs": 100});
    let key = fixtures::create_ready(&env, "acme", "long", def, Utc::now()).await?;
    let mut w = fixtures::spawn_worker_ecs(
        &env,
        &[("SUNDIAL_WORKER_ID", "leaving"), ("SUNDIAL_SHUTDOWN_GRACE_SECS", "0")],
    )
    .await?;
    let running = fixtures::wait_for(&env, &key, WITHIN, |s| s.checkpoint.is_some()).await?;
    assert_eq!(running.exec.lease_owner.as_deref(), Some("leaving"));

    // WHEN ECS stops the task (SIGTERM)
    let pid = w.id().unwrap_or_default();
    std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status()?;
    let status = w.wait().await?;

    // THEN the process exits cleanly, leaving the execution RUNNING with its lease released
    assert!(status.success(), "{status:?}");
    let released = fixtures::snapshot(&env, &key).await?;
    assert_eq!((released.exec.status, released.exec.lease_until), (ExecStatus::Running, Some(0)));
    let done_ms = released.checkpoint.as_ref().and_then(|c| c["doneMs"].as_u64()).unwrap_or(0);
    assert!(done_ms > 0 && done_ms < 3000, "{done_ms}");

    // AND another worker takes it over at once and resumes from the committed checkpoint
    let resume = Resume::default();
    let (next, _) = fixtures::worker_with(
        &env,
        fixtures::settings("next"),
        Handlers::new().with("sleep", resume.clone()),
    )?;
    let (stop, poller) = fixtures::spawn_poller(next, 2);
    let s = fixtures::wait_for(&env, &key, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;
    assert_eq!((s.exec.status, s.exec.fencing_token), (ExecStatus::Succeeded, 2));
    let seen = resume.seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(seen.len(), 1);
    let resumed_at = seen[0].as_ref().and_then(|c| c["doneMs"].as_u64()).unwrap_or(0);
    assert!(resumed_at >= done_ms, "resumed from {resumed_at}, the released checkpoint said {done_ms}");
    assert_eq!(s.checkpoint, Some(serde_json::json!({"doneMs": 3000})));
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_takes_only_as_many_messages_as_it_has_slots_and_extends_visibility() -> anyhow::Result<()> {
    // GIVEN five due executions whose webhook takes longer than one visibility timeout (4 s vs 3 s)
    let env = TestEnv::new("ecs-slots").await?;
    let hook =
        WebhookServer::start((0..5).map(|_| Reply::After(Duration::from_secs(4), 200)).collect()).await?;
    let now = Utc::now();
    let mut keys = Vec::new();
    for i in 0..5 {
        keys.push(
            fixtures::create_ready(
                &env,
                "acme",
                &format!("slow{i}"),
                fixtures::http_definition(&hook.url("/run")),
                now,
            )
            .await?,
        );
    }

    // WHEN two workers with two slots each poll the pool
    let (a, _) = fixtures::worker_with(&env, fixtures::settings("slots-a"), Handlers::new())?;
    let (b, _) = fixtures::worker_with(&env, fixtures::settings("slots-b"), Handlers::new())?;
    let (stop_a, pa) = fixtures::spawn_poller(a, 2);
    let (stop_b, pb) = fixtures::spawn_poller(b, 2);
    for k in &keys {
        fixtures::wait_for(&env, k, WITHIN, |s| s.exec.status.is_terminal()).await?;
    }
    stop_a.cancel();
    stop_b.cancel();
    let (sa, sb) = (pa.await??, pb.await??);

    // THEN at most four requests were ever in flight, each execution ran exactly once (no message
    // reappeared while its run outlasted the visibility timeout), and all succeeded
    assert!(hook.max_in_flight() <= 4, "{} in flight with 4 slots", hook.max_in_flight());
    assert_eq!(hook.received().len(), 5);
    for k in &keys {
        let s = fixtures::snapshot(&env, k).await?;
        assert_eq!((s.exec.status, s.exec.fencing_token), (ExecStatus::Succeeded, 1), "{}", k.id());
    }
    let received = sa.received.load(std::sync::atomic::Ordering::Relaxed)
        + sb.received.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(received, 5, "no message was delivered twice");
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shipped_ecs_worker_runs_no_diagnostic_handler_unless_the_operator_opts_in() -> anyhow::Result<()>
{
    // Security review 2026-12 H2: the shipped image registered `sleep` (a slot held up to 12 h)
    // and `count` (100,000 children a fire) for every tenant.
    // GIVEN jobs naming the diagnostic handlers
    let env = TestEnv::new("ecs-diag").await?;
    let mut sleep = fixtures::definition(Target::in_process("sleep"));
    sleep.params = serde_json::json!({"ms": 10});
    let k_sleep = fixtures::create_ready(&env, "acme", "sleep", sleep, Utc::now()).await?;
    let mut count = fixtures::definition(Target::in_process("count"));
    count.map_reduce = Some(Default::default());
    count.params = serde_json::json!({"items": 3, "batch": 3});
    let k_count = fixtures::create_ready(&env, "acme", "count", count, Utc::now()).await?;

    // WHEN the worker-ecs binary runs them as shipped (SUNDIAL_DIAGNOSTIC_HANDLERS unset: empty)
    let mut w = fixtures::spawn_worker_ecs(
        &env,
        &[("SUNDIAL_WORKER_ID", "shipped"), ("SUNDIAL_DIAGNOSTIC_HANDLERS", "")],
    )
    .await?;
    let s_sleep = fixtures::wait_for(&env, &k_sleep, WITHIN, |s| s.exec.status.is_terminal()).await;
    let s_count = fixtures::wait_for(&env, &k_count, WITHIN, |s| s.exec.status.is_terminal()).await;
    w.kill().await?;

    // THEN neither handler exists there: both FAILED with UnknownHandler, nothing ran
    for s in [s_sleep?, s_count?] {
        assert_eq!(s.exec.status, ExecStatus::Failed, "{}: {:?}", s.exec.job_id, s.exec.last_error);
        assert_eq!(s.exec.last_error.map(|e| e.0), Some("UnknownHandler".into()));
    }
    env.cleanup().await;
    Ok(())
}
