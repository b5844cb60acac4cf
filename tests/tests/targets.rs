//! AWS targets beyond HTTPS, Lambda and SQS (docs/targets.md), run end to end on the emulator:
//! an `eventBridge` target puts the invocation on a tenant's bus, as the tenant, where a
//! tenant's rule delivers it to a queue read back through the real SDK; `sns` publishes it to a
//! tenant's topic; `stepFunctions` starts a tenant's state machine and tracks the execution to
//! its end (the emulator runs the states: MiniStack, and moto with `execute_state_machine`); `ecs`
//! runs a tenant's task definition and judges the fire by its container's exit code (moto, whose
//! tasks `localstack/sundial_emulator.py` makes stop like a container; MiniStack's run until
//! stopped, so there the test covers adoption, the stop at a timeout and ownership).
//!
//! The takeover: a worker claims a fire, puts its event and stalls past its lease; another
//! worker takes the fire over (a new fencing token) and puts its own. Both events reach the
//! tenant, each with its token; the stale worker's finish is refused. A consumer keeps the
//! highest token per execution id (docs/targets.md, "Fencing downstream").

use anyhow::{Context, Result};
use chrono::{Duration, Utc};
use sundial_core::execution::target::eventbridge::EventBridgeCaller;
use sundial_core::execution::target::in_process::Handlers;
use sundial_core::execution::target::Invocation;
use sundial_core::execution::worker::{Disposition, NoExtend, Worker};
use sundial_model::claim::{Finish, LeaseTerms};
use sundial_model::{EcsTarget, EventBridgeTarget, ExecStatus, Execution, JobDefinition, SnsTarget, Target};
use sundial_schedule::ScheduleSpec;
use sundial_store::executions::{ClaimOutcome, Claimed, FinishResult};
use sundial_tests::fixtures;
use sundial_tests::TestEnv;

/// A tenant's bus tagged for `owner`, and a rule on it sending every `sundial.job` event to a
/// fresh queue: (bus ARN, queue URL).
async fn tenant_bus(env: &TestEnv, name: &str, owner: &str) -> Result<(String, String)> {
    let events = &env.clients.events;
    let prefix = env.cfg.jobs_table.trim_end_matches("sundial-jobs").to_string();
    let bus = format!("{prefix}{name}");
    let tag = aws_sdk_eventbridge::types::Tag::builder().key("sundial-tenant").value(owner).build()?;
    let arn =
        events.create_event_bus().name(&bus).tags(tag).send().await?.event_bus_arn.context("bus ARN")?;
    let queue_url = env
        .clients
        .sqs
        .create_queue()
        .queue_name(format!("{prefix}{name}-inbox"))
        .send()
        .await?
        .queue_url
        .unwrap_or_default();
    let queue_arn = fixtures::queue_arn(env, &queue_url).await?;
    let pattern = serde_json::json!({"source": ["sundial.job"]});
    events
        .put_rule()
        .name(format!("{name}-all"))
        .event_bus_name(&bus)
        .event_pattern(pattern.to_string())
        .send()
        .await?;
    let target = aws_sdk_eventbridge::types::Target::builder().id("inbox").arn(queue_arn).build()?;
    events.put_targets().rule(format!("{name}-all")).event_bus_name(&bus).targets(target).send().await?;
    Ok((arn, queue_url))
}

/// What reached `queue_url` ([`fixtures::received`]).
async fn delivered(env: &TestEnv, queue_url: &str, min: usize) -> Result<Vec<serde_json::Value>> {
    fixtures::received(env, queue_url, min).await
}

/// Runs `e`'s message through `worker` once.
async fn deliver(worker: &Worker, e: &Execution) -> Result<Disposition> {
    let body = serde_json::to_string(&fixtures::message_of(e, Utc::now()))?;
    let stop = tokio_util::sync::CancellationToken::new();
    Ok(worker.handle("default", &body, &NoExtend, &stop).await)
}

/// A worker's claim of `e`, put at `at`, with a 2 s lease that is long over: the next
/// delivery takes it over.
async fn stale_claim(env: &TestEnv, e: &Execution, at: chrono::DateTime<Utc>) -> Result<Claimed> {
    let key = fixtures::put_execution(env, e).await?;
    let terms = LeaseTerms { duration_ms: 2_000, skew_margin_ms: 200, may_take_over: true };
    match fixtures::store(env).claim(&key, "zombie", &terms, at).await? {
        ClaimOutcome::Claimed(c) => Ok(*c),
        other => anyhow::bail!("the first claim failed: {other:?}"),
    }
}

fn job(bus_arn: &str) -> JobDefinition {
    JobDefinition::new(
        ScheduleSpec::new("0 0 2 * * *", "UTC"),
        Target::EventBridge(EventBridgeTarget {
            event_bus_arn: bus_arn.to_string(),
            detail_type: Some("SettlementRun".into()),
        }),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_bridge_target_puts_each_fire_on_the_tenants_bus_and_a_takeover_puts_it_with_the_new_token(
) -> Result<()> {
    Box::pin(event_bridge_target()).await
}

async fn event_bridge_target() -> Result<()> {
    // GIVEN acme's bus (tagged for acme) with a rule to acme's inbox, and a job targeting it
    let env = TestEnv::new("target-eb").await?;
    let (bus, inbox) = tenant_bus(&env, "acme-events", "acme").await?;
    let store = fixtures::store(&env);
    let (worker, _) = fixtures::worker_with(&env, fixtures::settings("w2"), Handlers::new())?;

    // WHEN a fire is run
    let past = Utc::now() - Duration::seconds(60);
    let e = fixtures::ready_execution("acme", "settle", job(&bus), past, past);
    let key = fixtures::put_execution(&env, &e).await?;
    assert_eq!(deliver(&worker, &e).await?, Disposition::Delete);
    // THEN it SUCCEEDED, and acme's rule delivered one event carrying the invocation
    assert_eq!(fixtures::snapshot(&env, &key).await?.exec.status, ExecStatus::Succeeded);
    let events = delivered(&env, &inbox, 1).await?;
    assert_eq!(events.len(), 1, "{events:?}");
    let ev = &events[0];
    assert_eq!(
        (ev["source"].as_str(), ev["detail-type"].as_str()),
        (Some("sundial.job"), Some("SettlementRun"))
    );
    assert_eq!(ev["detail"]["executionId"], e.global_id());
    assert_eq!(ev["detail"]["fencingToken"], 1);
    assert_eq!((ev["detail"]["tenant"].as_str(), ev["detail"]["attempt"].as_u64()), (Some("acme"), Some(1)));

    // WHEN another fire is claimed by a worker that puts its event and then stalls past its
    // lease, and a second worker takes it over
    let at = past - Duration::seconds(30);
    let f = fixtures::ready_execution("acme", "settle", job(&bus), at, at);
    let fkey = sundial_store::executions::ExecKey::of(&f);
    let zombie = stale_claim(&env, &f, at).await?;
    let direct = EventBridgeCaller::new(env.clients.events.clone());
    let stale = Invocation::of(&zombie.snapshot.exec, zombie.fence.token, zombie.fence.attempt);
    direct.put(&bus, Some("SettlementRun"), &stale).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    assert_eq!(deliver(&worker, &f).await?, Disposition::Delete);
    // THEN the takeover ran it with a new token and SUCCEEDED; the stale worker's finish is refused
    let snap = fixtures::snapshot(&env, &fkey).await?;
    assert_eq!(snap.exec.status, ExecStatus::Succeeded);
    assert_eq!(snap.exec.fencing_token, zombie.fence.token + 1);
    let late = store.finish(&fkey, &zombie.fence, &Finish::Succeeded, Utc::now()).await?;
    assert!(matches!(late, FinishResult::TakenOver { .. }), "{late:?}");
    // AND both events reached acme, each with its token: the consumer keeps the highest
    let events = delivered(&env, &inbox, 2).await?;
    let mut tokens: Vec<u64> = events
        .iter()
        .filter(|e| e["detail"]["executionId"] == f.global_id())
        .filter_map(|e| e["detail"]["fencingToken"].as_u64())
        .collect();
    tokens.sort_unstable();
    assert_eq!(tokens, vec![zombie.fence.token, zombie.fence.token + 1]);
    assert_eq!(tokens.last().copied(), Some(snap.exec.fencing_token), "the newest event is the final run's");

    // WHEN a job names a bus that is not acme's (tagged for globex)
    let (other, other_inbox) = tenant_bus(&env, "globex-events", "globex").await?;
    let g = fixtures::ready_execution("acme", "sneaky", job(&other), past, past);
    let gkey = fixtures::put_execution(&env, &g).await?;
    assert_eq!(deliver(&worker, &g).await?, Disposition::Delete);
    // THEN the fire FAILED for good on the ownership check, and nothing reached globex's bus
    let snap = fixtures::snapshot(&env, &gkey).await?;
    assert_eq!(snap.exec.status, ExecStatus::Failed);
    assert_eq!(snap.exec.last_error.as_ref().map(|(c, _)| c.as_str()), Some("TargetNotOwned"));
    let none = env.clients.sqs.receive_message().queue_url(&other_inbox).wait_time_seconds(1).send().await?;
    assert!(none.messages().is_empty());
    env.cleanup().await;
    Ok(())
}

/// A tenant's topic tagged for `owner`, with a raw-delivery SQS subscription: (topic ARN,
/// queue URL).
async fn tenant_topic(env: &TestEnv, name: &str, owner: &str) -> Result<(String, String)> {
    let sns = &env.clients.sns;
    let prefix = env.cfg.jobs_table.trim_end_matches("sundial-jobs").to_string();
    let tag = aws_sdk_sns::types::Tag::builder().key("sundial-tenant").value(owner).build()?;
    let arn = sns
        .create_topic()
        .name(format!("{prefix}{name}"))
        .tags(tag)
        .send()
        .await?
        .topic_arn
        .context("topic ARN")?;
    let queue_url = env
        .clients
        .sqs
        .create_queue()
        .queue_name(format!("{prefix}{name}-sub"))
        .send()
        .await?
        .queue_url
        .unwrap_or_default();
    let queue_arn = fixtures::queue_arn(env, &queue_url).await?;
    sns.subscribe()
        .topic_arn(&arn)
        .protocol("sqs")
        .endpoint(queue_arn)
        .attributes("RawMessageDelivery", "true")
        .send()
        .await?;
    Ok((arn, queue_url))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sns_target_publishes_each_fire_to_the_tenants_topic_and_a_takeover_publishes_the_new_token(
) -> Result<()> {
    Box::pin(sns_target()).await
}

async fn sns_target() -> Result<()> {
    // GIVEN acme's topic (tagged for acme) with a queue subscribed, and a job publishing to it
    let env = TestEnv::new("target-sns").await?;
    let (topic, inbox) = tenant_topic(&env, "acme-alerts", "acme").await?;
    let store = fixtures::store(&env);
    let (worker, _) = fixtures::worker_with(&env, fixtures::settings("w2"), Handlers::new())?;
    let job = |arn: &str| {
        JobDefinition::new(
            ScheduleSpec::new("0 0 2 * * *", "UTC"),
            Target::Sns(SnsTarget { topic_arn: arn.to_string(), subject: Some("settlement".into()) }),
        )
    };

    // WHEN a fire is claimed by a worker that publishes and stalls past its lease, and another
    // worker takes it over
    let at = Utc::now() - Duration::seconds(90);
    let f = fixtures::ready_execution("acme", "settle", job(&topic), at, at);
    let fkey = sundial_store::executions::ExecKey::of(&f);
    let zombie = stale_claim(&env, &f, at).await?;
    let direct = sundial_core::execution::target::sns::SnsCaller::new(env.clients.sns.clone());
    let stale = Invocation::of(&zombie.snapshot.exec, zombie.fence.token, zombie.fence.attempt);
    direct.publish(&topic, Some("settlement"), &stale).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    assert_eq!(deliver(&worker, &f).await?, Disposition::Delete);
    // THEN the takeover SUCCEEDED with the next token, the stale finish is refused...
    let snap = fixtures::snapshot(&env, &fkey).await?;
    assert_eq!(snap.exec.status, ExecStatus::Succeeded);
    assert_eq!(snap.exec.fencing_token, zombie.fence.token + 1);
    let late = store.finish(&fkey, &zombie.fence, &Finish::Succeeded, Utc::now()).await?;
    assert!(matches!(late, FinishResult::TakenOver { .. }), "{late:?}");
    // ...and the subscriber got both messages, the invocation as the raw body, each with its
    // token; the newest is the final run's
    let msgs = delivered(&env, &inbox, 2).await?;
    let mut tokens: Vec<u64> = msgs
        .iter()
        .filter(|m| m["executionId"] == f.global_id() && m["tenant"] == "acme")
        .filter_map(|m| m["fencingToken"].as_u64())
        .collect();
    tokens.sort_unstable();
    assert_eq!(tokens, vec![zombie.fence.token, zombie.fence.token + 1], "{msgs:?}");

    // WHEN a job names globex's topic
    let (other, other_inbox) = tenant_topic(&env, "globex-alerts", "globex").await?;
    let g = fixtures::ready_execution("acme", "sneaky", job(&other), at, at);
    let gkey = fixtures::put_execution(&env, &g).await?;
    assert_eq!(deliver(&worker, &g).await?, Disposition::Delete);
    // THEN it FAILED on the ownership check and globex's subscriber got nothing
    let snap = fixtures::snapshot(&env, &gkey).await?;
    assert_eq!(snap.exec.status, ExecStatus::Failed);
    assert_eq!(snap.exec.last_error.as_ref().map(|(c, _)| c.as_str()), Some("TargetNotOwned"));
    let none = env.clients.sqs.receive_message().queue_url(&other_inbox).wait_time_seconds(1).send().await?;
    assert!(none.messages().is_empty());
    env.cleanup().await;
    Ok(())
}

/// A standard state machine of acme's tagged for `owner`, running `states` (Amazon States
/// Language): its ARN.
async fn tenant_machine(env: &TestEnv, name: &str, owner: &str, states: serde_json::Value) -> Result<String> {
    let prefix = env.cfg.jobs_table.trim_end_matches("sundial-jobs").to_string();
    let tag = aws_sdk_sfn::types::Tag::builder().key("sundial-tenant").value(owner).build();
    let out = env
        .clients
        .sfn
        .create_state_machine()
        .name(format!("{prefix}{name}"))
        .definition(states.to_string())
        .role_arn("arn:aws:iam::123456789012:role/sundial-test-sfn")
        .tags(tag)
        .send()
        .await?;
    Ok(out.state_machine_arn().to_string())
}

/// The executions of `machine` (ListExecutions): (name, status).
async fn machine_runs(env: &TestEnv, machine: &str) -> Result<Vec<(String, String)>> {
    let out = env.clients.sfn.list_executions().state_machine_arn(machine).send().await?;
    Ok(out.executions().iter().map(|x| (x.name().to_string(), x.status().as_str().to_string())).collect())
}

fn machine_job(arn: &str) -> JobDefinition {
    let mut def =
        JobDefinition::new(ScheduleSpec::new("0 0 2 * * *", "UTC"), Target::step_functions(arn.to_string()));
    def.timeout_secs = 60;
    def
}

/// The Step Functions executions noted on `e`'s timeline.
fn noted_runs(e: &Execution) -> Vec<String> {
    e.timeline
        .iter()
        .filter_map(|ev| ev.code.as_deref()?.strip_prefix("StepFunctionsExecution "))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_functions_target_runs_each_fire_to_its_end_and_a_takeover_adopts_the_running_execution(
) -> Result<()> {
    Box::pin(step_functions_target()).await
}

async fn step_functions_target() -> Result<()> {
    use sundial_core::execution::target::stepfunctions::{execution_name, run_of, StepFunctionsCaller};
    // GIVEN acme's state machines (tagged for acme): one that waits a second and passes, one
    // that fails
    let env = TestEnv::new("target-sfn").await?;
    let wait_pass = serde_json::json!({"StartAt": "Hold", "States": {
        "Hold": {"Type": "Wait", "Seconds": 1, "Next": "Done"},
        "Done": {"Type": "Pass", "End": true}}});
    let machine = tenant_machine(&env, "acme-settle", "acme", wait_pass).await?;
    let store = fixtures::store(&env);
    let (worker, _) = fixtures::worker_with(&env, fixtures::settings("w2"), Handlers::new())?;

    // WHEN a fire is run
    let past = Utc::now() - Duration::seconds(60);
    let e = fixtures::ready_execution("acme", "settle", machine_job(&machine), past, past);
    let key = fixtures::put_execution(&env, &e).await?;
    assert_eq!(deliver(&worker, &e).await?, Disposition::Delete);
    // THEN it SUCCEEDED once its execution did, the execution named after the fire's first run,
    // its input the invocation, its ARN on the fire's timeline
    let snap = fixtures::snapshot(&env, &key).await?;
    assert_eq!(snap.exec.status, ExecStatus::Succeeded, "{:?}", snap.exec.last_error);
    let name = execution_name(&e.global_id(), 1);
    assert_eq!(machine_runs(&env, &machine).await?, vec![(name.clone(), "SUCCEEDED".to_string())]);
    let noted = noted_runs(&snap.exec);
    assert_eq!(noted.len(), 1, "{:?}", snap.exec.timeline);
    assert!(
        noted[0].ends_with(&format!(":execution:{}:{name}", machine.rsplit(':').next().unwrap_or_default()))
    );
    let described = env.clients.sfn.describe_execution().execution_arn(&noted[0]).send().await?;
    let input: serde_json::Value = serde_json::from_str(described.input().unwrap_or("{}"))?;
    assert_eq!(
        (input["executionId"].as_str(), input["fencingToken"].as_u64()),
        (Some(e.global_id().as_str()), Some(1))
    );

    // WHEN another fire is claimed by a worker that starts its execution and then stalls past
    // its lease, and a second worker takes it over (a new fencing token, so a new input)
    let at = past - Duration::seconds(30);
    let f = fixtures::ready_execution("acme", "settle", machine_job(&machine), at, at);
    let fkey = sundial_store::executions::ExecKey::of(&f);
    let zombie = stale_claim(&env, &f, at).await?;
    let stale = Invocation::of(&zombie.snapshot.exec, zombie.fence.token, zombie.fence.attempt);
    let fname = execution_name(&f.global_id(), run_of(&zombie.snapshot.exec));
    let direct = StepFunctionsCaller::new(env.clients.sfn.clone());
    let first = direct.start(&machine, &fname, &stale).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    assert!(!first.adopted);
    assert_eq!(deliver(&worker, &f).await?, Disposition::Delete);
    // THEN the new holder adopted the zombie's execution and tracked it to SUCCEEDED: one
    // execution for the fire; the stale worker's finish is refused
    let snap = fixtures::snapshot(&env, &fkey).await?;
    assert_eq!(snap.exec.status, ExecStatus::Succeeded, "{:?}", snap.exec.last_error);
    assert_eq!(snap.exec.fencing_token, zombie.fence.token + 1);
    assert_eq!(noted_runs(&snap.exec), vec![first.arn.clone()]);
    let runs = machine_runs(&env, &machine).await?;
    assert_eq!(runs.iter().filter(|(n, _)| *n == fname).count(), 1, "{runs:?}");
    assert_eq!(runs.len(), 2, "{runs:?}");
    let late = store.finish(&fkey, &zombie.fence, &Finish::Succeeded, Utc::now()).await?;
    assert!(matches!(late, FinishResult::TakenOver { .. }), "{late:?}");

    // WHEN a fire runs a machine that fails
    let fail = serde_json::json!({"StartAt": "Refuse", "States": {
        "Refuse": {"Type": "Fail", "Error": "SettlementError", "Cause": "ledger closed"}}});
    let failing = tenant_machine(&env, "acme-refuse", "acme", fail).await?;
    let mut def = machine_job(&failing);
    def.retry.max_attempts = 1;
    let g = fixtures::ready_execution("acme", "refuse", def, past, past);
    let gkey = fixtures::put_execution(&env, &g).await?;
    assert_eq!(deliver(&worker, &g).await?, Disposition::Delete);
    // THEN the attempt failed with the execution's error and cause
    let snap = fixtures::snapshot(&env, &gkey).await?;
    assert!(matches!(snap.exec.status, ExecStatus::Failed | ExecStatus::Dead), "{:?}", snap.exec.status);
    let (code, message) = snap.exec.last_error.clone().unwrap_or_default();
    assert_eq!(code, "SettlementError");
    assert!(message.contains("FAILED") && message.contains("ledger closed"), "{message}");

    // WHEN a job names a machine that is not acme's (tagged for globex)
    let pass = serde_json::json!({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": true}}});
    let other = tenant_machine(&env, "globex-settle", "globex", pass).await?;
    let h = fixtures::ready_execution("acme", "sneaky", machine_job(&other), past, past);
    let hkey = fixtures::put_execution(&env, &h).await?;
    assert_eq!(deliver(&worker, &h).await?, Disposition::Delete);
    // THEN it FAILED on the ownership check and globex's machine never ran
    let snap = fixtures::snapshot(&env, &hkey).await?;
    assert_eq!(snap.exec.last_error.as_ref().map(|(c, _)| c.as_str()), Some("TargetNotOwned"));
    assert!(machine_runs(&env, &other).await?.is_empty());
    env.cleanup().await;
    Ok(())
}

/// A fire whose execution outlasts the job's `timeoutSecs`: the attempt stops the execution, so
/// that the retry (a new run, a new execution) never runs beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_functions_execution_that_outlasts_the_timeout_is_stopped() -> Result<()> {
    Box::pin(step_functions_timeout()).await
}

async fn step_functions_timeout() -> Result<()> {
    use sundial_core::execution::target::stepfunctions::execution_name;
    let owned = TestEnv::new("target-sfn-timeout").await?;
    let (worker, _) = fixtures::worker_with(&owned, fixtures::settings("w2"), Handlers::new())?;
    let (env, worker) = (&owned, &worker);
    // GIVEN a machine that waits 30 s, and a job with a 2 s timeout
    let long_wait = serde_json::json!({"StartAt": "Hold", "States": {
        "Hold": {"Type": "Wait", "Seconds": 30, "Next": "Done"},
        "Done": {"Type": "Pass", "End": true}}});
    let machine = tenant_machine(env, "acme-long", "acme", long_wait).await?;
    let mut def = machine_job(&machine);
    def.timeout_secs = 2;
    let past = Utc::now() - Duration::seconds(60);
    let e = fixtures::ready_execution("acme", "long", def, past, past);
    let key = fixtures::put_execution(env, &e).await?;
    // WHEN a worker runs the fire
    assert_eq!(deliver(worker, &e).await?, Disposition::Delete);
    // THEN the attempt timed out and its execution was stopped (ABORTED), not left running
    let snap = fixtures::snapshot(env, &key).await?;
    assert_eq!(
        snap.exec.last_error.as_ref().map(|(c, _)| c.as_str()),
        Some("Timeout"),
        "{:?}",
        snap.exec.last_error
    );
    let name = execution_name(&e.global_id(), 1);
    assert_eq!(machine_runs(env, &machine).await?, vec![(name, "ABORTED".to_string())]);
    owned.cleanup().await;
    Ok(())
}

/// An ECS cluster for the test: its ARN.
async fn ecs_cluster(env: &TestEnv, name: &str) -> Result<String> {
    let prefix = env.cfg.jobs_table.trim_end_matches("sundial-jobs").to_string();
    let out = env.clients.ecs.create_cluster().cluster_name(format!("{prefix}{name}")).send().await?;
    out.cluster().and_then(|c| c.cluster_arn()).map(str::to_string).context("cluster ARN")
}

/// A task definition tagged for `owner` whose container `main` runs for `run_secs` and exits
/// with `exit_code`: the emulated container of docs/emulators.md (no container runtime here;
/// MiniStack's tasks run until stopped). Its ARN, with the revision.
async fn tenant_task_definition(
    env: &TestEnv,
    family: &str,
    owner: &str,
    run_secs: u32,
    exit_code: i32,
) -> Result<String> {
    use aws_sdk_ecs::types::{ContainerDefinition, KeyValuePair, Tag};
    let prefix = env.cfg.jobs_table.trim_end_matches("sundial-jobs").to_string();
    let var = |k: &str, v: String| KeyValuePair::builder().name(k).value(v).build();
    let main = ContainerDefinition::builder()
        .name("main")
        .image("public.ecr.aws/docker/library/busybox:latest")
        .memory(512)
        .essential(true)
        .environment(var("SUNDIAL_EMULATED_RUN_SECS", run_secs.to_string()))
        .environment(var("SUNDIAL_EMULATED_EXIT_CODE", exit_code.to_string()))
        .build();
    let out = env
        .clients
        .ecs
        .register_task_definition()
        .family(format!("{prefix}{family}"))
        .container_definitions(main)
        .tags(Tag::builder().key("sundial-tenant").value(owner).build())
        .send()
        .await?;
    out.task_definition()
        .and_then(|t| t.task_definition_arn())
        .map(str::to_string)
        .context("task definition ARN")
}

/// The network the deployment gives acme's tasks (its `ecsSubnets`, `ecsSecurityGroups`).
const ECS_SUBNET: &str = "subnet-0a1b2c3d";
const ECS_GROUP: &str = "sg-0a1b2c3d";

/// The deployment's allowlist for the ECS cases: acme may run any task definition on any
/// cluster (ownership is the tag's judgement), in one subnet with one security group.
fn ecs_allowlist() -> Result<sundial_model::outbound::TenantTargets> {
    sundial_model::outbound::TenantTargets::parse(&format!(
        r#"{{"acme": {{"ecsClusters": ["*"], "ecsTaskDefinitions": ["*"], "pools": ["default"],
                      "ecsSubnets": ["{ECS_SUBNET}"], "ecsSecurityGroups": ["{ECS_GROUP}"]}}}}"#
    ))
    .map_err(anyhow::Error::msg)
}

fn task_job(cluster: &str, task_definition: &str) -> JobDefinition {
    let mut def = JobDefinition::new(
        ScheduleSpec::new("0 0 2 * * *", "UTC"),
        Target::Ecs(EcsTarget {
            cluster_arn: cluster.to_string(),
            task_definition_arn: task_definition.to_string(),
            container_name: "main".into(),
            launch_type: sundial_model::EcsLaunchType::Fargate,
            subnets: vec![ECS_SUBNET.into()],
            security_groups: vec![ECS_GROUP.into()],
            assign_public_ip: false,
        }),
    );
    def.timeout_secs = 60;
    def.retry.max_attempts = 1;
    def
}

/// The tasks of `cluster` started by `name`, running or stopped, described.
async fn tasks_started_by(env: &TestEnv, cluster: &str, name: &str) -> Result<Vec<aws_sdk_ecs::types::Task>> {
    use aws_sdk_ecs::types::DesiredStatus;
    let mut arns = Vec::new();
    for status in [DesiredStatus::Running, DesiredStatus::Stopped] {
        let out = env
            .clients
            .ecs
            .list_tasks()
            .cluster(cluster)
            .started_by(name)
            .desired_status(status)
            .send()
            .await?;
        arns.extend(out.task_arns().iter().cloned());
    }
    arns.sort();
    arns.dedup();
    if arns.is_empty() {
        return Ok(vec![]);
    }
    let out = env.clients.ecs.describe_tasks().cluster(cluster).set_tasks(Some(arns)).send().await?;
    Ok(out.tasks().to_vec())
}

/// The environment the fire's container `main` got.
fn overrides_of(task: &aws_sdk_ecs::types::Task) -> std::collections::BTreeMap<String, String> {
    task.overrides()
        .map(|o| o.container_overrides())
        .unwrap_or_default()
        .iter()
        .filter(|c| c.name() == Some("main"))
        .flat_map(|c| c.environment())
        .filter_map(|kv| Some((kv.name()?.to_string(), kv.value()?.to_string())))
        .collect()
}

/// The ECS tasks noted on `e`'s timeline.
fn noted_tasks(e: &Execution) -> Vec<String> {
    e.timeline
        .iter()
        .filter_map(|ev| ev.code.as_deref()?.strip_prefix("EcsTask "))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ecs_target_runs_each_fire_as_one_task_judged_by_its_exit_code_and_a_takeover_adopts_it(
) -> Result<()> {
    Box::pin(ecs_target()).await
}

async fn ecs_target() -> Result<()> {
    // GIVEN a cluster and acme's task definitions (one that takes 30 s), and a worker. On moto
    // (patched, docs/emulators.md) tasks stop by themselves with their container's exit code;
    // MiniStack has no container runtime without Docker, so its tasks run until stopped: the
    // exit-code cases run on moto only. Each case is its own boxed future: one body holding
    // every case's worker call takes more stack than a test thread has, unoptimized.
    let env = TestEnv::new("target-ecs").await?;
    let cluster = ecs_cluster(&env, "batch").await?;
    let mut cfg = env.cfg.clone();
    cfg.targets.tenants = Some(ecs_allowlist()?);
    let (worker, _) = fixtures::worker_with_config(&env, cfg, fixtures::settings("w2"), Handlers::new())?;
    let w = EcsWorld { env: &env, cluster: &cluster, worker: &worker };
    Box::pin(ecs_takeover_then_timeout(&w)).await?;
    Box::pin(ecs_not_owned(&w)).await?;
    Box::pin(ecs_network_not_given(&w)).await?;
    Box::pin(ecs_planted_tasks_not_adopted(&w)).await?;
    Box::pin(ecs_adopts_a_task_named_before_keyed_names(&w)).await?;
    if sundial_tests::on_moto() {
        Box::pin(ecs_exit_codes(&w)).await?;
    }
    env.cleanup().await;
    Ok(())
}

/// What the ECS cases share.
struct EcsWorld<'a> {
    env: &'a TestEnv,
    cluster: &'a str,
    worker: &'a Worker,
}

fn spec_of(def: &JobDefinition) -> &EcsTarget {
    let Target::Ecs(t) = &def.target else { panic!("an ecs target") };
    t
}

async fn ecs_takeover_then_timeout(w: &EcsWorld<'_>) -> Result<()> {
    use sundial_core::execution::target::ecs::{EcsCaller, RunNames};
    use sundial_core::execution::target::stepfunctions::run_of;
    let (env, cluster, worker) = (w.env, w.cluster, w.worker);
    let slow = tenant_task_definition(env, "acme-slow", "acme", 30, 0).await?;
    let store = fixtures::store(env);
    let past = Utc::now() - Duration::seconds(60);
    // WHEN another fire is claimed by a worker that runs its task and then stalls past its lease,
    // and a second worker takes it over (a new fencing token, so other overrides) with a 2 s
    // timeout that the slow task outlasts
    let at = past - Duration::seconds(30);
    let mut def = task_job(cluster, &slow);
    def.timeout_secs = 2;
    def.retry.max_attempts = 3;
    let f = fixtures::ready_execution("acme", "settle", def.clone(), at, at);
    let fkey = sundial_store::executions::ExecKey::of(&f);
    let zombie = stale_claim(env, &f, at).await?;
    let stale = Invocation::of(&zombie.snapshot.exec, zombie.fence.token, zombie.fence.attempt);
    let fname = RunNames::default().name(&f.global_id(), run_of(&zombie.snapshot.exec));
    let direct = EcsCaller::new(env.clients.ecs.clone());
    let first = direct
        .run(spec_of(&def), std::slice::from_ref(&fname), &[], &stale)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    assert!(!first.adopted);
    assert_eq!(deliver(worker, &f).await?, Disposition::Delete);
    // THEN the new holder adopted the zombie's task (its ARN on the timeline, one task of that
    // run, still with the token that started it), and when the attempt timed out it stopped the
    // task, so no retry can run beside it; the stale worker's finish is refused
    let snap = fixtures::snapshot(env, &fkey).await?;
    assert_eq!(
        snap.exec.fencing_token,
        zombie.fence.token + 1,
        "{:?} {:?}",
        snap.exec.status,
        snap.exec.last_error
    );
    assert_eq!(
        noted_tasks(&snap.exec),
        vec![first.arn.clone()],
        "{:?} {:?}",
        snap.exec.status,
        snap.exec.last_error
    );
    assert_eq!(
        snap.exec.last_error.as_ref().map(|(c, _)| c.as_str()),
        Some("Timeout"),
        "{:?}",
        snap.exec.last_error
    );
    let tasks = tasks_started_by(env, cluster, &fname).await?;
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(overrides_of(&tasks[0]).get("SUNDIAL_FENCING_TOKEN"), Some(&zombie.fence.token.to_string()));
    assert_eq!(tasks[0].last_status(), Some("STOPPED"), "{:?}", tasks[0]);
    assert_eq!(tasks[0].stop_code().map(|c| c.as_str()), Some("UserInitiated"));
    assert!(tasks[0].stopped_reason().unwrap_or_default().contains("timeoutSecs = 2"), "{:?}", tasks[0]);
    let late = store.finish(&fkey, &zombie.fence, &Finish::Succeeded, Utc::now()).await?;
    assert!(matches!(late, FinishResult::TakenOver { .. }), "{late:?}");

    Ok(())
}

async fn ecs_not_owned(w: &EcsWorld<'_>) -> Result<()> {
    use sundial_core::execution::target::ecs::RunNames;
    let (env, cluster, worker) = (w.env, w.cluster, w.worker);
    let past = Utc::now() - Duration::seconds(60);
    // WHEN a job names a task definition that is not acme's (tagged for globex)
    let other = tenant_task_definition(env, "globex-settle", "globex", 1, 0).await?;
    let h = fixtures::ready_execution("acme", "sneaky", task_job(cluster, &other), past, past);
    let hkey = fixtures::put_execution(env, &h).await?;
    assert_eq!(deliver(worker, &h).await?, Disposition::Delete);
    // THEN it FAILED on the ownership check and no task of globex's ran
    let snap = fixtures::snapshot(env, &hkey).await?;
    assert_eq!(snap.exec.last_error.as_ref().map(|(c, _)| c.as_str()), Some("TargetNotOwned"));
    assert!(tasks_started_by(env, cluster, &RunNames::default().name(&h.global_id(), 1)).await?.is_empty());

    Ok(())
}

async fn ecs_network_not_given(w: &EcsWorld<'_>) -> Result<()> {
    use sundial_core::execution::target::ecs::RunNames;
    let (env, cluster, worker) = (w.env, w.cluster, w.worker);
    let past = Utc::now() - Duration::seconds(60);
    // WHEN a stored job of acme (written before the allowlist, or straight to the table) names
    // its own task definition in a subnet, then a security group, the deployment never gave it
    let own = tenant_task_definition(env, "acme-netless", "acme", 1, 0).await?;
    for (job, subnet, group, field) in [
        ("net-a", "subnet-0bbb0000", ECS_GROUP, "target.subnets[0]"),
        ("net-b", ECS_SUBNET, "sg-0bbb0000", "target.securityGroups[0]"),
    ] {
        let mut def = task_job(cluster, &own);
        let Target::Ecs(t) = &mut def.target else { unreachable!() };
        (t.subnets, t.security_groups) = (vec![subnet.into()], vec![group.into()]);
        let e = fixtures::ready_execution("acme", job, def, past, past);
        let key = fixtures::put_execution(env, &e).await?;
        assert_eq!(deliver(worker, &e).await?, Disposition::Delete);
        // THEN the worker refused it before RunTask, naming the field, and no task ran
        let snap = fixtures::snapshot(env, &key).await?;
        let (code, message) = snap.exec.last_error.clone().unwrap_or_default();
        assert_eq!((snap.exec.status, code.as_str()), (ExecStatus::Failed, "TargetNotAllowed"), "{message}");
        assert!(message.starts_with(field), "{message}");
        assert!(tasks_started_by(env, cluster, &RunNames::default().name(&e.global_id(), 1))
            .await?
            .is_empty());
    }
    Ok(())
}

/// Runs a task of `definition` on `cluster` as another principal would: started by `name`,
/// tagged for `owner`, its container given `execution` as `SUNDIAL_EXECUTION_ID`.
async fn plant_task(
    env: &TestEnv,
    cluster: &str,
    definition: &str,
    name: &str,
    owner: &str,
    execution: &str,
) -> Result<String> {
    use aws_sdk_ecs::types::{ContainerOverride, KeyValuePair, LaunchType, Tag, TaskOverride};
    let env_var = KeyValuePair::builder().name("SUNDIAL_EXECUTION_ID").value(execution).build();
    let out = env
        .clients
        .ecs
        .run_task()
        .cluster(cluster)
        .task_definition(definition)
        .launch_type(LaunchType::Fargate)
        .started_by(name)
        .tags(Tag::builder().key("sundial-tenant").value(owner).build())
        .overrides(
            TaskOverride::builder()
                .container_overrides(ContainerOverride::builder().name("main").environment(env_var).build())
                .build(),
        )
        .send()
        .await?;
    out.tasks().first().and_then(|t| t.task_arn()).map(str::to_string).context("planted task ARN")
}

async fn ecs_planted_tasks_not_adopted(w: &EcsWorld<'_>) -> Result<()> {
    use sundial_core::execution::target::ecs::RunNames;
    let (env, cluster, worker) = (w.env, w.cluster, w.worker);
    let past = Utc::now() - Duration::seconds(60);
    // GIVEN acme's fire (2 s timeout) and, before it runs, tasks another principal started under
    // the fire's run name: globex's definition carrying acme's execution id; acme's own
    // definition tagged for globex; acme's own definition, tagged acme, for another fire
    let own = tenant_task_definition(env, "acme-planted", "acme", 30, 0).await?;
    let theirs = tenant_task_definition(env, "globex-planted", "globex", 30, 0).await?;
    let mut def = task_job(cluster, &own);
    def.timeout_secs = 2;
    let e = fixtures::ready_execution("acme", "planted", def, past, past);
    let (id, name) = (e.global_id(), RunNames::default().name(&e.global_id(), 1));
    let planted = [
        plant_task(env, cluster, &theirs, &name, "globex", &id).await?,
        plant_task(env, cluster, &own, &name, "globex", &id).await?,
        plant_task(env, cluster, &own, &name, "acme", "acme:other@1764469800000").await?,
    ];
    let key = fixtures::put_execution(env, &e).await?;
    // WHEN acme's worker runs the fire, which times out
    assert_eq!(deliver(worker, &e).await?, Disposition::Delete);
    // THEN it ran a task of its own rather than adopting one of them, and stopped only its own
    let snap = fixtures::snapshot(env, &key).await?;
    let noted = noted_tasks(&snap.exec);
    assert_eq!(noted.len(), 1, "{noted:?} {:?}", snap.exec.last_error);
    assert!(!planted.contains(&noted[0]), "adopted a planted task: {noted:?}");
    let tasks = tasks_started_by(env, cluster, &name).await?;
    assert_eq!(tasks.len(), 4, "{tasks:?}");
    for t in &tasks {
        let stopped_by_acme = t.stopped_reason().unwrap_or_default().contains("timeoutSecs");
        let mine = t.task_arn() == Some(noted[0].as_str());
        assert_eq!(stopped_by_acme, mine, "{t:?}");
    }
    Ok(())
}

async fn ecs_adopts_a_task_named_before_keyed_names(w: &EcsWorld<'_>) -> Result<()> {
    use sundial_core::execution::target::ecs::{EcsCaller, MAX_NAME};
    use sundial_core::execution::target::stepfunctions::{fire_name, run_of};
    let (env, cluster, worker) = (w.env, w.cluster, w.worker);
    // GIVEN a fire whose task a claim started under the name runs had before keyed names (a
    // worker of the previous release), and which then stalled past its lease
    let slow = tenant_task_definition(env, "acme-legacy", "acme", 30, 0).await?;
    let at = Utc::now() - Duration::seconds(90);
    let mut def = task_job(cluster, &slow);
    def.timeout_secs = 2;
    def.retry.max_attempts = 3;
    let f = fixtures::ready_execution("acme", "legacy", def.clone(), at, at);
    let key = sundial_store::executions::ExecKey::of(&f);
    let zombie = stale_claim(env, &f, at).await?;
    let stale = Invocation::of(&zombie.snapshot.exec, zombie.fence.token, zombie.fence.attempt);
    let old = fire_name(&f.global_id(), run_of(&zombie.snapshot.exec), MAX_NAME);
    let direct = EcsCaller::new(env.clients.ecs.clone());
    let first = direct.run(spec_of(&def), &[old], &[], &stale).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    // WHEN this release's worker takes the fire over
    assert_eq!(deliver(worker, &f).await?, Disposition::Delete);
    // THEN it adopted that task rather than running a second one
    let snap = fixtures::snapshot(env, &key).await?;
    assert_eq!(noted_tasks(&snap.exec), vec![first.arn], "{:?}", snap.exec.last_error);
    Ok(())
}

async fn ecs_exit_codes(w: &EcsWorld<'_>) -> Result<()> {
    use sundial_core::execution::target::ecs::{EcsCaller, RunNames};
    use sundial_core::execution::target::stepfunctions::run_of;
    let (env, cluster, worker) = (w.env, w.cluster, w.worker);
    let past = Utc::now() - Duration::seconds(60);
    // WHEN a fire runs a task that exits 0 after a second
    let quick = tenant_task_definition(env, "acme-settle", "acme", 1, 0).await?;
    let e = fixtures::ready_execution("acme", "settle", task_job(cluster, &quick), past, past);
    let key = fixtures::put_execution(env, &e).await?;
    assert_eq!(deliver(worker, &e).await?, Disposition::Delete);
    // THEN it SUCCEEDED once its task stopped with exit code 0: one task, started by the fire's
    // first run, its container given the fire's identity and token, its ARN on the timeline
    let snap = fixtures::snapshot(env, &key).await?;
    assert_eq!(snap.exec.status, ExecStatus::Succeeded, "{:?}", snap.exec.last_error);
    let name = RunNames::default().name(&e.global_id(), 1);
    let tasks = tasks_started_by(env, cluster, &name).await?;
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(noted_tasks(&snap.exec), vec![tasks[0].task_arn().unwrap_or_default().to_string()]);
    let got = overrides_of(&tasks[0]);
    assert_eq!(got.get("SUNDIAL_EXECUTION_ID"), Some(&e.global_id()));
    assert_eq!(got.get("SUNDIAL_FENCING_TOKEN").map(String::as_str), Some("1"));
    let whole: serde_json::Value =
        serde_json::from_str(got.get("SUNDIAL_INVOCATION").context("invocation")?)?;
    assert_eq!(whole["executionId"].as_str(), Some(e.global_id().as_str()));
    assert_eq!(
        tasks[0].containers().iter().find(|c| c.name() == Some("main")).and_then(|c| c.exit_code()),
        Some(0)
    );

    // WHEN a fire's task exits 3
    let failing = tenant_task_definition(env, "acme-refuse", "acme", 1, 3).await?;
    let g = fixtures::ready_execution("acme", "refuse", task_job(cluster, &failing), past, past);
    let gkey = fixtures::put_execution(env, &g).await?;
    assert_eq!(deliver(worker, &g).await?, Disposition::Delete);
    // THEN the attempt failed, naming the container and its exit code
    let snap = fixtures::snapshot(env, &gkey).await?;
    assert!(matches!(snap.exec.status, ExecStatus::Failed | ExecStatus::Dead), "{:?}", snap.exec.status);
    let (code, message) = snap.exec.last_error.clone().unwrap_or_default();
    assert_eq!(code, "EcsContainerExit");
    assert!(message.contains("main exited with 3"), "{message}");

    // WHEN a fire's task is run by a zombie, and the new holder takes over while it runs
    let at = past - Duration::seconds(45);
    let mut def = task_job(cluster, &quick);
    def.retry.max_attempts = 3;
    let k = fixtures::ready_execution("acme", "settle", def, at, at);
    let kkey = sundial_store::executions::ExecKey::of(&k);
    let zombie = stale_claim(env, &k, at).await?;
    let stale = Invocation::of(&zombie.snapshot.exec, zombie.fence.token, zombie.fence.attempt);
    let kname = RunNames::default().name(&k.global_id(), run_of(&zombie.snapshot.exec));
    let direct = EcsCaller::new(env.clients.ecs.clone());
    let first = direct
        .run(spec_of(&k.definition), std::slice::from_ref(&kname), &[], &stale)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    assert_eq!(deliver(worker, &k).await?, Disposition::Delete);
    // THEN it tracked the adopted task to its exit 0: SUCCEEDED, one task for the fire
    let snap = fixtures::snapshot(env, &kkey).await?;
    assert_eq!(snap.exec.status, ExecStatus::Succeeded, "{:?}", snap.exec.last_error);
    assert_eq!(noted_tasks(&snap.exec), vec![first.arn.clone()]);
    assert_eq!(tasks_started_by(env, cluster, &kname).await?.len(), 1);
    Ok(())
}
