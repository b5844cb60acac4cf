//! Targets: what a worker calls for an execution, and how each one's failures are classified.
//!
//! Every target gets the same [`Invocation`] document: the execution id (a stable idempotency key,
//! docs/execution.md §1), the fencing token (so a protected resource can refuse an older holder,
//! docs/targets.md, "Fencing downstream"), the scheduled instant, the attempt, the job's parameters
//! and, for `fire_once` misfires, the missed range. Each adapter maps its failures to a
//! [`RunError`] whose class decides retrying (docs/execution.md §4): throttling, 5xx, timeouts and
//! connection errors retry; anything that says the request itself is wrong does not.

pub mod ecs;
pub mod eventbridge;
pub mod http;
pub mod identity;
pub mod in_process;
pub mod lambda;
pub mod secrets;
pub mod signing;
pub mod sns;
pub mod sqs;
pub mod stepfunctions;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sundial_model::retry::{codes, RunError};
use sundial_model::{EcsTarget, Execution, Target};

/// The document every target receives (JSON, camelCase).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Invocation {
    /// `{tenant}:{job}@{scheduled ms}`: use it as the idempotency key of side effects (it is the
    /// same for every attempt and unique across tenants).
    pub execution_id: String,
    /// The claim's fencing token: a protected resource refuses writes with an older one.
    pub fencing_token: u64,
    /// The scheduled instant.
    pub scheduled_at: DateTime<Utc>,
    /// Attempt number (1-based).
    pub attempt: u32,
    /// Tenant.
    pub tenant: String,
    /// Job id.
    pub job_id: String,
    /// The job's parameters (snapshot of the definition version the execution was created with).
    pub params: serde_json::Value,
    /// Reference to large parameters, passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params_ref: Option<String>,
    /// For a `fire_once` misfire: the first and last missed fires this run stands for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed_range: Option<MissedRange>,
    /// A child of a sharded job (`docs/children.md`): the one shard this run owns (0-based).
    /// Process only the items of this shard: the other shards are other children's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_index: Option<u32>,
    /// A child of a sharded job: how many shards the fire has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_total: Option<u32>,
    /// A child of a broadcast job: the member this run is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// A child: its parent's id (`{tenant}:{job}@{ms}`); `executionId` is the child's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_execution_id: Option<String>,
    /// The fire's logical time, so a handler need not compute it (docs/api.md, "Per-run
    /// parameters and logical time").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_time: Option<LogicalTime>,
}

/// The period a fire stands for, in its job's zone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogicalTime {
    /// The job's IANA zone.
    pub timezone: String,
    /// The scheduled instant as a local time with its offset (`2026-03-08T23:30:00-04:00`).
    pub scheduled_local: String,
    /// The local calendar date of the scheduled instant (`2026-03-08`).
    pub local_date: String,
    /// Start of the period: the schedule's last fire at or before the scheduled instant (the
    /// instant itself for a scheduled fire).
    pub period_start: DateTime<Utc>,
    /// End of the period: the schedule's next fire after it; absent when the schedule has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_end: Option<DateTime<Utc>>,
}

impl LogicalTime {
    /// The logical time of a fire at `at` of a job with `spec` (parsed anchored at `at`: a
    /// rate's period then starts at the instant; business-calendar rolls are not applied, as
    /// the calendar is not read on the worker's path). `None` when the zone or the expression
    /// do not parse (a definition stored before a change of rules).
    pub fn of(spec: &sundial_schedule::ScheduleSpec, at: DateTime<Utc>) -> Option<Self> {
        let tz: chrono_tz::Tz = spec.timezone.parse().ok()?;
        let local = at.with_timezone(&tz);
        let mut plain = spec.clone();
        plain.business_calendar = None;
        let schedule = sundial_schedule::Schedule::parse(&plain, at).ok();
        let period_start = schedule.as_ref().and_then(|s| s.prev_at_or_before(at)).unwrap_or(at);
        Some(LogicalTime {
            timezone: spec.timezone.clone(),
            scheduled_local: local.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
            local_date: local.date_naive().to_string(),
            period_start,
            period_end: schedule.as_ref().and_then(|s| s.next_after(period_start)),
        })
    }
}

/// A missed range (inclusive).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissedRange {
    /// First missed fire.
    pub from: DateTime<Utc>,
    /// Last missed fire.
    pub to: DateTime<Utc>,
    /// Instants of the range this run does not stand for: each ran, or was decided, as a fire of
    /// its own (docs/execution.md, "A batch's first claim"). Left out when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub except: Vec<DateTime<Utc>>,
}

impl Invocation {
    /// The invocation of a claimed execution.
    pub fn of(e: &Execution, token: u64, attempt: u32) -> Self {
        let pos = sundial_model::children::Position::of(e);
        Invocation {
            shard_index: pos.shard_index,
            shard_total: pos.shard_total,
            member: pos.member,
            parent_execution_id: e.child.as_ref().map(|_| {
                sundial_model::keys::global_execution_id(
                    &e.tenant,
                    &e.job_id,
                    e.scheduled_at.timestamp_millis(),
                )
            }),
            logical_time: LogicalTime::of(&e.definition.schedule, e.scheduled_at),
            execution_id: e.global_id(),
            fencing_token: token,
            scheduled_at: e.scheduled_at,
            attempt,
            tenant: e.tenant.clone(),
            job_id: e.job_id.clone(),
            params: e.definition.params.clone(),
            params_ref: e.definition.params_ref.clone(),
            missed_range: e.missed_range.map(|(from, to)| MissedRange {
                from,
                to,
                except: e.missed_except.clone(),
            }),
        }
    }

    /// The JSON body.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The remote targets of one tenant, reached as that tenant (see [`identity`]). The in-process
/// ones are run by the worker itself, which owns their cancellation and checkpoints.
#[derive(Debug, Clone)]
pub struct RemoteTargets {
    /// Lambda targets.
    pub lambda: lambda::LambdaCaller,
    /// Webhooks (their secrets read through the tenant's session, ownership confirmed).
    pub http: http::HttpCaller,
    /// User queues.
    pub sqs: sqs::SqsCaller,
    /// Tenants' EventBridge buses.
    pub events: eventbridge::EventBridgeCaller,
    /// Tenants' SNS topics.
    pub sns: sns::SnsCaller,
    /// Tenants' Step Functions state machines.
    pub sfn: stepfunctions::StepFunctionsCaller,
    /// Tenants' ECS task definitions.
    pub ecs: ecs::EcsCaller,
    /// Confirms that functions and queues are the tenant's own before they are called.
    pub owner: identity::Ownership,
}

impl RemoteTargets {
    /// `tenant`'s targets over its `clients`, webhooks limited to `addresses`.
    pub fn of_tenant(
        tenant: &str,
        clients: identity::TenantClients,
        addresses: sundial_model::outbound::AddressPolicy,
    ) -> std::io::Result<Self> {
        let owner = identity::Ownership::new(tenant, clients.clone());
        let secrets =
            secrets::SecretCache::new(clients.secrets.clone(), secrets::DEFAULT_TTL).owned_by(owner.clone());
        Ok(RemoteTargets {
            lambda: lambda::LambdaCaller::new(clients.lambda.clone()),
            http: http::HttpCaller::new(addresses)?.with_secrets(secrets),
            events: eventbridge::EventBridgeCaller::new(clients.events.clone()),
            sns: sns::SnsCaller::new(clients.sns.clone()),
            sfn: stepfunctions::StepFunctionsCaller::new(clients.sfn.clone()),
            ecs: ecs::EcsCaller::new(clients.ecs.clone()),
            sqs: sqs::SqsCaller::new(clients.sqs),
            owner,
        })
    }

    /// Calls a remote target at `now` (the worker's clock; it dates webhook signatures), after
    /// confirming that the function or queue is the tenant's (a webhook's secrets are confirmed
    /// as they are read). `Target::InProcess` is a configuration error here: only the worker's
    /// handler registry runs those; `Target::StepFunctions` and `Target::Ecs` too: the worker
    /// calls [`RemoteTargets::start_state_machine`] and [`RemoteTargets::track_state_machine`],
    /// [`RemoteTargets::run_task`] and [`RemoteTargets::track_task`].
    pub async fn call(&self, target: &Target, inv: &Invocation, now: DateTime<Utc>) -> Result<(), RunError> {
        crate::access::as_tenant(async {
            match target {
                Target::Lambda(t) => {
                    self.owner
                        .check(identity::Kind::Function, &t.function, "Lambda target", &inv.execution_id)
                        .await?;
                    self.lambda.invoke(&t.function, inv).await
                }
                Target::Http(t) => {
                    let hook = http::Webhook {
                        url: &t.url,
                        signing_secret_arn: t.signing_secret_arn.as_deref(),
                        headers: &t.headers,
                    };
                    self.http.post(&hook, inv, now.timestamp()).await
                }
                Target::Sqs(t) => {
                    self.owner
                        .check(identity::Kind::Queue, &t.queue_url, "target queue", &inv.execution_id)
                        .await?;
                    self.sqs.send(&t.queue_url, inv).await
                }
                Target::EventBridge(t) => {
                    self.owner
                        .check(
                            identity::Kind::EventBus,
                            &t.event_bus_arn,
                            "target event bus",
                            &inv.execution_id,
                        )
                        .await?;
                    self.events.put(&t.event_bus_arn, t.detail_type.as_deref(), inv).await
                }
                Target::Sns(t) => {
                    self.owner
                        .check(identity::Kind::Topic, &t.topic_arn, "target topic", &inv.execution_id)
                        .await?;
                    self.sns.publish(&t.topic_arn, t.subject.as_deref(), inv).await
                }
                // Its execution's name needs the fire's run number, and the worker notes the
                // execution on the timeline between the start and the tracking.
                Target::StepFunctions(_) => Err(RunError::permanent(
                    codes::BAD_TARGET,
                    "a Step Functions target is started and tracked by the worker",
                )),
                Target::Ecs(_) => Err(RunError::permanent(
                    codes::BAD_TARGET,
                    "an ECS target is run and tracked by the worker",
                )),
                Target::InProcess(t) => Err(RunError::permanent(
                    codes::BAD_TARGET,
                    format!("in-process handler {:?} is not remote", t.handler),
                )),
            }
        })
        .await
    }
}

impl RemoteTargets {
    /// Starts (or adopts) the execution of `run` of the fire `inv` on `machine_arn`, after
    /// confirming that the state machine is the tenant's; as the tenant. The worker notes the
    /// execution on the fire's timeline, then [`RemoteTargets::track_state_machine`]s it.
    pub async fn start_state_machine(
        &self,
        machine_arn: &str,
        inv: &Invocation,
        run: u32,
    ) -> Result<stepfunctions::Started, RunError> {
        crate::access::as_tenant(async {
            self.owner
                .check(identity::Kind::StateMachine, machine_arn, "target state machine", &inv.execution_id)
                .await?;
            let name = stepfunctions::execution_name(&inv.execution_id, run);
            self.sfn.start(machine_arn, &name, inv).await
        })
        .await
    }

    /// Stops the execution of `run` of the fire `execution_id` on `machine_arn` (its attempt
    /// ended without it: a timeout or a cancel), as the tenant.
    pub async fn stop_state_machine(&self, machine_arn: &str, execution_id: &str, run: u32, reason: &str) {
        let arn =
            stepfunctions::execution_arn(machine_arn, &stepfunctions::execution_name(execution_id, run));
        crate::access::as_tenant(self.sfn.stop(&arn, reason, execution_id)).await
    }

    /// Tracks a started execution until it closes (as the tenant).
    pub async fn track_state_machine(
        &self,
        started: &stepfunctions::Started,
        inv: &Invocation,
    ) -> Result<(), RunError> {
        crate::access::as_tenant(self.sfn.track(started, inv)).await
    }
}

impl RemoteTargets {
    /// Runs (or adopts) the task of `run` of the fire `inv`, after confirming that the task
    /// definition is the tenant's; as the tenant. The worker notes the task on the fire's
    /// timeline, then [`RemoteTargets::track_task`]s it.
    pub async fn run_task(
        &self,
        target: &EcsTarget,
        inv: &Invocation,
        run: u32,
    ) -> Result<ecs::Started, RunError> {
        crate::access::as_tenant(async {
            self.owner
                .check(
                    identity::Kind::TaskDefinition,
                    &target.task_definition_arn,
                    "target task definition",
                    &inv.execution_id,
                )
                .await?;
            let name = stepfunctions::fire_name(&inv.execution_id, run, ecs::MAX_NAME);
            self.ecs.run(target, &name, inv).await
        })
        .await
    }

    /// Tracks a task until it stops (as the tenant).
    pub async fn track_task(
        &self,
        target: &EcsTarget,
        started: &ecs::Started,
        inv: &Invocation,
    ) -> Result<(), RunError> {
        crate::access::as_tenant(self.ecs.track(&target.cluster_arn, started, &target.container_name, inv))
            .await
    }

    /// Stops the running task of `run` of the fire `execution_id` (its attempt ended without it:
    /// a timeout or a cancel), as the tenant.
    pub async fn stop_task(&self, cluster: &str, execution_id: &str, run: u32, reason: &str) {
        let name = stepfunctions::fire_name(execution_id, run, ecs::MAX_NAME);
        crate::access::as_tenant(self.ecs.stop_run(cluster, &name, reason, execution_id)).await
    }
}

/// Every tenant's [`RemoteTargets`], built on first use and kept (bounded): each tenant's
/// session, secret cache and ownership confirmations stay its own.
#[derive(Debug)]
pub struct Remotes {
    sessions: identity::TenantSessions,
    policy: sundial_model::outbound::TargetPolicy,
    tenants: std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<RemoteTargets>>>,
}

impl Remotes {
    /// The targets of every tenant, through `sessions`; each tenant's webhooks reach the addresses
    /// `policy` allows it (the deployment's networks narrowed to the tenant's own `cidrs`).
    pub fn new(sessions: identity::TenantSessions, policy: sundial_model::outbound::TargetPolicy) -> Self {
        Remotes { sessions, policy, tenants: Default::default() }
    }

    /// `tenant`'s targets.
    pub async fn of(&self, tenant: &str) -> Result<std::sync::Arc<RemoteTargets>, RunError> {
        if let Some(t) = self.tenants.lock().ok().and_then(|m| m.get(tenant).cloned()) {
            return Ok(t);
        }
        let clients = self.sessions.clients(tenant).await;
        let targets =
            RemoteTargets::of_tenant(tenant, clients, self.policy.addresses_for(tenant)).map_err(|e| {
                RunError::retryable(codes::BAD_TARGET, format!("the webhook client could not start: {e}"))
            })?;
        let targets = std::sync::Arc::new(targets);
        if let Ok(mut m) = self.tenants.lock() {
            if m.len() >= identity::MAX_TENANTS {
                m.clear();
            }
            m.insert(tenant.to_string(), targets.clone());
        }
        Ok(targets)
    }
}

/// A failed AWS call of a target as the tenant sees it (`lastError` is shown to tenants): the
/// service's error code and a generic sentence naming the `target` ("the SQS target"), never
/// AWS's message (it names roles, accounts and resources; the caller logs it with the
/// execution). Throttling and the service's own failures are retried; any other answer (missing
/// resource, access denied, invalid input) says the job's target is wrong. No answer at all
/// (timeout, dispatch) is retried as `unreachable`.
pub(crate) fn classify_aws<E, R>(
    e: aws_smithy_runtime_api::client::result::SdkError<E, R>,
    target: &str,
    unreachable: &str,
) -> RunError
where
    E: aws_smithy_types::error::metadata::ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    use aws_smithy_runtime_api::client::result::SdkError;
    match &e {
        SdkError::ServiceError(s) => {
            let code = s.err().code().unwrap_or("Unknown").to_string();
            let short = code.rsplit('.').next().unwrap_or_default().trim_end_matches("Exception");
            let message = format!("the {target} failed ({short})");
            const TRANSIENT: [&str; 5] =
                ["Throttl", "InternalError", "InternalException", "ServiceUnavailable", "KmsThrottled"];
            if TRANSIENT.iter().any(|t| code.contains(t)) || code == "KMSThrottlingException" {
                RunError::retryable(code, message)
            } else {
                RunError::permanent(code, message)
            }
        }
        _ => RunError::retryable(unreachable, format!("the {target} could not be reached")),
    }
}

/// A refused AWS call as the SDK hands it to a target: `code`, an IAM-style message naming an
/// ARN, and the HTTP `status` (the targets' classification tests).
#[cfg(test)]
pub(crate) fn refused<E>(
    code: &str,
    status: u16,
    make: impl FnOnce(aws_smithy_types::error::ErrorMetadata) -> E,
) -> aws_smithy_runtime_api::client::result::SdkError<
    E,
    aws_smithy_runtime_api::client::orchestrator::HttpResponse,
> {
    let meta = aws_smithy_types::error::ErrorMetadata::builder()
        .code(code)
        .message("User: arn:aws:sts::123456789012:assumed-role/sundial-tenant/acme is not authorized")
        .build();
    let raw = aws_smithy_runtime_api::client::orchestrator::HttpResponse::new(
        status.try_into().unwrap_or_else(|e| panic!("{e:?}")),
        aws_smithy_types::body::SdkBody::empty(),
    );
    aws_smithy_runtime_api::client::result::SdkError::service_error(make(meta), raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_invocation_document_is_camel_case_and_omits_empty_options() {
        let inv = Invocation {
            execution_id: "j@1".into(),
            fencing_token: 3,
            scheduled_at: sundial_store::items::ms_to_dt(1_000),
            attempt: 2,
            tenant: "t".into(),
            job_id: "j".into(),
            params: serde_json::json!({"k": 1}),
            params_ref: None,
            missed_range: None,
            shard_index: None,
            shard_total: None,
            member: None,
            parent_execution_id: None,
            logical_time: None,
        };
        let v: serde_json::Value = serde_json::from_str(&inv.to_json()).unwrap_or_default();
        assert_eq!(v["executionId"], "j@1");
        assert_eq!(v["fencingToken"], 3);
        assert_eq!(v["scheduledAt"], "1970-01-01T00:00:01Z");
        assert!(v.get("missedRange").is_none() && v.get("paramsRef").is_none());
    }

    #[test]
    fn jobs_of_two_tenants_with_one_name_and_instant_get_distinct_idempotency_keys() {
        // Issue 13 scenario 11: the id leaves the system as the inbox key, the `Idempotency-Key`
        // header and the FIFO deduplication id, so it must name the tenant.
        let def = sundial_model::JobDefinition::new(
            sundial_schedule::ScheduleSpec::new("rate(1 minute)", "UTC"),
            Target::http("https://x"),
        );
        let cfg = crate::config::Config::local("t-", &["default"], 8);
        let at = sundial_store::items::ms_to_dt(1_764_469_800_000);
        let exec = |tenant: &str| {
            let job = sundial_model::Job::new(&cfg, tenant, "nightly", def.clone(), at)
                .unwrap_or_else(|e| panic!("{e}"));
            let schedule =
                sundial_schedule::Schedule::parse(&def.schedule, at).unwrap_or_else(|e| panic!("{e}"));
            Execution::ready(&job, &schedule, at, None, at, "test")
        };
        let (a, b) = (Invocation::of(&exec("acme"), 1, 1), Invocation::of(&exec("globex"), 1, 1));
        assert_ne!(a.execution_id, b.execution_id, "same id for two tenants");
    }

    #[test]
    fn the_logical_time_names_the_local_instant_and_the_period_across_a_dst_change() {
        let at = |s: &str| {
            DateTime::parse_from_rfc3339(s).map(|t| t.with_timezone(&Utc)).unwrap_or_else(|e| panic!("{e}"))
        };
        let spec = sundial_schedule::ScheduleSpec::new("0 30 23 * * *", "America/New_York");
        // 23:30 on the day New York moves to EDT: 03:30Z the next morning
        let lt = LogicalTime::of(&spec, at("2026-03-09T03:30:00Z")).unwrap_or_else(|| panic!("parses"));
        assert_eq!(lt.scheduled_local, "2026-03-08T23:30:00-04:00");
        assert_eq!(lt.local_date, "2026-03-08");
        assert_eq!(lt.period_start, at("2026-03-09T03:30:00Z"));
        assert_eq!(lt.period_end, Some(at("2026-03-10T03:30:00Z")));
        // the day before, still EST: the period is 23 hours long
        let lt = LogicalTime::of(&spec, at("2026-03-08T04:30:00Z")).unwrap_or_else(|| panic!("parses"));
        assert_eq!(lt.scheduled_local, "2026-03-07T23:30:00-05:00");
        assert_eq!(lt.period_end, Some(at("2026-03-09T03:30:00Z")));
        // a manual run between fires: the period it falls in
        let lt = LogicalTime::of(&spec, at("2026-03-09T12:00:00Z")).unwrap_or_else(|| panic!("parses"));
        assert_eq!(lt.period_start, at("2026-03-09T03:30:00Z"));
    }
}
