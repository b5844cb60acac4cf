//! Targets: what a worker calls for an execution, one kind to a file.
//!
//! Each kind's file is its whole room in this crate: the struct (the only description of its
//! fields, with the schema patterns beside them), its limits, its [`check`](TargetPolicy::check)
//! against the tenant's policy, and its tests. The call itself lives in `sundial-core`'s
//! `execution/target/<kind>.rs`; CDK grants and the console's form are the rest of the room
//! (docs/targets.md).
//!
//! - [`lambda`]: invoke a Lambda function.
//! - [`http`]: POST to an HTTPS webhook, signed when it names a secret.
//! - [`sqs`]: send to a user's SQS queue.
//! - [`event_bridge`]: put one event on a tenant's bus.
//! - [`sns`]: publish to a tenant's topic.
//! - [`step_functions`]: start (and track) an execution of a tenant's state machine.
//! - [`ecs`]: run (and track) a task of a tenant's task definition.
//! - [`in_process`]: a handler registered in the ECS worker.
//! - [`view`]: [`PolicyView`], what a kind's check is judged against.

pub mod ecs;
pub mod event_bridge;
pub mod http;
pub mod in_process;
pub mod lambda;
pub mod sns;
pub mod sqs;
pub mod step_functions;
pub mod view;

#[cfg(test)]
mod testing;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

use crate::deployment::Deployment;
use crate::outbound::{Refusal, TargetPolicy};

pub use ecs::{EcsLaunchType, EcsTarget, MAX_ECS_SECURITY_GROUPS, MAX_ECS_SUBNETS};
pub use event_bridge::EventBridgeTarget;
pub use http::{HttpTarget, SecretRef, MAX_HEADERS};
pub use in_process::InProcessTarget;
pub use lambda::LambdaTarget;
pub use sns::SnsTarget;
pub use sqs::SqsTarget;
pub use step_functions::StepFunctionsTarget;
pub use view::PolicyView;

/// What a worker calls for an execution: `{"type": "lambda" | "http" | "sqs" | "sns" |
/// "eventBridge" | "stepFunctions" | "ecs" | "inProcess", ...the kind's fields}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Target {
    /// Invoke a Lambda function (RequestResponse).
    Lambda(LambdaTarget),
    /// POST to an HTTPS webhook with `Idempotency-Key: <executionId>`, signed per Standard
    /// Webhooks when it names a signing secret (docs/webhooks.md).
    Http(HttpTarget),
    /// Send a message to a user's SQS queue.
    Sqs(SqsTarget),
    /// Put the invocation as the `detail` of one event on a tenant's EventBridge bus.
    EventBridge(EventBridgeTarget),
    /// Publish the invocation to a tenant's SNS topic.
    Sns(SnsTarget),
    /// Start an execution of a tenant's Step Functions state machine and track it.
    StepFunctions(StepFunctionsTarget),
    /// Run a task of a tenant's ECS task definition and track it to its container's exit.
    Ecs(EcsTarget),
    /// A Rust handler registered in the worker process (ECS pools). `inProcess`
    /// (`in_process` is read from definitions stored before 0.2).
    #[serde(alias = "in_process")]
    InProcess(InProcessTarget),
}

impl Target {
    /// An unsigned webhook target.
    pub fn http(url: impl Into<String>) -> Self {
        Target::Http(HttpTarget::new(url))
    }

    /// A Lambda target.
    pub fn lambda(function: impl Into<String>) -> Self {
        Target::Lambda(LambdaTarget { function: function.into() })
    }

    /// An SQS target.
    pub fn sqs(queue_url: impl Into<String>) -> Self {
        Target::Sqs(SqsTarget { queue_url: queue_url.into() })
    }

    /// An in-process handler.
    pub fn in_process(handler: impl Into<String>) -> Self {
        Target::InProcess(InProcessTarget { handler: handler.into() })
    }

    /// A Step Functions target.
    pub fn step_functions(state_machine_arn: impl Into<String>) -> Self {
        Target::StepFunctions(StepFunctionsTarget { state_machine_arn: state_machine_arn.into() })
    }

    /// Whether a call only starts the work and the worker tracks it to its end under the
    /// lease (a state machine's execution, an ECS task), noting what it started on the fire's
    /// timeline; the other kinds are done when the call answers.
    pub fn tracked(&self) -> bool {
        matches!(self, Target::StepFunctions(_) | Target::Ecs(_))
    }

    /// The kind's wire name (`"ecs"`, `"stepFunctions"`, ...), as `type` carries it.
    pub fn kind(&self) -> &'static str {
        match self {
            Target::Lambda(_) => "lambda",
            Target::Http(_) => "http",
            Target::Sqs(_) => "sqs",
            Target::EventBridge(_) => "eventBridge",
            Target::Sns(_) => "sns",
            Target::StepFunctions(_) => "stepFunctions",
            Target::Ecs(_) => "ecs",
            Target::InProcess(_) => "inProcess",
        }
    }
}

impl TargetPolicy {
    /// Judges `tenant`'s `target` (docs/targets.md; the module header of
    /// [`outbound`](crate::outbound) lists the rules): each kind checks its own fields.
    /// `cfg` names Sundial's own queues. The control plane runs it when a job is created or
    /// edited, and the worker again before every call.
    pub fn check<'a>(
        &self,
        cfg: impl Into<Deployment<'a>>,
        tenant: &str,
        target: &Target,
    ) -> Result<(), Refusal> {
        let deployment: Deployment<'a> = cfg.into();
        let view = PolicyView { policy: self, deployment, tenant };
        match target {
            Target::Lambda(t) => t.check(&view),
            Target::Http(t) => t.check(&view),
            Target::Sqs(t) => t.check(&view),
            Target::EventBridge(t) => t.check(&view),
            Target::Sns(t) => t.check(&view),
            Target::StepFunctions(t) => t.check(&view),
            Target::Ecs(t) => t.check(&view),
            Target::InProcess(t) => t.check(&view),
        }
    }
}

/// The schema of [`Target`]'s wire form: the API documents each kind as its own component
/// (`LambdaTarget`, `HttpTarget`, ...) under a `oneOf` with a `type` discriminator. utoipa
/// writes that for an untagged enum of newtype variants, so this schema-only enum over the
/// kinds' own structs gives it; each component then gets its `type` property from
/// [`with_type`].
#[derive(ToSchema)]
#[serde(untagged)]
#[schema(description = "What a worker calls, by `type`.", discriminator(property_name = "type", mapping(
    ("lambda" = "#/components/schemas/LambdaTarget"),
    ("http" = "#/components/schemas/HttpTarget"),
    ("sqs" = "#/components/schemas/SqsTarget"),
    ("sns" = "#/components/schemas/SnsTarget"),
    ("eventBridge" = "#/components/schemas/EventBridgeTarget"),
    ("stepFunctions" = "#/components/schemas/StepFunctionsTarget"),
    ("ecs" = "#/components/schemas/EcsTarget"),
    ("inProcess" = "#/components/schemas/InProcessTarget"),
)))]
#[allow(dead_code)] // Schema only: never built.
enum TargetWire {
    Lambda(LambdaTarget),
    Http(HttpTarget),
    Sqs(SqsTarget),
    Sns(SnsTarget),
    EventBridge(EventBridgeTarget),
    StepFunctions(StepFunctionsTarget),
    Ecs(EcsTarget),
    InProcess(InProcessTarget),
}

impl PartialSchema for Target {
    fn schema() -> RefOr<Schema> {
        TargetWire::schema()
    }
}

impl ToSchema for Target {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Target")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        kind::<LambdaTarget>(schemas, "lambda");
        kind::<HttpTarget>(schemas, "http");
        kind::<SqsTarget>(schemas, "sqs");
        kind::<SnsTarget>(schemas, "sns");
        kind::<EventBridgeTarget>(schemas, "eventBridge");
        kind::<StepFunctionsTarget>(schemas, "stepFunctions");
        kind::<EcsTarget>(schemas, "ecs");
        kind::<InProcessTarget>(schemas, "inProcess");
        // `HttpTarget.headers` is written by hand (`maxProperties`), so its reference is too.
        schemas.push((SecretRef::name().into_owned(), SecretRef::schema()));
        SecretRef::schemas(schemas);
    }
}

/// Registers kind `T`'s component, with the `type` property its tag adds on the wire.
fn kind<T: ToSchema>(schemas: &mut Vec<(String, RefOr<Schema>)>, tag: &str) {
    schemas.push((T::name().into_owned(), with_type(T::schema(), tag)));
    T::schemas(schemas);
}

/// `schema` (a kind's struct) with the required property `type: "<tag>"` first, as
/// `#[serde(tag = "type")]` writes it before the struct's own fields.
fn with_type(schema: RefOr<Schema>, tag: &str) -> RefOr<Schema> {
    let RefOr::T(Schema::Object(o)) = schema else { return schema };
    let mut properties = o.properties.clone();
    properties.clear();
    properties.insert("type".to_string(), RefOr::T(Schema::Object(sundial_schedule::openapi::tag(tag))));
    properties.extend(o.properties.clone());
    let required = std::iter::once("type".to_string()).chain(o.required.iter().cloned()).collect();
    let mut o = o;
    o.properties = properties;
    o.required = required;
    RefOr::T(Schema::Object(o))
}

#[cfg(test)]
mod tests;
