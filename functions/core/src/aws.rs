//! AWS SDK clients.
//!
//! `aws_config` reads `AWS_ENDPOINT_URL`, region and credentials from the environment, so the
//! same binaries talk to AWS when deployed and to the emulator on loopback when
//! `localstack/env.sh` is sourced. Nothing here hard-codes an endpoint.

use aws_config::{BehaviorVersion, SdkConfig};

/// The clients Sundial uses.
#[derive(Debug, Clone)]
pub struct Clients {
    /// DynamoDB.
    pub ddb: aws_sdk_dynamodb::Client,
    /// SQS.
    pub sqs: aws_sdk_sqs::Client,
    /// Lambda (tick fan-out, Lambda targets).
    pub lambda: aws_sdk_lambda::Client,
    /// Secrets Manager (webhook signing secrets and header values).
    pub secrets: aws_sdk_secretsmanager::Client,
    /// EventBridge (`FireMissed` events on the stack's bus).
    pub events: aws_sdk_eventbridge::Client,
    /// SNS (`sns` targets, as the tenant).
    pub sns: aws_sdk_sns::Client,
    /// Step Functions (`stepFunctions` targets, as the tenant).
    pub sfn: aws_sdk_sfn::Client,
    /// ECS (`ecs` targets: RunTask, tracked to the container's exit).
    pub ecs: aws_sdk_ecs::Client,
}

/// Loads the shared SDK configuration from the environment.
pub async fn load_sdk_config() -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest()).load().await
}

impl Clients {
    /// Clients from an SDK configuration (with the installed decorator, if any).
    pub fn new(sdk: &SdkConfig) -> Self {
        decorated(Self::plain(sdk))
    }

    /// Clients from an SDK configuration, without the decorator: for instrumentation that adds
    /// its own interceptor first.
    pub fn plain(sdk: &SdkConfig) -> Self {
        Clients {
            ddb: aws_sdk_dynamodb::Client::new(sdk),
            sqs: aws_sdk_sqs::Client::new(sdk),
            lambda: aws_sdk_lambda::Client::new(sdk),
            secrets: aws_sdk_secretsmanager::Client::new(sdk),
            events: aws_sdk_eventbridge::Client::new(sdk),
            sns: aws_sdk_sns::Client::new(sdk),
            sfn: aws_sdk_sfn::Client::new(sdk),
            ecs: aws_sdk_ecs::Client::new(sdk),
        }
    }

    /// Clients from the environment.
    pub async fn from_env() -> Self {
        Self::new(&load_sdk_config().await)
    }
}

/// A process-wide change to every [`Clients`] built after it is set: the test
/// instrumentation (`sundial_testkit`) adds its access recorder; nothing in the product sets it.
static DECORATOR: std::sync::OnceLock<fn(Clients) -> Clients> = std::sync::OnceLock::new();

/// Sets the [`Clients`] decorator (once per process; later calls are ignored).
pub fn set_client_decorator(decorate: fn(Clients) -> Clients) {
    let _ = DECORATOR.set(decorate);
}

/// `clients` as the installed decorator makes them (unchanged without one).
pub fn decorated(clients: Clients) -> Clients {
    match DECORATOR.get() {
        Some(decorate) => decorate(clients),
        None => clients,
    }
}
