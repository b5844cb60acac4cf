//! The target policy at run time: the worker judges every target
//! again before it calls, so an allowlist tightened after a job was created, or a definition
//! stored before the policy existed, cannot reach what the policy refuses; Sundial's own pool
//! queue is never a target.

use chrono::Utc;
use std::time::Duration;
use sundial_core::execution::target::in_process::Handlers;
use sundial_model::outbound::TenantTargets;
use sundial_model::{ExecStatus, Target};
use sundial_tests::fixtures;
use sundial_tests::TestEnv;

const WITHIN: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_refuses_what_the_tenant_allowlist_and_the_own_queue_rule_refuse() -> anyhow::Result<()> {
    // GIVEN two user queues, acme allowed only the one named acme-*, and stored executions of
    // acme for each queue and for Sundial's own pool queue
    let env = TestEnv::new("target-policy").await?;
    let suffix = env.cfg.queue_prefix.trim_end_matches('-').to_string();
    let mut urls = Vec::new();
    // (each queue tagged as acme's: the allowlist, not ownership, is what refuses the second)
    for name in [format!("acme-inbox-{suffix}"), format!("globex-inbox-{suffix}")] {
        let out =
            env.clients.sqs.create_queue().queue_name(name).tags(fixtures::TENANT_TAG, "acme").send().await?;
        urls.push(out.queue_url.unwrap_or_default());
    }
    let mut cfg = env.cfg.clone();
    cfg.targets.tenants = Some(
        TenantTargets::parse(r#"{"acme": {"sqs": ["arn:aws:sqs:*:*:acme-inbox-*"], "pools": ["default"]}}"#)
            .map_err(anyhow::Error::msg)?,
    );
    let now = Utc::now();
    let q = |u: &str| fixtures::definition(Target::sqs(u.to_string()));
    let k_ok = fixtures::create_ready(&env, "acme", "ok", q(&urls[0]), now).await?;
    let k_other = fixtures::create_ready(&env, "acme", "other", q(&urls[1]), now).await?;
    let k_own = fixtures::create_ready(&env, "acme", "own", q(env.queue_url("default")), now).await?;

    // WHEN a worker of that deployment runs them
    let (worker, _) =
        fixtures::worker_with_config(&env, cfg, fixtures::settings("policy-1"), Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller(worker, 2);
    let mut done = Vec::new();
    for k in [&k_ok, &k_other, &k_own] {
        done.push(fixtures::wait_for(&env, k, WITHIN, |s| s.exec.status.is_terminal()).await?);
    }
    stop.cancel();
    poller.await??;

    // THEN the listed queue got its message, and the others FAILED at once as not allowed
    assert_eq!(done[0].exec.status, ExecStatus::Succeeded);
    for s in &done[1..] {
        assert_eq!((s.exec.status, s.exec.attempt), (ExecStatus::Failed, 1), "{}", s.exec.job_id);
        let (code, message) = s.exec.last_error.clone().unwrap_or_default();
        assert_eq!(code, "TargetNotAllowed", "{}: {message}", s.exec.job_id);
        assert!(message.starts_with("target.queueUrl"), "{message}");
    }
    assert_eq!(fixtures::receive(&env, &urls[0], 30).await?.len(), 1);
    assert!(fixtures::receive(&env, &urls[1], 30).await?.is_empty());
    // AND nothing was forged into the pool queue (its own message was consumed and deleted)
    assert!(fixtures::receive(&env, env.queue_url("default"), 30).await?.is_empty());
    for u in &urls {
        let _ = env.clients.sqs.delete_queue().queue_url(u).send().await;
    }
    env.cleanup().await;
    Ok(())
}
