//! ECS cases: what the `ecs` target relies on: the tags of a cluster and a task definition, a
//! task's course (PROVISIONING or RUNNING, then STOPPED with its essential container's exit code,
//! absent before; `TaskFailedToStart` without one), `RunTask`'s `clientToken` (the same token and
//! parameters: the same task; other parameters: `ConflictException`), `ListTasks` by `startedBy`
//! and `desiredStatus`, `StopTask`, and the refusals of what does not exist.
//!
//! No emulator runs a container here (no Docker), so a task's run is the emulated container's
//! (`SUNDIAL_EMULATED_RUN_SECS`, `SUNDIAL_EMULATED_EXIT_CODE`: docs/simulation.md): the
//! simulator's and moto's as `localstack/sundial_emulator.py` patches it. MiniStack 1.5.33 keeps
//! tasks RUNNING forever and ignores `clientToken` (its known gaps, docs/emulators.md). Task
//! definitions give their container `memory` and no `networkMode`, and tasks run FARGATE with no
//! `networkConfiguration`: moto refuses a task without memory and wants real subnets for `awsvpc`.
//! A case waits for a stop at most 10 s of (simulated, or the emulator's wall-clock) time.

use super::{ensure, fail, Outcome};
use crate::{EXIT_CODE_VAR, RUN_SECS_VAR};
use aws_sdk_ecs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_ecs::operation::run_task::builders::RunTaskFluentBuilder;
use aws_sdk_ecs::operation::run_task::RunTaskOutput;
use aws_sdk_ecs::types::{
    ContainerDefinition, ContainerOverride, DesiredStatus, KeyValuePair, LaunchType, Tag, Task,
    TaskDefinitionField, TaskOverride, TaskStopCode,
};
use aws_sdk_ecs::Client;
use std::time::Duration;

/// A cluster `prefix` + `c` and a task definition `prefix` + `family` whose one essential
/// container `main` has `env`, both tagged `sundial-tenant=t1`: (cluster ARN, definition ARN).
async fn given(
    ecs: &Client,
    prefix: &str,
    family: &str,
    env: &[(&str, &str)],
) -> Result<(String, String), String> {
    let tag = || Tag::builder().key("sundial-tenant").value("t1").build();
    let c = ecs
        .create_cluster()
        .cluster_name(format!("{prefix}c"))
        .tags(tag())
        .send()
        .await
        .map_err(fail("CreateCluster"))?;
    let cluster = c.cluster().and_then(|c| c.cluster_arn()).ok_or("CreateCluster: no ARN")?.to_string();
    let main = ContainerDefinition::builder()
        .name("main")
        .image("public.ecr.aws/docker/library/busybox:latest")
        .memory(128)
        .essential(true)
        .set_environment(Some(env.iter().map(|(k, v)| pair(k, v)).collect()))
        .build();
    let d = ecs
        .register_task_definition()
        .family(format!("{prefix}{family}"))
        .container_definitions(main)
        .tags(tag())
        .send()
        .await
        .map_err(fail("RegisterTaskDefinition"))?;
    let def = d.task_definition().and_then(|d| d.task_definition_arn()).ok_or("no definition ARN")?;
    Ok((cluster, def.to_string()))
}

fn pair(k: &str, v: &str) -> KeyValuePair {
    KeyValuePair::builder().name(k).value(v).build()
}

/// Overrides of `main`'s environment.
fn env_override(env: &[(&str, &str)]) -> TaskOverride {
    let main = ContainerOverride::builder()
        .name("main")
        .set_environment(Some(env.iter().map(|(k, v)| pair(k, v)).collect()));
    TaskOverride::builder().container_overrides(main.build()).build()
}

/// One FARGATE task of `def` on `cluster`, started by `started_by`, `main`'s environment
/// overridden by `env` (the request, to `send`).
fn run(
    ecs: &Client,
    (cluster, def): (&str, &str),
    started_by: &str,
    env: &[(&str, &str)],
    token: Option<&str>,
) -> RunTaskFluentBuilder {
    ecs.run_task()
        .cluster(cluster)
        .task_definition(def)
        .launch_type(LaunchType::Fargate)
        .started_by(started_by)
        .overrides(env_override(env))
        .set_client_token(token.map(str::to_string))
}

fn task_arn(out: &RunTaskOutput) -> Result<String, String> {
    let arns: Vec<&str> = out.tasks().iter().filter_map(|t| t.task_arn()).collect();
    match arns[..] {
        [arn] => Ok(arn.to_string()),
        _ => Err(format!("RunTask started {arns:?}, not one task")),
    }
}

async fn describe(ecs: &Client, cluster: &str, arn: &str) -> Result<Task, String> {
    let d = ecs.describe_tasks().cluster(cluster).tasks(arn).send().await.map_err(fail("DescribeTasks"))?;
    d.tasks().first().cloned().ok_or_else(|| format!("DescribeTasks: no {arn} ({:?})", d.failures()))
}

/// Describes `arn` until it is STOPPED (at most 10 s: an emulated run here lasts a second).
async fn stopped(ecs: &Client, cluster: &str, arn: &str) -> Result<Task, String> {
    for _ in 0..20 {
        let t = describe(ecs, cluster, arn).await?;
        if t.last_status() == Some("STOPPED") {
            return Ok(t);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err(format!("{arn} not STOPPED after 10 s"))
}

fn exit_code(t: &Task) -> Option<i32> {
    t.containers().first().and_then(|c| c.exit_code())
}

/// The task ARNs `ListTasks` answers (sorted), by `startedBy` or `family` and `desired`.
async fn listed(
    ecs: &Client,
    cluster: &str,
    started_by: Option<&str>,
    family: Option<String>,
    desired: Option<DesiredStatus>,
) -> Result<Vec<String>, String> {
    let l = ecs
        .list_tasks()
        .cluster(cluster)
        .set_started_by(started_by.map(str::to_string))
        .set_family(family)
        .set_desired_status(desired)
        .send()
        .await
        .map_err(fail("ListTasks"))?;
    let mut arns = l.task_arns().to_vec();
    arns.sort();
    Ok(arns)
}

async fn stop(ecs: &Client, cluster: &str, arn: &str, reason: &str) -> Result<Task, String> {
    let s =
        ecs.stop_task().cluster(cluster).task(arn).reason(reason).send().await.map_err(fail("StopTask"))?;
    s.task().cloned().ok_or_else(|| "StopTask answered no task".to_string())
}

async fn tags_of(ecs: &Client, arn: &str) -> Result<Vec<(String, String)>, String> {
    let t =
        ecs.list_tags_for_resource().resource_arn(arn).send().await.map_err(fail("ListTagsForResource"))?;
    Ok(t.tags().iter().map(|t| (t.key().unwrap_or("").into(), t.value().unwrap_or("").into())).collect())
}

/// The tags of `given`'s cluster and definition, as the target's ownership check reads them, and
/// the family's latest revision by its name.
async fn tagged(ecs: &Client, (cluster, def): (&str, &str), family: &str) -> Outcome {
    let tenant = vec![("sundial-tenant".to_string(), "t1".to_string())];
    ensure!(tags_of(ecs, cluster).await? == tenant, "the cluster's tags");
    ensure!(tags_of(ecs, def).await? == tenant, "the task definition's tags");
    let d = ecs
        .describe_task_definition()
        .task_definition(family)
        .include(TaskDefinitionField::Tags)
        .send()
        .await
        .map_err(fail("DescribeTaskDefinition"))?;
    let latest = d.task_definition().map(|d| (d.task_definition_arn(), d.revision()));
    ensure!(latest == Some((Some(def), 1)), "the family's latest revision: {latest:?}");
    let tags: Vec<(&str, &str)> =
        d.tags().iter().map(|t| (t.key().unwrap_or(""), t.value().unwrap_or(""))).collect();
    ensure!(tags == [("sundial-tenant", "t1")], "DescribeTaskDefinition include TAGS: {tags:?}");
    Ok(())
}

pub(super) async fn run_task_exit_code(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    let ecs = Client::new(sdk);
    let (cluster, def) = given(&ecs, prefix, "exit", &[(EXIT_CODE_VAR, "3")]).await?;
    tagged(&ecs, (&cluster, &def), &format!("{prefix}exit")).await?;
    let by = format!("{prefix}fire");
    // the definition's exit code, the override's run time and a marker the target would pass
    let env = [(RUN_SECS_VAR, "1"), ("SUNDIAL_FIRE", "r1")];
    let first =
        task_arn(&run(&ecs, (&cluster, &def), &by, &env, None).send().await.map_err(fail("RunTask"))?)?;
    let t = describe(&ecs, &cluster, &first).await?;
    let early = (t.last_status(), t.desired_status(), exit_code(&t));
    ensure!(
        matches!(early, (Some("PROVISIONING" | "PENDING" | "RUNNING"), Some("RUNNING"), None)),
        "right after RunTask (lastStatus, desiredStatus, exitCode): {early:?}"
    );
    // an override that makes the container never start
    let never = [(RUN_SECS_VAR, "1"), (EXIT_CODE_VAR, "none")];
    let second =
        task_arn(&run(&ecs, (&cluster, &def), &by, &never, None).send().await.map_err(fail("RunTask"))?)?;
    let t = stopped(&ecs, &cluster, &first).await?;
    let end = (
        t.desired_status(),
        t.stop_code(),
        exit_code(&t),
        t.containers().first().and_then(|c| c.last_status()),
    );
    ensure!(
        end == (Some("STOPPED"), Some(&TaskStopCode::EssentialContainerExited), Some(3), Some("STOPPED")),
        "stopped (desiredStatus, stopCode, exitCode, the container's lastStatus): {end:?}"
    );
    let seen: Vec<(&str, &str)> = t
        .overrides()
        .map(|o| o.container_overrides())
        .unwrap_or_default()
        .iter()
        .flat_map(|c| c.environment().iter().map(|e| (e.name().unwrap_or(""), e.value().unwrap_or(""))))
        .collect();
    ensure!(seen == env, "the overrides' environment as DescribeTasks shows it: {seen:?}");
    let t = stopped(&ecs, &cluster, &second).await?;
    let failed = (t.stop_code(), t.stopped_reason().unwrap_or(""), exit_code(&t));
    ensure!(
        failed.0 == Some(&TaskStopCode::TaskFailedToStart)
            && failed.1.starts_with("CannotPullContainerError")
            && failed.2.is_none(),
        "a container that never starts (stopCode, stoppedReason, exitCode): {failed:?}"
    );
    let mut both = vec![first, second];
    both.sort();
    let done = listed(&ecs, &cluster, Some(&by), None, Some(DesiredStatus::Stopped)).await?;
    ensure!(done == both, "ListTasks desiredStatus=STOPPED: {done:?}");
    let running = listed(&ecs, &cluster, Some(&by), None, None).await?;
    ensure!(running.is_empty(), "the default (RUNNING) listing still has {running:?}");
    Ok(())
}

pub(super) async fn client_token(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    let ecs = Client::new(sdk);
    let (cluster, def) = given(&ecs, prefix, "token", &[(RUN_SECS_VAR, "600")]).await?;
    let by = format!("{prefix}fire");
    let go = |env: &'static [(&'static str, &'static str)], token: &'static str| {
        run(&ecs, (&cluster, &def), &by, env, Some(token)).send()
    };
    let first = task_arn(&go(&[("SUNDIAL_FIRE", "r1")], "fire-r1").await.map_err(fail("RunTask"))?)?;
    let out = async {
        // a retry of a lost answer: the same token and parameters are the same task
        let again =
            task_arn(&go(&[("SUNDIAL_FIRE", "r1")], "fire-r1").await.map_err(fail("RunTask again"))?)?;
        ensure!(again == first, "the same clientToken and parameters started {again} (first {first})");
        let tasks = listed(&ecs, &cluster, Some(&by), None, None).await?;
        ensure!(tasks == [first.clone()], "one task for one token: {tasks:?}");
        // the same token with another environment is refused
        let e =
            go(&[("SUNDIAL_FIRE", "r2")], "fire-r1").await.err().ok_or("a reused token started a task")?;
        ensure!(
            e.as_service_error().is_some_and(|s| s.is_conflict_exception()),
            "the same token with other parameters: {e:?}"
        );
        // another token is another task
        let other = task_arn(&go(&[("SUNDIAL_FIRE", "r1")], "fire-r2").await.map_err(fail("RunTask"))?)?;
        ensure!(other != first, "another clientToken answered the first task");
        let _ = stop(&ecs, &cluster, &other, "contract cleanup").await;
        Ok(())
    }
    .await;
    let _ = stop(&ecs, &cluster, &first, "contract cleanup").await;
    out
}

pub(super) async fn list_by_started_by(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    let ecs = Client::new(sdk);
    let (cluster, def) = given(&ecs, prefix, "list", &[(RUN_SECS_VAR, "600")]).await?;
    let (s1, s2) = (format!("{prefix}s1"), format!("{prefix}s2"));
    let mut arns = Vec::new();
    for by in [&s1, &s1, &s2] {
        arns.push(task_arn(
            &run(&ecs, (&cluster, &def), by, &[], None).send().await.map_err(fail("RunTask"))?,
        )?);
    }
    let out = async {
        let sorted = |mut v: Vec<String>| {
            v.sort();
            v
        };
        let (a, b, c) = (arns[0].clone(), arns[1].clone(), arns[2].clone());
        let l = listed(&ecs, &cluster, Some(&s1), None, None).await?;
        ensure!(l == sorted(vec![a.clone(), b.clone()]), "startedBy {s1}: {l:?}");
        let l = listed(&ecs, &cluster, Some(&s2), None, Some(DesiredStatus::Running)).await?;
        ensure!(l == [c.clone()], "startedBy {s2}, RUNNING: {l:?}");
        stop(&ecs, &cluster, &b, "contract").await?;
        let l = listed(&ecs, &cluster, Some(&s1), None, None).await?;
        ensure!(l == [a.clone()], "startedBy {s1} once one stopped: {l:?}");
        let l = listed(&ecs, &cluster, Some(&s1), None, Some(DesiredStatus::Stopped)).await?;
        ensure!(l == [b.clone()], "startedBy {s1}, STOPPED: {l:?}");
        let l = listed(&ecs, &cluster, None, Some(format!("{prefix}list")), None).await?;
        ensure!(l == sorted(vec![a, c]), "family {prefix}list, RUNNING: {l:?}");
        Ok(())
    }
    .await;
    for arn in &arns {
        let _ = stop(&ecs, &cluster, arn, "contract cleanup").await;
    }
    out
}

pub(super) async fn stop_task(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    let ecs = Client::new(sdk);
    let (cluster, def) = given(&ecs, prefix, "stop", &[(RUN_SECS_VAR, "600")]).await?;
    let arn =
        task_arn(&run(&ecs, (&cluster, &def), "sundial", &[], None).send().await.map_err(fail("RunTask"))?)?;
    let t = stop(&ecs, &cluster, &arn, "sundial: timeoutSecs").await?;
    ensure!(
        t.desired_status() == Some("STOPPED"),
        "StopTask answered desiredStatus {:?}",
        t.desired_status()
    );
    // AWS stops it within its stop timeout; the simulator and the emulators at once
    let t = stopped(&ecs, &cluster, &arn).await?;
    let end = (t.stop_code(), t.stopped_reason());
    ensure!(
        end == (Some(&TaskStopCode::UserInitiated), Some("sundial: timeoutSecs")),
        "stopped (stopCode, stoppedReason): {end:?}"
    );
    // The exit code is the container's answer to the stop: 143 when SIGTERM ends it (the
    // simulator, moto), 0 when it exits cleanly (MiniStack 1.5.33 reports that), 137 after the
    // stop timeout's SIGKILL. Sundial stops a task only for an attempt already ended (timed
    // out, cancelled) and reads no verdict from it.
    ensure!(
        matches!(exit_code(&t), None | Some(0 | 137 | 143)),
        "exit code after StopTask: {:?}",
        exit_code(&t)
    );
    let again = stop(&ecs, &cluster, &arn, "again").await?;
    ensure!(
        again.stopped_reason() == Some("sundial: timeoutSecs") && again.stop_code() == t.stop_code(),
        "stopping a stopped task changed it: {:?} {:?}",
        again.stop_code(),
        again.stopped_reason()
    );
    Ok(())
}

/// Whether `r` was refused with the error `code`.
fn refused<T, E: ProvideErrorMetadata, R>(r: Result<T, SdkError<E, R>>, code: &str) -> bool {
    matches!(r, Err(e) if e.as_service_error().and_then(|s| s.code()) == Some(code))
}

/// Every refusal is checked (the error names each one missed): the emulators miss different ones.
pub(super) async fn refusals(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    let ecs = Client::new(sdk);
    let (cluster, def) = given(&ecs, prefix, "refuse", &[]).await?;
    let none = format!("{prefix}none");
    let mut missed = Vec::new();
    let mut expect = |ok: bool, what: &str| {
        if !ok {
            missed.push(what.to_string());
        }
    };
    let r = run(&ecs, (&none, &def), "sundial", &[], None).send().await;
    expect(refused(r, "ClusterNotFoundException"), "RunTask on a missing cluster: ClusterNotFoundException");
    let r = run(&ecs, (&cluster, &none), "sundial", &[], None).send().await;
    expect(refused(r, "ClientException"), "RunTask of a missing task definition: ClientException");
    let r = ecs.describe_task_definition().task_definition(&none).send().await;
    expect(refused(r, "ClientException"), "DescribeTaskDefinition of a missing one: ClientException");
    let sidecar =
        TaskOverride::builder().container_overrides(ContainerOverride::builder().name("sidecar").build());
    let r = run(&ecs, (&cluster, &def), "sundial", &[], None).overrides(sidecar.build()).send().await;
    expect(
        refused(r, "InvalidParameterException"),
        "RunTask overriding a container the definition lacks: InvalidParameterException",
    );
    let missing = format!("{}/0123456789abcdef0123456789abcdef", cluster.replacen(":cluster/", ":task/", 1));
    let d =
        ecs.describe_tasks().cluster(&cluster).tasks(&missing).send().await.map_err(fail("DescribeTasks"))?;
    let failures: Vec<(Option<&str>, Option<&str>)> =
        d.failures().iter().map(|f| (f.arn(), f.reason())).collect();
    expect(
        d.tasks().is_empty() && failures == [(Some(missing.as_str()), Some("MISSING"))],
        "DescribeTasks of a missing task: a MISSING failure",
    );
    let r = ecs.stop_task().cluster(&cluster).task(&missing).send().await;
    expect(refused(r, "InvalidParameterException"), "StopTask of a missing task: InvalidParameterException");
    ensure!(missed.is_empty(), "not refused as AWS does: {}", missed.join("; "));
    Ok(())
}
