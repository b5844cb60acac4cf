//! ECS target: runs one task of a tenant's task definition with the fire's identity as
//! environment overrides of one container, then tracks it with `DescribeTasks` until it stops.
//! That container's exit code 0 is the attempt's success; any other exit code, or a task that
//! stopped without one (it never started: an image pull, capacity, a Spot interruption), fails
//! the attempt (retryable: the job's retry policy decides).
//!
//! One fire, one task, under takeovers. The task is started with `startedBy` and `clientToken`
//! both set to the fire's run name ([`super::stepfunctions::fire_name`], the same name a Step
//! Functions target gives its execution). A worker that loses its lease while the task runs is
//! replaced by another claim, whose overrides differ (its fencing token): before it runs a task
//! it lists the cluster's tasks started by that name and adopts the one it finds; and when two
//! claims race past that listing, ECS answers the second `RunTask` of the token with a
//! `ConflictException` (the same token with other parameters), after which the second claim
//! finds and adopts the first one's task. A retry after a failed attempt is a new run of the
//! fire, with a new name, and runs a new task. An adopted task keeps the environment it was
//! started with, so its `SUNDIAL_FENCING_TOKEN` is the token of the claim that started it.
//!
//! When an attempt ends without the task (its `timeoutSecs` passed, or the execution was
//! cancelled) the worker stops the run's task ([`EcsCaller::stop_run`]), so a retry never runs
//! beside it; a lost lease or a worker shutdown leaves it running for the next claim to adopt.
//!
//! The polling is paced by `tokio::time::sleep` (the simulator's and tests' paused clock).
//! A refused call is stored (and shown to the tenant) as its code and a generic sentence; AWS's
//! message, which names roles and accounts, is logged with the execution id.

use super::identity::TENANT_TAG;
use super::Invocation;
use aws_sdk_ecs::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_ecs::operation::run_task::RunTaskOutput;
use aws_sdk_ecs::types::{
    AssignPublicIp, AwsVpcConfiguration, ContainerOverride, DesiredStatus, KeyValuePair, LaunchType,
    NetworkConfiguration, Tag, Task, TaskField, TaskOverride,
};
use std::time::Duration;
use sundial_model::retry::RunError;
use sundial_model::EcsTarget;

/// Longest `startedBy`/`clientToken` name: `clientToken` takes 64 characters (`startedBy` 128).
pub const MAX_NAME: usize = 64;

/// The first pause between two `DescribeTasks` calls; each pause doubles up to [`MAX_POLL`].
pub const FIRST_POLL: Duration = Duration::from_secs(1);

/// The longest pause between two `DescribeTasks` calls (three a minute per running fire).
pub const MAX_POLL: Duration = Duration::from_secs(20);

/// The largest invocation passed whole as `SUNDIAL_INVOCATION`: RunTask takes 8 KiB of
/// overrides in all, and the other variables need some of it.
pub const MAX_INVOCATION_ENV: usize = 6 * 1024;

/// How often a claim that met another's `clientToken` looks for that claim's task (ECS lists
/// a task shortly after it ran it).
const ADOPT_LOOKS: u32 = 5;

/// Longest `stoppedReason` kept in the attempt's error (the rest is cut).
const MAX_REASON: usize = 512;

/// How many times [`EcsCaller::stop_run`] tries to stop a run's task (each try is the SDK's
/// own attempts): with a pause from [`FIRST_POLL`] doubling, about 15 s in all.
pub const STOP_TRIES: u32 = 5;

/// How a fire's tasks are named (`startedBy` and `clientToken`, one name per run of the fire):
/// `sd-` and 32 hex digits of HMAC-SHA256 of the whole execution id under the deployment's key
/// (`SUNDIAL_RUN_NAME_KEY`), then `-r{run}`. No prefix of the id and no lossy mapping, so two
/// fires never share a name (issue 49, N8); and without the key nobody can tell a coming fire's
/// name, so no other principal can start a task under it first or spend its `clientToken`.
/// Without a key (the local run, the tests) the digest is plain SHA-256: collision-free still,
/// but guessable. The key must stay the same across deploys while fires run: a takeover looks
/// for the run's task under this name (and, for fires started before keyed names, under
/// [`super::stepfunctions::fire_name`]'s).
#[derive(Clone, Default)]
pub struct RunNames {
    key: Option<std::sync::Arc<[u8]>>,
}

impl std::fmt::Debug for RunNames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunNames").field("keyed", &self.key.is_some()).finish()
    }
}

impl RunNames {
    /// Names under `key` (blank: unkeyed).
    pub fn keyed(key: &str) -> Self {
        let key = key.trim();
        RunNames { key: (!key.is_empty()).then(|| key.as_bytes().into()) }
    }

    /// The name of `run` of the fire `execution_id`.
    pub fn name(&self, execution_id: &str, run: u32) -> String {
        use hmac::{Hmac, KeyInit, Mac};
        use sha2::{Digest, Sha256};
        const DOMAIN: &[u8] = b"sundial ecs run name\0";
        let digest: Vec<u8> = match &self.key {
            Some(k) => {
                let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(k).unwrap_or_else(|_| unreachable!());
                mac.update(DOMAIN);
                mac.update(execution_id.as_bytes());
                mac.finalize().into_bytes().to_vec()
            }
            None => {
                Sha256::new().chain_update(DOMAIN).chain_update(execution_id.as_bytes()).finalize().to_vec()
            }
        };
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        format!("sd-{hex}-r{run}")
    }

    /// Every name `run` of the fire may carry, the one to start it under first: this
    /// deployment's, then the name before keyed names (a fire in flight across the upgrade).
    pub fn all(&self, execution_id: &str, run: u32) -> Vec<String> {
        vec![self.name(execution_id, run), super::stepfunctions::fire_name(execution_id, run, MAX_NAME)]
    }
}

/// A task this attempt tracks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    /// Its ARN.
    pub arn: String,
    /// Whether an earlier claim of the fire had started it (this one adopted it).
    pub adopted: bool,
}

/// The environment a fire's container gets: `SUNDIAL_EXECUTION_ID`, `SUNDIAL_FENCING_TOKEN`,
/// `SUNDIAL_IDEMPOTENCY_KEY` (the execution id, as webhooks' `Idempotency-Key`),
/// `SUNDIAL_SCHEDULED_AT` (RFC 3339), `SUNDIAL_ATTEMPT`, `SUNDIAL_TENANT`, `SUNDIAL_JOB_ID`, and
/// the whole invocation as JSON in `SUNDIAL_INVOCATION` when it is at most
/// [`MAX_INVOCATION_ENV`] bytes (a larger one is left out: read `params` from `paramsRef`).
pub fn environment(inv: &Invocation) -> Vec<(&'static str, String)> {
    let mut env = vec![
        ("SUNDIAL_EXECUTION_ID", inv.execution_id.clone()),
        ("SUNDIAL_FENCING_TOKEN", inv.fencing_token.to_string()),
        ("SUNDIAL_IDEMPOTENCY_KEY", inv.execution_id.clone()),
        ("SUNDIAL_SCHEDULED_AT", inv.scheduled_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        ("SUNDIAL_ATTEMPT", inv.attempt.to_string()),
        ("SUNDIAL_TENANT", inv.tenant.clone()),
        ("SUNDIAL_JOB_ID", inv.job_id.clone()),
    ];
    let whole = inv.to_json();
    if whole.len() <= MAX_INVOCATION_ENV {
        env.push(("SUNDIAL_INVOCATION", whole));
    }
    env
}

/// The task's network (awsvpc) when the target names subnets; a bad one is the target's fault.
fn network_configuration(target: &EcsTarget) -> Result<Option<NetworkConfiguration>, RunError> {
    if target.subnets.is_empty() {
        return Ok(None);
    }
    let vpc = AwsVpcConfiguration::builder()
        .set_subnets(Some(target.subnets.to_vec()))
        .set_security_groups((!target.security_groups.is_empty()).then(|| target.security_groups.to_vec()))
        .assign_public_ip(if target.assign_public_ip {
            AssignPublicIp::Enabled
        } else {
            AssignPublicIp::Disabled
        })
        .build()
        .map_err(|e| RunError::permanent(sundial_model::retry::codes::BAD_TARGET, e.to_string()))?;
    Ok(Some(NetworkConfiguration::builder().awsvpc_configuration(vpc).build()))
}

/// No task: ECS could not place it (capacity, an agent, a missing attribute).
fn placed_no_task(out: &RunTaskOutput, inv: &Invocation) -> RunError {
    let reasons: Vec<String> = out
        .failures()
        .iter()
        .map(|f| {
            format!(
                "{}{}",
                f.reason().unwrap_or("?"),
                f.detail().map(|d| format!(" ({d})")).unwrap_or_default()
            )
        })
        .collect();
    tracing::warn!(execution = %inv.execution_id, ?reasons, "RunTask placed no task");
    RunError::retryable("EcsRunTaskFailed", format!("ECS placed no task: {}", cut(&reasons.join("; "))))
}

/// Runs and tracks tasks of tenants' task definitions.
#[derive(Debug, Clone)]
pub struct EcsCaller {
    client: aws_sdk_ecs::Client,
}

impl EcsCaller {
    /// A target using `client` (the tenant's session).
    pub fn new(client: aws_sdk_ecs::Client) -> Self {
        EcsCaller { client }
    }

    /// Runs the task of a run of the fire `inv` of `target` under the first of `names` (the run's
    /// names, [`RunNames::all`]), or adopts the fire's own task an earlier claim of the run
    /// started under any of them, or one of an earlier run (`earlier`: their names) still
    /// running: a RunTask whose answer was lost (its attempt failed, yet the task started), or
    /// a stop that did not land. A second task beside it would run the fire twice (the faults
    /// shape's seed 244: attempt 1's RunTask answered 500 three times, its task ran on beside
    /// attempt 2's, past the fire's DEAD).
    pub async fn run(
        &self,
        target: &EcsTarget,
        names: &[String],
        earlier: &[String],
        inv: &Invocation,
    ) -> Result<Started, RunError> {
        let fire = Fire { target, tenant: &inv.tenant, execution_id: &inv.execution_id };
        let Some(name) = names.first() else {
            return Err(RunError::permanent(sundial_model::retry::codes::BAD_TARGET, "no run name"));
        };
        if let Some(arn) = Box::pin(self.find(&fire, names)).await? {
            tracing::info!(execution = %inv.execution_id, task = %arn, "adopting the ECS task an earlier claim ran");
            return Ok(Started { arn, adopted: true });
        }
        if let Some(arn) = Box::pin(self.running_own(&fire, earlier)).await? {
            tracing::info!(execution = %inv.execution_id, task = %arn, "adopting an earlier run's ECS task, still running");
            return Ok(Started { arn, adopted: true });
        }
        let env = environment(inv)
            .into_iter()
            .map(|(k, v)| KeyValuePair::builder().name(k).value(v).build())
            .collect::<Vec<_>>();
        let overrides = TaskOverride::builder()
            .container_overrides(
                ContainerOverride::builder().name(&target.container_name).set_environment(Some(env)).build(),
            )
            .build();
        let mut req = self
            .client
            .run_task()
            .cluster(&target.cluster_arn)
            .task_definition(&target.task_definition_arn)
            .count(1)
            .launch_type(LaunchType::from(target.launch_type.as_str()))
            .started_by(name)
            .client_token(name)
            // The task carries the tenant's `sundial-tenant` tag, set here rather than
            // propagated from the definition, so that it is there whatever the definition
            // carries: the tenant role's DescribeTasks and StopTask are conditioned on it, and
            // adoption takes only a task that carries it.
            .tags(Tag::builder().key(TENANT_TAG).value(&inv.tenant).build())
            .overrides(overrides);
        if let Some(network) = network_configuration(target)? {
            req = req.network_configuration(network);
        }
        match req.send().await {
            Ok(out) => {
                if let Some(arn) = out.tasks().first().and_then(Task::task_arn) {
                    return Ok(Started { arn: arn.to_string(), adopted: false });
                }
                Err(placed_no_task(&out, inv))
            }
            Err(e) if e.as_service_error().is_some_and(|s| s.code() == Some("ConflictException")) => {
                // Another claim of this run ran it with its own overrides, under the same token.
                Box::pin(self.adopt_after_conflict(&fire, &names[..1])).await
            }
            Err(e) => {
                tracing::warn!(execution = %inv.execution_id, cluster = %target.cluster_arn, detail = %DisplayErrorContext(&e), "the ECS target failed to run a task");
                Err(classify(e))
            }
        }
    }

    /// Adopts the task another claim of the run started under the same token, looking for it
    /// until it is listed (`ADOPT_LOOKS` times, the pause doubling).
    async fn adopt_after_conflict(&self, fire: &Fire<'_>, names: &[String]) -> Result<Started, RunError> {
        let mut pause = FIRST_POLL;
        for _ in 0..ADOPT_LOOKS {
            if let Some(arn) = Box::pin(self.find(fire, names)).await? {
                tracing::info!(execution = %fire.execution_id, task = %arn, "adopting the ECS task another claim ran");
                return Ok(Started { arn, adopted: true });
            }
            tokio::time::sleep(pause).await;
            pause *= 2;
        }
        Err(RunError::retryable(
            "EcsTaskNotFound",
            "another claim ran this fire's ECS task, which is not listed yet",
        ))
    }

    /// The tasks of the cluster started by `name` in `status`.
    async fn listed(
        &self,
        fire: &Fire<'_>,
        name: &str,
        status: DesiredStatus,
    ) -> Result<Vec<String>, RunError> {
        let cluster = &fire.target.cluster_arn;
        let out = self
            .client
            .list_tasks()
            .cluster(cluster)
            .started_by(name)
            .desired_status(status)
            .send()
            .await
            .map_err(|e| {
                tracing::warn!(execution = %fire.execution_id, cluster, detail = %DisplayErrorContext(&e), "ListTasks failed");
                classify(e)
            })?;
        let mut arns = out.task_arns().to_vec();
        arns.sort();
        Ok(arns)
    }

    /// The fire's own task among those of the cluster started by one of `names`, running or stopped:
    /// the first that [`Fire::owns`]. `startedBy` is only a name, which any principal allowed
    /// to run tasks on the cluster can give its own task; a task that is not the fire's is
    /// reported and left alone (issue 49, N2), and one whose description the tenant's session
    /// is refused (another tenant's, on AWS) is not the fire's either.
    async fn find(&self, fire: &Fire<'_>, names: &[String]) -> Result<Option<String>, RunError> {
        for name in names {
            for status in [DesiredStatus::Running, DesiredStatus::Stopped] {
                for arn in self.listed(fire, name, status).await? {
                    if Box::pin(self.is_own(fire, &arn)).await? {
                        return Ok(Some(arn));
                    }
                }
            }
        }
        Ok(None)
    }

    /// The fire's own task among the running ones started by one of `names`, if one is. An
    /// unanswered look is a retryable error: starting blind could run the fire twice.
    async fn running_own(&self, fire: &Fire<'_>, names: &[String]) -> Result<Option<String>, RunError> {
        for name in names {
            for arn in self.listed(fire, name, DesiredStatus::Running).await? {
                if Box::pin(self.is_own(fire, &arn)).await? {
                    return Ok(Some(arn));
                }
            }
        }
        Ok(None)
    }

    /// Whether the task `arn` is the fire's own ([`Fire::owns`]), described with its tags.
    async fn is_own(&self, fire: &Fire<'_>, arn: &str) -> Result<bool, RunError> {
        let described = self
            .client
            .describe_tasks()
            .cluster(&fire.target.cluster_arn)
            .tasks(arn)
            .include(TaskField::Tags)
            .send()
            .await;
        let why = match described {
            Ok(out) => match out.tasks().iter().find(|t| t.task_arn() == Some(arn)) {
                Some(task) => match fire.owns(task) {
                    Ok(()) => return Ok(true),
                    Err(why) => why,
                },
                None => "not described".to_string(),
            },
            Err(e) => {
                let err = classify(e);
                if err.is_retryable() {
                    return Err(err);
                }
                format!("its description was refused ({})", err.code)
            }
        };
        tracing::warn!(execution = %fire.execution_id, task = %arn, why, "a task named like the fire is not the fire's: not adopted, not stopped");
        Ok(false)
    }

    /// Polls `started` until it stops: `Ok` when `container` exited 0, a retryable error naming
    /// the exit code, or the stop code and reason, otherwise. A throttled or unanswered poll is
    /// polled again; the worker's timeout bounds the whole wait.
    pub async fn track(
        &self,
        cluster: &str,
        started: &Started,
        container: &str,
        inv: &Invocation,
    ) -> Result<(), RunError> {
        let mut pause = FIRST_POLL;
        loop {
            match self.client.describe_tasks().cluster(cluster).tasks(&started.arn).send().await {
                Ok(out) => match out.tasks().iter().find(|t| t.task_arn() == Some(started.arn.as_str())) {
                    Some(task) => {
                        if let Some(end) = stopped(task, container) {
                            return end;
                        }
                    }
                    None if !out.failures().is_empty() => {
                        return Err(RunError::retryable(
                            "EcsTaskMissing",
                            "ECS no longer knows the fire's task",
                        ));
                    }
                    None => {}
                },
                Err(e) => {
                    tracing::warn!(execution = %inv.execution_id, task = %started.arn, detail = %DisplayErrorContext(&e), "DescribeTasks failed");
                    let err = classify(e);
                    if !err.is_retryable() {
                        return Err(err);
                    }
                }
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(MAX_POLL);
        }
    }

    /// Stops the running task of the run named `names` ([`RunNames::all`]) of `fire` (an
    /// attempt that timed out or was cancelled), so that no retry runs beside it and the fire is
    /// not final while its task still runs; only the fire's own ([`Fire::owns`]), never another
    /// principal's task named like it. A throttled or unanswered call is tried again, up to
    /// [`STOP_TRIES`] times with a doubling pause (a throttling window outlasts the SDK's own
    /// three attempts: the full mix's seed 25 left a timed-out task running past its DEAD fire).
    /// Past that, or on a permanent error, it is logged and left.
    pub async fn stop_run(&self, fire: &Fire<'_>, names: &[String], reason: &str) {
        let execution = fire.execution_id;
        let mut pause = FIRST_POLL;
        for tries_left in (0..STOP_TRIES).rev() {
            match self.try_stop_run(fire, names, reason).await {
                Ok(()) => return,
                Err(e) if e.is_retryable() && tries_left > 0 => {
                    tracing::info!(execution, error = %e, "stopping the fire's ECS task failed; trying again");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(MAX_POLL);
                }
                Err(e) => {
                    tracing::warn!(execution, error = %e, "could not stop the fire's ECS task");
                    return;
                }
            }
        }
    }

    /// One try of [`EcsCaller::stop_run`]: every running task named like the run, if it is the
    /// fire's own, is stopped (a task already stopped is left as it is).
    async fn try_stop_run(&self, fire: &Fire<'_>, names: &[String], reason: &str) -> Result<(), RunError> {
        let execution = fire.execution_id;
        let mut arns = Vec::new();
        for name in names {
            arns.extend(self.listed(fire, name, DesiredStatus::Running).await?);
        }
        for arn in arns {
            if !Box::pin(self.is_own(fire, &arn)).await? {
                continue;
            }
            let cluster = &fire.target.cluster_arn;
            match self.client.stop_task().cluster(cluster).task(&arn).reason(reason).send().await {
                Ok(_) => tracing::info!(execution, task = %arn, reason, "stopped the fire's ECS task"),
                Err(e) => {
                    tracing::warn!(execution, task = %arn, detail = %DisplayErrorContext(&e), "StopTask failed");
                    return Err(classify(e));
                }
            }
        }
        Ok(())
    }
}

/// One fire of an `ecs` target: what a task named like it must show to be its own.
#[derive(Debug, Clone, Copy)]
pub struct Fire<'a> {
    /// The job's target (its cluster, task definition revision and container).
    pub target: &'a EcsTarget,
    /// The job's tenant.
    pub tenant: &'a str,
    /// The fire's execution id (global).
    pub execution_id: &'a str,
}

impl Fire<'_> {
    /// `Ok` when `task` is this fire's own: it runs the target's task definition revision,
    /// carries the tag `sundial-tenant=<tenant>`, and its container got this fire's
    /// `SUNDIAL_EXECUTION_ID`. Otherwise why not (for the log).
    pub fn owns(&self, task: &Task) -> Result<(), String> {
        if task.task_definition_arn() != Some(self.target.task_definition_arn.as_str()) {
            return Err(format!("it runs {:?}", task.task_definition_arn()));
        }
        let tag = task.tags().iter().find(|t| t.key() == Some(TENANT_TAG)).and_then(Tag::value);
        if tag != Some(self.tenant) {
            return Err(format!("it is tagged {TENANT_TAG}={tag:?}"));
        }
        let execution = task
            .overrides()
            .map(|o| o.container_overrides())
            .unwrap_or_default()
            .iter()
            .filter(|c| c.name() == Some(self.target.container_name.as_str()))
            .flat_map(|c| c.environment())
            .find(|kv| kv.name() == Some("SUNDIAL_EXECUTION_ID"))
            .and_then(KeyValuePair::value);
        if execution != Some(self.execution_id) {
            return Err(format!("its SUNDIAL_EXECUTION_ID is {execution:?}"));
        }
        Ok(())
    }
}

/// What a described task means: `None` until it has stopped.
pub fn stopped(task: &Task, container: &str) -> Option<Result<(), RunError>> {
    if task.last_status() != Some("STOPPED") {
        return None;
    }
    let exit = task.containers().iter().find(|c| c.name() == Some(container)).and_then(|c| c.exit_code());
    let reason = task.stopped_reason().filter(|r| !r.is_empty());
    let with_reason = |mut m: String| {
        if let Some(r) = reason {
            m.push_str(": ");
            m.push_str(&cut(r));
        }
        m
    };
    Some(match exit {
        Some(0) => Ok(()),
        // The tenant's own container's verdict: shown to the tenant as it is.
        Some(code) => Err(RunError::retryable(
            "EcsContainerExit",
            with_reason(format!("the ECS task's container {container} exited with {code}")),
        )),
        None => {
            let stop = task.stop_code().map_or("Unknown", |c| c.as_str());
            Err(RunError::retryable(
                format!("EcsTask.{stop}"),
                with_reason(format!("the ECS task stopped without an exit code of {container} ({stop})")),
            ))
        }
    })
}

fn cut(s: &str) -> String {
    s.chars().take(MAX_REASON).collect()
}

fn classify<E, R>(e: SdkError<E, R>) -> RunError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    // ECS's own 5xx, and a cluster without capacity right now: a later attempt may run.
    if let SdkError::ServiceError(s) = &e {
        let code = s.err().code().unwrap_or_default();
        if matches!(code, "ServerException" | "LimitExceededException" | "BlockedException") {
            return RunError::retryable(code, format!("the ECS target failed ({code})"));
        }
    }
    super::aws_error::classify_aws(e, "ECS target", "EcsCall")
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_ecs::types::{Container, TaskStopCode};

    fn task(status: &str, exit: Option<i32>, stop: Option<TaskStopCode>, reason: &str) -> Task {
        Task::builder()
            .task_arn("arn:aws:ecs:eu-west-1:123456789012:task/batch/0123")
            .last_status(status)
            .containers(Container::builder().name("sidecar").exit_code(0).build())
            .containers(Container::builder().name("main").set_exit_code(exit).build())
            .set_stop_code(stop)
            .stopped_reason(reason)
            .build()
    }

    #[test]
    fn a_task_is_judged_by_its_container_once_it_has_stopped() {
        assert!(stopped(&task("RUNNING", None, None, ""), "main").is_none());
        assert!(stopped(&task("DEPROVISIONING", Some(1), None, ""), "main").is_none());
        assert_eq!(
            stopped(&task("STOPPED", Some(0), None, "Essential container in task exited"), "main"),
            Some(Ok(()))
        );
        let Some(Err(e)) =
            stopped(&task("STOPPED", Some(3), None, "Essential container in task exited"), "main")
        else {
            panic!("exit 3 is a failure")
        };
        assert!(e.is_retryable());
        assert_eq!(e.code, "EcsContainerExit");
        assert!(e.message.contains("main exited with 3: Essential container"), "{}", e.message);
        // AND the other container's exit is not the one that decides
        let Some(Err(e)) = stopped(
            &task("STOPPED", None, Some(TaskStopCode::TaskFailedToStart), "CannotPullContainerError: nope"),
            "main",
        ) else {
            panic!("a task that never started is a failure")
        };
        assert_eq!(e.code, "EcsTask.TaskFailedToStart");
        assert!(e.is_retryable() && e.message.contains("CannotPullContainerError"), "{}", e.message);
    }

    #[test]
    fn the_container_gets_the_fires_identity_and_a_small_invocation_whole() {
        let mut inv: Invocation = serde_json::from_value(serde_json::json!({
            "executionId": "acme:settle@1764469800000", "fencingToken": 7, "attempt": 2,
            "scheduledAt": "2025-11-30T02:30:00Z", "tenant": "acme", "jobId": "settle",
            "params": {"day": "2025-11-29"}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let env: std::collections::BTreeMap<_, _> = environment(&inv).into_iter().collect();
        assert_eq!(env["SUNDIAL_FENCING_TOKEN"], "7");
        assert_eq!(env["SUNDIAL_EXECUTION_ID"], "acme:settle@1764469800000");
        assert_eq!(env["SUNDIAL_IDEMPOTENCY_KEY"], "acme:settle@1764469800000");
        assert_eq!(env["SUNDIAL_SCHEDULED_AT"], "2025-11-30T02:30:00.000Z");
        assert_eq!(env["SUNDIAL_ATTEMPT"], "2");
        let whole: serde_json::Value = serde_json::from_str(&env["SUNDIAL_INVOCATION"]).unwrap();
        assert_eq!(whole["fencingToken"], 7);
        // AND a large invocation is left out rather than overflowing RunTask's overrides
        inv.params = serde_json::json!({"blob": "x".repeat(MAX_INVOCATION_ENV)});
        assert!(!environment(&inv).iter().any(|(k, _)| *k == "SUNDIAL_INVOCATION"));
        let total: usize = environment(&inv).iter().map(|(k, v)| k.len() + v.len()).sum();
        assert!(total < 1024, "{total}");
    }

    #[test]
    fn run_names_are_whole_id_digests_keyed_by_the_deployment() {
        let (a, b) = ("acme_eu:settle@1764469800000", "acme-eu:settle@1764469800000");
        let plain = RunNames::default();
        let keyed = RunNames::keyed("k3y-of-the-deployment");
        for names in [&plain, &keyed] {
            let n = names.name(a, 1);
            assert!(n.len() <= MAX_NAME && n.starts_with("sd-") && n.ends_with("-r1"), "{n}");
            assert!(n.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'), "{n}");
            // ids that the old names mapped onto one prefix differ, as do runs
            assert_ne!(n, names.name(b, 1));
            assert_ne!(n, names.name(a, 2));
            assert_eq!(names.all(a, 1)[0], n);
        }
        // AND without the key the name cannot be told from the id (the key is the secret)
        assert_ne!(plain.name(a, 1), keyed.name(a, 1));
        assert_ne!(keyed.name(a, 1), RunNames::keyed("another key").name(a, 1));
        assert_eq!(RunNames::keyed("  ").name(a, 1), plain.name(a, 1));
        assert!(!format!("{keyed:?}").contains("k3y"));
    }

    #[test]
    fn names_fit_the_client_token() {
        let n = super::super::stepfunctions::fire_name(
            &format!("acme:{}@1764469800000", "j".repeat(60)),
            3,
            MAX_NAME,
        );
        assert!(n.len() <= MAX_NAME && n.ends_with("-r3"), "{n}");
        assert!(n.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
    }
}
