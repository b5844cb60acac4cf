//! Retries (docs/execution.md §4): retryable errors back off on the same message until they
//! succeed or the budget runs out (DEAD, copied to the pool's DLQ); business errors fail at once;
//! timeouts retry. Also the webhook address policy.

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::Utc;
use std::time::Duration;
use sundial_core::execution::target::in_process::{BoxFuture, Handler, HandlerContext, Handlers};
use sundial_model::keys;
use sundial_model::retry::RunError;
use sundial_model::{ExecMessage, ExecStatus, Target};
use sundial_tests::fixtures::{self, Reply, WebhookServer};
use sundial_tests::TestEnv;

const WITHIN: Duration = Duration::from_secs(30);

async fn raw_item(
    env: &TestEnv,
    key: &sundial_store::executions::ExecKey,
) -> anyhow::Result<std::collections::HashMap<String, AttributeValue>> {
    Ok(env
        .clients
        .ddb
        .get_item()
        .table_name(&env.cfg.executions_table)
        .key("pk", AttributeValue::S(key.pk()))
        .key("sk", AttributeValue::S(key.sk()))
        .consistent_read(true)
        .send()
        .await?
        .item
        .unwrap_or_default())
}

fn expires_at(item: &std::collections::HashMap<String, AttributeValue>) -> i64 {
    item.get("expires_at").and_then(|v| v.as_n().ok()).and_then(|n| n.parse().ok()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retryable_error_twice_then_success_runs_three_attempts_on_one_message() -> anyhow::Result<()> {
    // GIVEN a webhook that answers 503, 503, then 200, and a job allowing 3 attempts
    let env = TestEnv::new("retry-ok").await?;
    let hook = WebhookServer::start(vec![Reply::Status(503), Reply::Status(503)]).await?;
    let key = fixtures::create_ready(
        &env,
        "acme",
        "flaky",
        fixtures::http_definition(&hook.url("/run")),
        Utc::now(),
    )
    .await?;

    // WHEN a worker polls the pool
    let (worker, metrics) = fixtures::worker_with(&env, fixtures::settings("retry-1"), Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller(worker, 4);
    let s = fixtures::wait_for(&env, &key, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    let stats = poller.await??;

    // THEN it SUCCEEDED on attempt 3, each attempt with a new token and the same idempotency key
    assert_eq!((s.exec.status, s.exec.attempt, s.exec.fencing_token), (ExecStatus::Succeeded, 3, 3));
    let got: Vec<(String, u64, u32)> =
        hook.received().into_iter().map(|r| (r.idempotency_key, r.token, r.attempt)).collect();
    let id = key.global_id();
    assert_eq!(got, vec![(id.clone(), 1, 1), (id.clone(), 2, 2), (id, 3, 3)]);
    // AND the timeline is READY → (RUNNING → RETRY_WAIT) ×2 → RUNNING → SUCCEEDED, codes recorded
    let path: Vec<(ExecStatus, Option<String>)> =
        s.exec.timeline.iter().map(|a| (a.to, a.code.clone())).collect();
    use ExecStatus::*;
    assert_eq!(
        path,
        vec![
            (Ready, None),
            (Running, None),
            (RetryWait, Some("Http503".into())),
            (Running, None),
            (RetryWait, Some("Http503".into())),
            (Running, None),
            (Succeeded, None),
        ]
    );
    // AND the retries used the one message (three receives of it, no new message), now deleted
    assert_eq!(stats.received.load(std::sync::atomic::Ordering::Relaxed), 3);
    assert!(fixtures::receive(&env, env.queue_url("default"), 30).await?.is_empty());
    // AND the RETRY_WAIT left the attention index once it succeeded
    let item = raw_item(&env, &key).await?;
    assert!(!item.contains_key("att_pk"));
    // AND a fire that succeeded is kept 7 days from its finish, not the audit tier's 90 from its
    // creation (docs/capacity.md, "Retention tiers")
    let finished = s.exec.timeline.last().map(|a| a.at / 1000).unwrap_or_default();
    assert_eq!(expires_at(&item), finished + sundial_store::executions::SUCCEEDED_RETENTION_SECS);
    assert_eq!(metrics.records().iter().map(|m| m.retries).sum::<u64>(), 2);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_business_error_fails_after_one_attempt() -> anyhow::Result<()> {
    // GIVEN a webhook that answers 422 (the request itself is wrong)
    let env = TestEnv::new("retry-perm").await?;
    let hook = WebhookServer::start(vec![Reply::Status(422)]).await?;
    let key =
        fixtures::create_ready(&env, "acme", "bad", fixtures::http_definition(&hook.url("/run")), Utc::now())
            .await?;
    let put_expiry = expires_at(&raw_item(&env, &key).await?);

    // WHEN a worker polls
    let (worker, _) = fixtures::worker_with(&env, fixtures::settings("perm-1"), Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller(worker, 2);
    let s = fixtures::wait_for(&env, &key, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN it FAILED after exactly one attempt, with the code, listed in the attention index
    assert_eq!((s.exec.status, s.exec.attempt), (ExecStatus::Failed, 1));
    assert_eq!(s.exec.last_error.map(|e| e.0), Some("Http422".into()));
    assert_eq!(hook.received().len(), 1);
    let item = raw_item(&env, &key).await?;
    assert_eq!(
        item.get("att_pk").and_then(|v| v.as_s().ok()).cloned(),
        Some(keys::attention_pk("acme", "FAILED"))
    );
    assert!(fixtures::dlq_bodies(&env, "default").await?.is_empty(), "FAILED is not DEAD: no DLQ copy");
    // AND a failure keeps the audit tier: the finish leaves the expiry its put gave it
    assert!(put_expiry > 0);
    assert_eq!(expires_at(&item), put_expiry);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_budget_is_dead_with_digest_and_in_the_dlq() -> anyhow::Result<()> {
    // GIVEN a webhook that always answers 500 and a job allowing 2 attempts
    let env = TestEnv::new("retry-dead").await?;
    let hook = WebhookServer::start(vec![Reply::Status(500), Reply::Status(500), Reply::Status(500)]).await?;
    let mut def = fixtures::http_definition(&hook.url("/run"));
    def.retry.max_attempts = 2;
    let key = fixtures::create_ready(&env, "acme", "doomed", def.clone(), Utc::now()).await?;

    // WHEN a worker polls
    let (worker, metrics) = fixtures::worker_with(&env, fixtures::settings("dead-1"), Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller(worker, 2);
    let s = fixtures::wait_for(&env, &key, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN it is DEAD after 2 attempts with the last error, the reason, the input digest and the
    // definition version
    assert_eq!((s.exec.status, s.exec.attempt), (ExecStatus::Dead, 2));
    let (code, msg) = s.exec.last_error.clone().unwrap_or_default();
    assert_eq!(code, "Http500");
    assert!(msg.starts_with("AttemptsExhausted"), "{msg}");
    let item = raw_item(&env, &key).await?;
    let digest = sundial_core::execution::worker::input_digest(&def);
    assert_eq!(item.get("dg").and_then(|v| v.as_s().ok()), Some(&digest));
    assert_eq!(s.exec.def_version, 1);
    assert_eq!(
        item.get("att_pk").and_then(|v| v.as_s().ok()).cloned(),
        Some(keys::attention_pk("acme", "DEAD"))
    );
    // AND the pool's DLQ holds its message, once
    let dlq = fixtures::dlq_bodies(&env, "default").await?;
    assert_eq!(dlq.len(), 1, "{dlq:?}");
    let m: ExecMessage = serde_json::from_str(&dlq[0])?;
    assert_eq!((m.tenant.as_str(), m.job_id.as_str(), m.scheduled_ms), ("acme", "doomed", key.scheduled_ms));
    assert!(
        fixtures::receive(&env, env.queue_url("default"), 30).await?.is_empty(),
        "the pool queue is empty"
    );
    assert_eq!(hook.received().len(), 2);
    assert_eq!(metrics.records().iter().filter(|m| m.outcome == Some(ExecStatus::Dead)).count(), 1);
    env.cleanup().await;
    Ok(())
}

/// Ignores cancellation and never returns: a handler stuck past its timeout.
struct Stuck;

impl Handler for Stuck {
    fn run(&self, _ctx: HandlerContext) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_its_timeout_is_a_retryable_timeout() -> anyhow::Result<()> {
    // GIVEN an in-process job with a 1 s timeout whose handler hangs, allowed 2 attempts
    let env = TestEnv::new("retry-timeout").await?;
    let mut def = fixtures::definition(Target::in_process("stuck"));
    def.timeout_secs = 1;
    def.retry.max_attempts = 2;
    let key = fixtures::create_ready(&env, "acme", "hang", def, Utc::now()).await?;

    // WHEN a worker runs it
    let mut settings = fixtures::settings("timeout-1");
    settings.cancel_grace_ms = 200;
    let (worker, _) = fixtures::worker_with(&env, settings, Handlers::new().with("stuck", Stuck))?;
    let (stop, poller) = fixtures::spawn_poller(worker, 2);
    let s = fixtures::wait_for(&env, &key, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN both attempts timed out (retryable) and the budget ended it DEAD
    let codes: Vec<Option<String>> = s
        .exec
        .timeline
        .iter()
        .filter(|a| a.from == Some(ExecStatus::Running))
        .map(|a| a.code.clone())
        .collect();
    assert_eq!(codes, vec![Some("Timeout".into()), Some("AttemptsExhausted".into())]);
    assert_eq!(s.exec.last_error.map(|e| e.0), Some("Timeout".into()));
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_to_loopback_or_metadata_addresses_are_refused_unless_allowed() -> anyhow::Result<()> {
    // GIVEN a local webhook server and jobs targeting it by loopback IP, and the metadata service
    let env = TestEnv::new("webhook-ssrf").await?;
    let hook = WebhookServer::start(vec![]).await?;
    let port = hook.base.rsplit(':').next().unwrap_or_default().to_string();
    let now = Utc::now();
    let k_loop = fixtures::create_ready(
        &env,
        "acme",
        "loop",
        fixtures::http_definition(&format!("https://127.0.0.1:{port}/run")),
        now,
    )
    .await?;
    let k_meta = fixtures::create_ready(
        &env,
        "acme",
        "meta",
        fixtures::http_definition("https://169.254.169.254/latest/meta-data/"),
        now,
    )
    .await?;
    let k_name = fixtures::create_ready(
        &env,
        "acme",
        "name",
        fixtures::http_definition(&format!("https://localhost:{port}/run")),
        now,
    )
    .await?;

    // WHEN a worker whose deployment does not allow loopback targets runs them
    let mut strict = env.cfg.clone();
    strict.targets = sundial_model::outbound::TargetPolicy::default();
    let (worker, _) =
        fixtures::worker_with_config(&env, strict, fixtures::settings("strict"), Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller(worker, 4);
    let mut done = Vec::new();
    for k in [&k_loop, &k_meta, &k_name] {
        done.push(fixtures::wait_for(&env, k, WITHIN, |s| s.exec.status.is_terminal()).await?);
    }
    stop.cancel();
    poller.await??;

    // THEN each FAILED at once with TargetAddressRefused, and nothing reached the server
    for s in &done {
        assert_eq!((s.exec.status, s.exec.attempt), (ExecStatus::Failed, 1), "{}", s.exec.job_id);
        assert_eq!(
            s.exec.last_error.as_ref().map(|e| e.0.as_str()),
            Some("TargetAddressRefused"),
            "{}",
            s.exec.job_id
        );
    }
    assert!(hook.received().is_empty());

    // WHEN the deployment allows loopback targets (the dev-only setting)
    let k_ok = fixtures::create_ready(
        &env,
        "acme",
        "allowed",
        fixtures::http_definition(&hook.url("/run")),
        Utc::now(),
    )
    .await?;
    let (worker, _) = fixtures::worker_with(&env, fixtures::settings("lax"), Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller(worker, 2);
    let s = fixtures::wait_for(&env, &k_ok, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN the same loopback server is reached
    assert_eq!(s.exec.status, ExecStatus::Succeeded);
    assert_eq!(hook.received().len(), 1);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sqs_target_gets_the_invocation_and_its_token() -> anyhow::Result<()> {
    // GIVEN a user's queue and a job targeting it
    let env = TestEnv::new("sqs-target").await?;
    // Not under the pool queues' prefix (the target policy refuses Sundial's own queues), and
    // tagged as the tenant's.
    let url = fixtures::tenant_queue(&env, "inbox", "acme").await?;
    let key = fixtures::create_ready(
        &env,
        "acme",
        "toq",
        fixtures::definition(Target::sqs(url.clone())),
        Utc::now(),
    )
    .await?;

    // WHEN a worker runs it
    let (worker, _) = fixtures::worker_with(&env, fixtures::settings("sqs-1"), Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller(worker, 2);
    let s = fixtures::wait_for(&env, &key, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN the user's queue has the invocation with the execution id and the fencing token
    assert_eq!(s.exec.status, ExecStatus::Succeeded);
    let out = env
        .clients
        .sqs
        .receive_message()
        .queue_url(&url)
        .message_attribute_names("All")
        .wait_time_seconds(1)
        .send()
        .await?;
    let msgs = out.messages.unwrap_or_default();
    assert_eq!(msgs.len(), 1);
    let body: serde_json::Value = serde_json::from_str(msgs[0].body.as_deref().unwrap_or("{}"))?;
    assert_eq!(
        (body["executionId"].as_str(), body["fencingToken"].as_u64()),
        (Some(key.global_id().as_str()), Some(1))
    );
    assert_eq!(body["params"], serde_json::json!({"report": "daily"}));
    let attrs = msgs[0].message_attributes.clone().unwrap_or_default();
    assert_eq!(attrs.get("sundial-fencing-token").and_then(|a| a.string_value.clone()), Some("1".into()));
    let _ = env.clients.sqs.delete_queue().queue_url(&url).send().await;
    env.cleanup().await;
    Ok(())
}
