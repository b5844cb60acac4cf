//! The worker's Lambda entry point: SQS event in, partial batch response out. In process (the
//! handler function itself) and as the real binary under `cargo lambda watch`.

use aws_sdk_lambda::primitives::Blob;
use chrono::{Duration as CDuration, Utc};
use std::collections::BTreeSet;
use std::time::Duration;
use sundial_core::execution::target::in_process::{BoxFuture, Handler, HandlerContext, Handlers};
use sundial_model::retry::RunError;
use sundial_model::{ExecStatus, Target};
use sundial_tests::fixtures::{self, Reply, WebhookServer};
use sundial_tests::lambda_watch::LambdaWatch;
use sundial_tests::TestEnv;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_keeps_only_the_messages_that_must_come_back() -> anyhow::Result<()> {
    // GIVEN three executions: one whose webhook succeeds, one whose webhook answers 503, and one
    // not due for another minute
    let env = TestEnv::new("lambda-batch").await?;
    let ok = WebhookServer::start(vec![]).await?;
    let busy = WebhookServer::start(vec![Reply::Status(503)]).await?;
    let now = Utc::now();
    let k_ok =
        fixtures::create_ready(&env, "acme", "ok", fixtures::http_definition(&ok.url("/run")), now).await?;
    let k_busy =
        fixtures::create_ready(&env, "acme", "busy", fixtures::http_definition(&busy.url("/run")), now)
            .await?;
    let later = fixtures::ready_execution(
        "acme",
        "later",
        fixtures::http_definition(&ok.url("/later")),
        now + CDuration::seconds(60),
        now,
    );
    let k_later = fixtures::put_execution(&env, &later).await?;
    fixtures::enqueue(&env, &later, 0).await?; // delivered early on purpose
    let msgs = fixtures::receive_n(&env, "default", 3, 30, Duration::from_secs(10)).await?;
    let event = fixtures::sqs_event(&env, "default", &msgs)?;
    let id_of = |job: &str| fixtures::message_id_of(&msgs, job);

    // WHEN the Lambda handler runs the batch
    let (worker, metrics) = fixtures::worker_with(&env, fixtures::settings("lambda-1"), Handlers::new())?;
    let resp = sundial_worker::lambda::handle_event(&worker, event, &CancellationToken::new()).await;

    // THEN no message is reported as a failure: the retrying and the not-yet-due ones were
    // replaced by fresh copies delayed until they can run (a wait never counts toward the DLQ)
    let kept: BTreeSet<String> = resp.batch_item_failures.iter().map(|f| f.item_identifier.clone()).collect();
    assert_eq!(kept, BTreeSet::new());
    assert_eq!(sundial_tests::trigger::queue_counts(&env, "default").await?.1, 2, "two delayed fresh copies");
    // AND the executions are SUCCEEDED, RETRY_WAIT (first attempt) and still READY
    assert_eq!(fixtures::snapshot(&env, &k_ok).await?.exec.status, ExecStatus::Succeeded);
    let b = fixtures::snapshot(&env, &k_busy).await?;
    assert_eq!((b.exec.status, b.exec.attempt), (ExecStatus::RetryWait, 1));
    assert_eq!(b.exec.last_error.map(|e| e.0), Some("Http503".to_string()));
    assert_eq!(fixtures::snapshot(&env, &k_later).await?.exec.status, ExecStatus::Ready);
    // AND the webhook got the idempotency key and the fencing token
    let r = ok.received();
    assert_eq!(
        (r.len(), r[0].idempotency_key.as_str(), r[0].token, r[0].attempt),
        (1, k_ok.global_id().as_str(), 1, 1)
    );
    assert_eq!(r[0].body["executionId"], k_ok.global_id());
    // AND the retry comes back, on a fresh message, once its backoff is over
    let back = fixtures::receive_n(&env, "default", 1, 30, Duration::from_secs(10)).await?;
    assert!(back[0].body().unwrap_or_default().contains("\"busy\""), "{back:?}");
    assert_ne!(back[0].message_id.clone().unwrap_or_default(), id_of("busy"));
    let m = metrics.records();
    assert_eq!(m.iter().filter(|r| r.outcome == Some(ExecStatus::Succeeded)).count(), 1);
    assert_eq!(m.iter().map(|r| r.retries).sum::<u64>(), 1);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_message_delivered_twice_in_one_batch_runs_once() -> anyhow::Result<()> {
    // GIVEN one due execution whose message SQS delivers twice (two receipt handles)
    let env = TestEnv::new("lambda-dup").await?;
    let hook = WebhookServer::start(vec![Reply::After(Duration::from_millis(300), 200)]).await?;
    let key =
        fixtures::create_ready(&env, "acme", "dup", fixtures::http_definition(&hook.url("/run")), Utc::now())
            .await?;
    let first = fixtures::receive_n(&env, "default", 1, 0, Duration::from_secs(10)).await?;
    let second = fixtures::receive_n(&env, "default", 1, 30, Duration::from_secs(10)).await?;
    assert_eq!(first[0].message_id, second[0].message_id);
    let event = fixtures::sqs_event(&env, "default", &[first[0].clone(), second[0].clone()])?;

    // WHEN one Lambda invocation handles both copies concurrently
    let (worker, _) = fixtures::worker_with(&env, fixtures::settings("lambda-dup"), Handlers::new())?;
    sundial_worker::lambda::handle_event(&worker, event, &CancellationToken::new()).await;

    // THEN the webhook ran once and the execution has one claim and one success
    assert_eq!(hook.received().len(), 1);
    let s = fixtures::snapshot(&env, &key).await?;
    assert_eq!(s.exec.status, ExecStatus::Succeeded);
    assert_eq!(s.exec.timeline.iter().filter(|a| a.to == ExecStatus::Running).count(), 1);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_binary_answers_an_sqs_event_under_cargo_lambda_watch() -> anyhow::Result<()> {
    // GIVEN a due execution with a webhook target, and the `worker` binary under cargo lambda watch
    let env = TestEnv::new("lambda-watch").await?;
    let hook = WebhookServer::start(vec![]).await?;
    let key = fixtures::create_ready(
        &env,
        "acme",
        "watched",
        fixtures::http_definition(&hook.url("/run")),
        Utc::now(),
    )
    .await?;
    let msgs = fixtures::receive_n(&env, "default", 1, 60, Duration::from_secs(10)).await?;
    let fn_env = fixtures::function_env(
        &env,
        &[("SUNDIAL_DEV_LOOPBACK_TARGETS", "true"), ("SUNDIAL_WORKER_ID", "watch-1")],
    );
    let watch = LambdaWatch::start("sundial-worker", &fn_env).await?;

    // WHEN the event source mapping's SQS event is invoked
    let event = fixtures::sqs_event_json(&env, "default", &msgs);
    let out = watch
        .client()
        .invoke()
        .function_name("worker")
        .payload(Blob::new(serde_json::to_vec(&event)?))
        .send()
        .await?;
    let payload = out.payload().map(|p| String::from_utf8_lossy(p.as_ref()).into_owned()).unwrap_or_default();
    assert!(out.function_error().is_none(), "worker failed: {payload}");

    // THEN the partial batch response keeps nothing, the webhook ran once, and the execution
    // SUCCEEDED under the function's worker id
    let resp: serde_json::Value = serde_json::from_str(&payload)?;
    assert_eq!(resp["batchItemFailures"], serde_json::json!([]), "{payload}");
    assert_eq!(hook.received().len(), 1);
    let s = fixtures::snapshot(&env, &key).await?;
    assert_eq!(s.exec.status, ExecStatus::Succeeded);
    assert!(s.exec.timeline.iter().any(|a| a.actor == "worker:watch-1"), "{:?}", s.exec.timeline);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lambda_targets_succeed_retry_and_fail_by_error_type() -> anyhow::Result<()> {
    // GIVEN the test function under cargo lambda watch, and three jobs invoking it: one that
    // succeeds, one that fails with errorType NonRetryable, one that fails retryably until its
    // third attempt
    let env = TestEnv::new("lambda-target").await?;
    fixtures::tenant_function(&env, "sundial-testfn", "acme").await?;
    let watch = LambdaWatch::start("sundial-testfn", &[]).await?;
    watch.warm_up("sundial-testfn").await?;
    let def = |params: serde_json::Value| {
        let mut d = fixtures::definition(sundial_model::Target::lambda("sundial-testfn"));
        d.params = params;
        d
    };
    let now = Utc::now();
    let k_ok =
        fixtures::create_ready(&env, "acme", "fn-ok", def(serde_json::json!({"mode": "ok"})), now).await?;
    let k_perm = fixtures::create_ready(
        &env,
        "acme",
        "fn-perm",
        def(serde_json::json!({"mode": "non_retryable"})),
        now,
    )
    .await?;
    let k_flaky = fixtures::create_ready(
        &env,
        "acme",
        "fn-flaky",
        def(serde_json::json!({"failUntilAttempt": 3})),
        now,
    )
    .await?;

    // WHEN a worker whose Lambda client invokes through the watch runs them
    let mut clients = env.clients.clone();
    clients.lambda = watch.client_beside(&env.clients.lambda);
    let (worker, _) =
        fixtures::worker_with_clients(&env, fixtures::settings("fn-1"), Handlers::new(), &clients)?;
    let (stop, poller) = fixtures::spawn_poller(worker, 3);
    let within = Duration::from_secs(120);
    let ok = fixtures::wait_for(&env, &k_ok, within, |s| s.exec.status.is_terminal()).await?;
    let perm = fixtures::wait_for(&env, &k_perm, within, |s| s.exec.status.is_terminal()).await?;
    let flaky = fixtures::wait_for(&env, &k_flaky, within, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN: SUCCEEDED at once; FAILED after one attempt (a business error is never retried);
    // SUCCEEDED on attempt 3 after two retryable function errors
    assert_eq!((ok.exec.status, ok.exec.attempt), (ExecStatus::Succeeded, 1));
    assert_eq!((perm.exec.status, perm.exec.attempt), (ExecStatus::Failed, 1));
    assert_eq!(perm.exec.last_error.map(|e| e.0), Some("NonRetryable.Validation".into()));
    assert_eq!((flaky.exec.status, flaky.exec.attempt), (ExecStatus::Succeeded, 3));
    let retry_codes: Vec<_> = flaky
        .exec
        .timeline
        .iter()
        .filter(|a| a.to == ExecStatus::RetryWait)
        .map(|a| a.code.clone())
        .collect();
    assert_eq!(retry_codes, vec![Some("Transient".to_string()), Some("Transient".to_string())]);
    env.cleanup().await;
    Ok(())
}

/// An in-process handler that panics (a bug in job code, an `unwrap` on bad input).
struct Panics;

impl Handler for Panics {
    fn run(&self, _ctx: HandlerContext) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(async { panic!("a bug in the job's handler") })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_whose_handling_panics_is_kept_not_deleted() -> anyhow::Result<()> {
    // GIVEN two due executions in one batch: one whose in-process handler panics, one whose
    // webhook succeeds
    let env = TestEnv::new("lambda-panic").await?;
    let ok = WebhookServer::start(vec![]).await?;
    let now = Utc::now();
    let boom = fixtures::definition(Target::in_process("boom"));
    let k_boom = fixtures::create_ready(&env, "acme", "boom", boom, now).await?;
    let k_ok =
        fixtures::create_ready(&env, "acme", "fine", fixtures::http_definition(&ok.url("/run")), now).await?;
    let msgs = fixtures::receive_n(&env, "default", 2, 30, Duration::from_secs(10)).await?;
    let event = fixtures::sqs_event(&env, "default", &msgs)?;
    let id_of = |job: &str| fixtures::message_id_of(&msgs, job);

    // WHEN the Lambda handler runs the batch
    let handlers = Handlers::new().with("boom", Panics);
    let (worker, _) = fixtures::worker_with(&env, fixtures::settings("lambda-panic"), handlers)?;
    let resp = sundial_worker::lambda::handle_event(&worker, event, &CancellationToken::new()).await;

    // THEN the panicking record is reported as a failure, so the event source mapping keeps its
    // message and the execution (left RUNNING under a lease) is taken over once the lease ends;
    // the other record still succeeds and is deleted
    let kept: BTreeSet<String> = resp.batch_item_failures.iter().map(|f| f.item_identifier.clone()).collect();
    assert_eq!(kept, BTreeSet::from([id_of("boom")]));
    assert_eq!(fixtures::snapshot(&env, &k_boom).await?.exec.status, ExecStatus::Running);
    assert_eq!(fixtures::snapshot(&env, &k_ok).await?.exec.status, ExecStatus::Succeeded);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_queue_record_is_delivered_and_a_refused_one_requeued_with_its_count(
) -> anyhow::Result<()> {
    // GIVEN two outcome notifications on the default pool's notification queue: one to a
    // receiver that answers 200, one to a receiver that answers 500
    let env = TestEnv::new("lambda-notify").await?;
    let ok = WebhookServer::start(vec![]).await?;
    let refusing = WebhookServer::start(vec![Reply::Status(500)]).await?;
    let url = env.queues["default"].notify_url.clone();
    for (job, hook) in [("ok", &ok), ("refused", &refusing)] {
        let msg = sundial_model::outcome::NotifyMessage {
            tenant: "acme".into(),
            job_id: job.into(),
            scheduled_ms: 1_796_000_000_000,
            kind: sundial_model::outcome::OutcomeKind::ExecutionDead,
            event_id: format!("acme/{job}@1796000000000/ExecutionDead#1##"),
            to: sundial_model::outcome::OutcomeNotify {
                url: hook.url("/outcomes"),
                signing_secret_arn: None,
            },
            body: serde_json::json!({"detailType": "ExecutionDead", "jobId": job}).to_string(),
            failures: 0,
        };
        let body = serde_json::to_string(&msg)?;
        env.clients.sqs.send_message().queue_url(&url).message_body(body).send().await?;
    }
    let mut msgs = Vec::new();
    while msgs.len() < 2 {
        msgs.extend(fixtures::receive(&env, &url, 30).await?);
    }
    // WHEN the worker function gets them as a batch of the notification queue's event source
    let mut json = fixtures::sqs_event_json(&env, "default", &msgs);
    for r in json["Records"].as_array_mut().into_iter().flatten() {
        r["eventSourceARN"] = env.queues["default"].notify_arn.clone().into();
    }
    let event = serde_json::from_value(json)?;
    let (worker, _) = fixtures::worker_with(&env, fixtures::settings("lambda-n"), Handlers::new())?;
    let resp = sundial_worker::lambda::handle_event(&worker, event, &CancellationToken::new()).await;

    // THEN neither record is kept: one delivered, with its event id as webhook-id; the refused
    // one replaced by a copy with one failure counted (at once: the tests' retry base is 0)
    assert!(resp.batch_item_failures.is_empty(), "{:?}", resp.batch_item_failures);
    let got = ok.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].header("webhook-id"), "acme/ok@1796000000000/ExecutionDead#1##");
    assert_eq!(refusing.received().len(), 1);
    let again = fixtures::receive(&env, &url, 30).await?;
    assert_eq!(again.len(), 1, "{again:?}");
    let next: sundial_model::outcome::NotifyMessage =
        serde_json::from_str(again[0].body().unwrap_or_default())?;
    assert_eq!((next.job_id.as_str(), next.failures), ("refused", 1));
    env.cleanup().await;
    Ok(())
}
