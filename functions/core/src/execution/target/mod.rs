//! Targets: what a worker calls for an execution, and how each one's failures are classified.
//!
//! Every target gets the same [`Invocation`] document: the execution id (a stable idempotency key,
//! docs/execution.md §1), the fencing token (so a protected resource can refuse an older holder,
//! docs/targets.md, "Fencing downstream"), the scheduled instant, the attempt, the job's parameters
//! and, for `fire_once` misfires, the missed range. Each adapter maps its failures to a
//! [`RunError`] whose class decides retrying (docs/execution.md §4): throttling, 5xx, timeouts and
//! connection errors retry; anything that says the request itself is wrong does not.

mod aws_error;
pub mod ecs;
pub mod eventbridge;
pub mod http;
pub mod identity;
pub mod in_process;
pub mod invocation;
pub mod lambda;
pub mod secrets;
pub mod signing;
pub mod sns;
pub mod sqs;
pub mod stepfunctions;

pub use invocation::{Invocation, LogicalTime, MissedRange};

use chrono::{DateTime, Utc};
use sundial_model::retry::{codes, RunError};
use sundial_model::{EcsTarget, Target};

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
    /// How its ECS runs are named.
    pub names: ecs::RunNames,
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
            names: ecs::RunNames::default(),
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
    /// confirming that the state machine is the tenant's; as the tenant. A later run first looks
    /// at the previous one and adopts it if it is running or succeeded (an attempt that timed out
    /// as its execution closed successfully must not run the fire again). The worker notes the
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
            if run > 1 {
                let prev = stepfunctions::execution_name(&inv.execution_id, run - 1);
                let arn = stepfunctions::execution_arn(machine_arn, &prev);
                if Box::pin(self.sfn.previous_stands(&arn, inv)).await? {
                    tracing::info!(execution = %inv.execution_id, arn, "adopting the previous run's Step Functions execution: it is running or succeeded");
                    return Ok(stepfunctions::Started { arn, adopted: true });
                }
            }
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
    /// definition is the tenant's; as the tenant. A later run first looks for an earlier run's
    /// task still running, and adopts it. The worker notes the task on the fire's
    /// timeline, then [`RemoteTargets::track_task`]s it.
    pub async fn run_task(
        &self,
        target: &EcsTarget,
        inv: &Invocation,
        run: u32,
    ) -> Result<ecs::Started, RunError> {
        crate::access::as_tenant(async {
            Box::pin(self.owner.check(
                identity::Kind::TaskDefinition,
                &target.task_definition_arn,
                "target task definition",
                &inv.execution_id,
            ))
            .await?;
            let names = self.names.all(&inv.execution_id, run);
            let earlier: Vec<String> = (1..run).flat_map(|r| self.names.all(&inv.execution_id, r)).collect();
            Box::pin(self.ecs.run(target, &names, &earlier, inv)).await
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

    /// Stops the running task of `run` of the fire `execution_id` of `tenant` (its attempt
    /// ended without it: a timeout or a cancel), as the tenant: the task of any run up to it,
    /// since a run may have adopted an earlier run's task ([`ecs::EcsCaller::run`]).
    pub async fn stop_task(
        &self,
        target: &EcsTarget,
        tenant: &str,
        execution_id: &str,
        run: u32,
        reason: &str,
    ) {
        let names: Vec<String> = (1..=run).rev().flat_map(|r| self.names.all(execution_id, r)).collect();
        let fire = ecs::Fire { target, tenant, execution_id };
        crate::access::as_tenant(self.ecs.stop_run(&fire, &names, reason)).await
    }
}

/// Every tenant's [`RemoteTargets`], built on first use and kept (bounded): each tenant's
/// session, secret cache and ownership confirmations stay its own.
#[derive(Debug)]
pub struct Remotes {
    sessions: identity::TenantSessions,
    policy: sundial_model::outbound::TargetPolicy,
    names: ecs::RunNames,
    tenants: std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<RemoteTargets>>>,
}

impl Remotes {
    /// The targets of every tenant, through `sessions`; each tenant's webhooks reach the addresses
    /// `policy` allows it (the deployment's networks narrowed to the tenant's own `cidrs`).
    pub fn new(sessions: identity::TenantSessions, policy: sundial_model::outbound::TargetPolicy) -> Self {
        Remotes { sessions, policy, names: ecs::RunNames::default(), tenants: Default::default() }
    }

    /// The same, naming ECS runs with `names` (the deployment's key, `SUNDIAL_RUN_NAME_KEY`).
    pub fn with_run_names(mut self, names: ecs::RunNames) -> Self {
        self.names = names;
        self
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
        let targets = std::sync::Arc::new(RemoteTargets { names: self.names.clone(), ..targets });
        if let Ok(mut m) = self.tenants.lock() {
            if m.len() >= identity::MAX_TENANTS {
                m.clear();
            }
            m.insert(tenant.to_string(), targets.clone());
        }
        Ok(targets)
    }
}
