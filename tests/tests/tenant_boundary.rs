//! The tenant boundary on outbound calls (issue 28, security review 2026-12 C1): a tenant that
//! names another tenant's secret, function or queue is refused, and the refusal reads exactly
//! like naming one that does not exist. The worker acts through the tenant's role session (an
//! STS `AssumeRole` with the `sundial-tenant` session tag, against the emulator) and confirms each
//! resource's `sundial-tenant` tag before using it, which is what holds on an emulator that does
//! not evaluate IAM conditions.

use chrono::Utc;
use std::time::Duration;
use sundial_core::execution::target::in_process::Handlers;
use sundial_model::{ExecStatus, HttpTarget, SecretRef, Target};
use sundial_tests::fixtures::{self, WebhookServer};
use sundial_tests::TestEnv;

const WITHIN: Duration = Duration::from_secs(60);

/// A role in the emulator for the workers to assume (the CDK's tenant access role).
async fn tenant_access_role(env: &TestEnv) -> anyhow::Result<String> {
    let iam = aws_sdk_iam::Client::new(&sundial_tests::sdk_config());
    let name = format!("{}tenant-access", env.cfg.queue_prefix);
    let trust = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},"Action":["sts:AssumeRole","sts:TagSession"]}]}"#;
    let out = iam.create_role().role_name(name).assume_role_policy_document(trust).send().await?;
    Ok(out.role.map(|r| r.arn).unwrap_or_default())
}

fn header_target(url: &str, secret_arn: &str) -> Target {
    Target::Http(HttpTarget {
        url: url.into(),
        signing_secret_arn: None,
        headers: [("Authorization".to_string(), SecretRef { secret_arn: secret_arn.into() })].into(),
    })
}

fn signing_target(url: &str, secret_arn: &str) -> Target {
    Target::Http(HttpTarget {
        url: url.into(),
        signing_secret_arn: Some(secret_arn.into()),
        headers: Default::default(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_naming_another_tenants_secret_function_or_queue_is_refused_as_if_it_did_not_exist(
) -> anyhow::Result<()> {
    // GIVEN tenant acme's secrets (a bearer token and a webhook signing key), function and queue,
    // each tagged sundial-tenant=acme, and an untagged secret
    let env = TestEnv::new("tenant-boundary").await?;
    let stamp = Utc::now().timestamp_millis();
    let token = format!("Bearer acme-{stamp}");
    let acme_token = fixtures::tenant_secret(&env, "acme-token", &token, Some("acme")).await?;
    let acme_signing =
        fixtures::tenant_secret(&env, "acme-signing", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Some("acme"))
            .await?;
    let untagged = fixtures::tenant_secret(&env, "untagged", "nobody's", None).await?;
    let acme_queue = fixtures::tenant_queue(&env, "acme-inbox", "acme").await?;
    let acme_fn = format!("{}acme-fn", env.cfg.queue_prefix);
    fixtures::tenant_function(&env, &acme_fn, "acme").await?;
    let missing_secret = untagged.replace("untagged", "no-such-secret");
    let missing_fn = format!("{}no-such-fn", env.cfg.queue_prefix);
    // AND the attacker's receiver, and tenant acme's own receiver
    let attacker = WebhookServer::start(vec![]).await?;
    let acme_hook = WebhookServer::start(vec![]).await?;

    // WHEN tenant globex's jobs name acme's resources (and ones that do not exist, and one
    // nobody owns), and acme's job names its own token
    let now = Utc::now();
    let globex = |job: &'static str, target: Target| {
        let env = &env;
        async move { fixtures::create_ready(env, "globex", job, fixtures::definition(target), now).await }
    };
    let leak_header = globex("leak-header", header_target(&attacker.url("/collect"), &acme_token)).await?;
    let missing_header =
        globex("missing-header", header_target(&attacker.url("/collect"), &missing_secret)).await?;
    let untagged_header =
        globex("untagged-header", header_target(&attacker.url("/collect"), &untagged)).await?;
    let forge = globex("forge", signing_target(&attacker.url("/collect"), &acme_signing)).await?;
    let their_fn = globex("their-fn", Target::lambda(acme_fn.clone())).await?;
    let missing_function = globex("missing-fn", Target::lambda(missing_fn)).await?;
    let their_queue = globex("their-queue", Target::sqs(acme_queue.clone())).await?;
    let own = fixtures::create_ready(
        &env,
        "acme",
        "own-header",
        fixtures::definition(header_target(&acme_hook.url("/run"), &acme_token)),
        now,
    )
    .await?;
    // AND workers that act as each tenant through the tenant access role run them
    let mut settings = fixtures::settings("boundary-1");
    settings.tenant_roles.shared = Some(tenant_access_role(&env).await?);
    let (worker, _) = fixtures::worker_with(&env, settings, Handlers::new())?;
    let (stop, poller) = fixtures::spawn_poller(worker, 4);
    let mut refused = Vec::new();
    for k in
        [&leak_header, &missing_header, &untagged_header, &forge, &their_fn, &missing_function, &their_queue]
    {
        refused.push(fixtures::wait_for(&env, k, WITHIN, |s| s.exec.status.is_terminal()).await?);
    }
    let own = fixtures::wait_for(&env, &own, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN every globex run FAILED on its first attempt with TargetNotOwned
    let error = |i: usize| refused[i].exec.last_error.clone().unwrap_or_default();
    for s in &refused {
        assert_eq!(
            (s.exec.status, s.exec.attempt),
            (ExecStatus::Failed, 1),
            "{}: {:?}",
            s.exec.job_id,
            s.exec.last_error
        );
        assert_eq!(
            s.exec.last_error.as_ref().map(|e| e.0.as_str()),
            Some("TargetNotOwned"),
            "{}",
            s.exec.job_id
        );
    }
    // AND acme's secret, a missing one and an untagged one read word for word the same, as do
    // acme's function and a missing one: nothing tells globex what exists
    assert_eq!(error(0), error(1));
    assert_eq!(error(0), error(2));
    assert_eq!(error(4), error(5));
    for (i, s) in refused.iter().enumerate() {
        let message = error(i).1;
        for leak in ["acme", "arn:", "000000000000", "123456789012", "NotFound", "AccessDenied", &token] {
            assert!(!message.contains(leak), "{}: {message:?} reveals {leak:?}", s.exec.job_id);
        }
    }
    // AND the attacker's receiver got nothing (no token in a header, nothing signed with acme's
    // key), and acme's queue holds no message of globex's
    assert!(attacker.received().is_empty(), "{:?}", attacker.received().len());
    assert!(fixtures::receive(&env, &acme_queue, 0).await?.is_empty());
    // AND acme's own job, through acme's session, got its own token
    assert_eq!(own.exec.status, ExecStatus::Succeeded, "{:?}", own.exec.last_error);
    assert_eq!(acme_hook.received().first().map(|r| r.header("authorization").to_string()), Some(token));
    env.cleanup().await;
    Ok(())
}
