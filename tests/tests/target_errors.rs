//! What a failed call leaves for the tenant: `lastError` is shown by the
//! API, so its message is generic per error code; the SDK's own account (role ARNs, accounts,
//! queue URLs, resolved addresses) goes to the worker's log with the execution id.

use chrono::Utc;
use std::time::Duration;
use sundial_core::execution::target::in_process::Handlers;
use sundial_model::{ExecStatus, Target};
use sundial_tests::fixtures;
use sundial_tests::TestEnv;

const WITHIN: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_function_or_queue_is_stored_without_arns_accounts_or_urls() -> anyhow::Result<()> {
    // GIVEN jobs whose Lambda function and queue do not exist (the emulator's errors name them
    // by ARN and account)
    let env = TestEnv::new("target-errors").await?;
    let now = Utc::now();
    let function = "arn:aws:lambda:us-east-1:000000000000:function:sundial-no-such-fn";
    let k_fn =
        fixtures::create_ready(&env, "acme", "fn", fixtures::definition(Target::lambda(function)), now)
            .await?;
    let queue_url =
        format!("{}/000000000000/no-such-queue-{}", sundial_tests::endpoint(), now.timestamp_millis());
    let k_q =
        fixtures::create_ready(&env, "acme", "q", fixtures::definition(Target::sqs(queue_url)), now).await?;

    // WHEN a worker runs them
    let (worker, _) = fixtures::worker_with(&env, fixtures::settings("errors-1"), Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller(worker, 2);
    let mut done = Vec::new();
    for k in [&k_fn, &k_q] {
        done.push(fixtures::wait_for(&env, k, WITHIN, |s| s.exec.status.is_terminal()).await?);
    }
    stop.cancel();
    poller.await??;

    // THEN each FAILED with a code, and a message that names no ARN, account, host or port
    for s in &done {
        assert_eq!(s.exec.status, ExecStatus::Failed, "{}", s.exec.job_id);
        let (code, message) = s.exec.last_error.clone().unwrap_or_default();
        assert!(!code.is_empty(), "{}", s.exec.job_id);
        for leak in ["arn:", "000000000000", "127.0.0.1", "no-such", "http"] {
            assert!(!message.contains(leak), "{}: {message:?} contains {leak:?}", s.exec.job_id);
        }
    }
    env.cleanup().await;
    Ok(())
}
