//! Webhook signatures: a job that names a signing secret in
//! Secrets Manager gets every webhook signed per Standard Webhooks, with the execution id as
//! `webhook-id` on every attempt; the receivers' toolkit (`sundial_idempotency::webhook`)
//! verifies them with either key of a rotation; a secret that cannot be read fails the
//! execution with a generic message. Auth headers come from secrets too (outbound 3).

use chrono::Utc;
use std::time::Duration;
use sundial_core::execution::target::in_process::Handlers;
use sundial_idempotency::webhook::{self, Headers};
use sundial_model::{ExecStatus, HttpTarget, SecretRef, Target};
use sundial_tests::fixtures::{self, Reply, WebhookServer};
use sundial_tests::TestEnv;

const WITHIN: Duration = Duration::from_secs(30);
const OLD_KEY: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const NEW_KEY: &str = "whsec_c3VuZGlhbC10ZXN0LXJvdGF0ZWQta2V5LTAx";

/// A secret of tenant `acme` (the tenant of every job here).
async fn secret(env: &TestEnv, name: &str, value: &str) -> anyhow::Result<String> {
    fixtures::tenant_secret(env, name, value, Some("acme")).await
}

fn signed(url: &str, arn: &str) -> Target {
    Target::Http(HttpTarget {
        url: url.into(),
        signing_secret_arn: Some(arn.into()),
        headers: Default::default(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_attempt_is_signed_with_both_keys_of_a_rotation_under_one_webhook_id() -> anyhow::Result<()> {
    // GIVEN a signing secret in the middle of a rotation (old and new key), and a webhook that
    // fails once then succeeds
    let env = TestEnv::new("sign-rotate").await?;
    let arn = secret(&env, "signing", &format!("{OLD_KEY} {NEW_KEY}")).await?;
    let hook = WebhookServer::start(vec![Reply::Status(503)]).await?;
    let key = fixtures::create_ready(
        &env,
        "acme",
        "signed",
        fixtures::definition(signed(&hook.url("/run"), &arn)),
        Utc::now(),
    )
    .await?;

    // WHEN a worker runs it
    let (worker, _) = fixtures::worker_with(&env, fixtures::settings("sign-1"), Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller(worker, 2);
    let s = fixtures::wait_for(&env, &key, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN both attempts carry the execution id as webhook-id, and verify with either key alone
    assert_eq!(s.exec.status, ExecStatus::Succeeded);
    let got = hook.received();
    assert_eq!(got.len(), 2);
    for r in &got {
        assert_eq!(r.header("webhook-id"), key.global_id());
        let ts: i64 = r.header("webhook-timestamp").parse()?;
        assert!((ts - Utc::now().timestamp()).abs() < 300, "timestamp {ts}");
        assert_eq!(r.header("webhook-signature").split(' ').count(), 2);
        let h = Headers {
            id: r.header("webhook-id"),
            timestamp: r.header("webhook-timestamp"),
            signature: r.header("webhook-signature"),
        };
        for (secrets, index) in
            [(vec![OLD_KEY], 0), (vec![NEW_KEY], 0), (vec!["whsec_AAAAAAAAAAAAAAAAAAAAAA==", NEW_KEY], 1)]
        {
            let v = webhook::verify(&secrets, &h, &r.raw_body, ts, webhook::DEFAULT_TOLERANCE_SECS);
            assert_eq!(v.map(|v| v.secret_index), Ok(index), "{secrets:?}");
        }
        // AND a forged fencing token in the body does not verify
        let forged =
            String::from_utf8(r.raw_body.to_vec())?.replace("\"fencingToken\":", "\"fencingToken\":9");
        let v = webhook::verify(&[OLD_KEY], &h, forged.as_bytes(), ts, webhook::DEFAULT_TOLERANCE_SECS);
        assert_eq!(v, Err(webhook::VerifyError::NoMatch));
    }
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_signing_secret_fails_the_execution_with_a_generic_message() -> anyhow::Result<()> {
    // GIVEN a job whose signing secret does not exist
    let env = TestEnv::new("sign-missing").await?;
    let hook = WebhookServer::start(vec![]).await?;
    let arn = "arn:aws:secretsmanager:us-east-1:000000000000:secret:sundial-no-such-secret-AbCdEf";
    let key = fixtures::create_ready(
        &env,
        "acme",
        "unsigned",
        fixtures::definition(signed(&hook.url("/run"), arn)),
        Utc::now(),
    )
    .await?;

    // WHEN a worker runs it
    let (worker, _) = fixtures::worker_with(&env, fixtures::settings("sign-2"), Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller(worker, 2);
    let s = fixtures::wait_for(&env, &key, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN it FAILED at once (a missing secret is configuration), nothing was sent unsigned,
    // and the stored message names neither the secret nor the account
    assert_eq!((s.exec.status, s.exec.attempt), (ExecStatus::Failed, 1));
    let (code, message) = s.exec.last_error.clone().unwrap_or_default();
    assert_eq!(code, "TargetNotOwned");
    assert!(
        !message.contains("arn:") && !message.contains("000000000000") && !message.contains("no-such"),
        "{message}"
    );
    assert!(hook.received().is_empty());
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auth_header_is_sent_with_its_secret_value_and_never_stored() -> anyhow::Result<()> {
    // GIVEN a job whose Authorization header is a secret, and a signing secret
    let env = TestEnv::new("sign-headers").await?;
    let token = format!("Bearer t-{}", Utc::now().timestamp_millis());
    let token_arn = secret(&env, "token", &token).await?;
    let signing_arn = secret(&env, "signing2", OLD_KEY).await?;
    let hook = WebhookServer::start(vec![]).await?;
    let target = Target::Http(HttpTarget {
        url: hook.url("/run"),
        signing_secret_arn: Some(signing_arn),
        headers: [("Authorization".to_string(), SecretRef { secret_arn: token_arn })].into(),
    });
    let key = fixtures::create_ready(&env, "acme", "auth", fixtures::definition(target), Utc::now()).await?;

    // WHEN a worker runs it
    let (worker, _) = fixtures::worker_with(&env, fixtures::settings("sign-3"), Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller(worker, 2);
    let s = fixtures::wait_for(&env, &key, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN the request carried the secret's value, still signed
    assert_eq!(s.exec.status, ExecStatus::Succeeded);
    let got = hook.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].header("authorization"), token);
    assert!(got[0].header("webhook-signature").starts_with("v1,"));
    // AND the stored execution holds the reference only
    let stored = serde_json::to_string(&s.exec.definition)?;
    assert!(!stored.contains(&token), "{stored}");
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_caches_a_secret_for_its_ttl_and_then_reads_the_rotated_value() -> anyhow::Result<()> {
    use sundial_core::execution::target::secrets::SecretCache;
    // GIVEN a secret read once through a cache with a long TTL and one with none
    let env = TestEnv::new("sign-cache").await?;
    let arn = secret(&env, "cached", OLD_KEY).await?;
    let long = SecretCache::new(env.clients.secrets.clone(), Duration::from_secs(3_600));
    let none = SecretCache::new(env.clients.secrets.clone(), Duration::ZERO);
    for c in [&long, &none] {
        assert_eq!(
            &*c.get(&arn, "signing secret").await.map_err(|e| anyhow::anyhow!("{:?}", e.error))?,
            OLD_KEY
        );
    }
    // WHEN the secret is rotated to two keys
    let rotated = format!("{OLD_KEY} {NEW_KEY}");
    env.clients.secrets.put_secret_value().secret_id(&arn).secret_string(&rotated).send().await?;
    // THEN the long-lived cache still serves the old value (no call per fire), and a read past
    // the TTL sees the rotation
    assert_eq!(
        &*long.get(&arn, "signing secret").await.map_err(|e| anyhow::anyhow!("{:?}", e.error))?,
        OLD_KEY
    );
    assert_eq!(
        &*none.get(&arn, "signing secret").await.map_err(|e| anyhow::anyhow!("{:?}", e.error))?,
        rotated
    );
    env.cleanup().await;
    Ok(())
}
