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
}

/// Loads the shared SDK configuration from the environment.
pub async fn load_sdk_config() -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest()).load().await
}

impl Clients {
    /// Clients from an SDK configuration.
    pub fn new(sdk: &SdkConfig) -> Self {
        record_access(Clients {
            ddb: aws_sdk_dynamodb::Client::new(sdk),
            sqs: aws_sdk_sqs::Client::new(sdk),
            lambda: aws_sdk_lambda::Client::new(sdk),
            secrets: aws_sdk_secretsmanager::Client::new(sdk),
            events: aws_sdk_eventbridge::Client::new(sdk),
        })
    }

    /// Clients from the environment.
    pub async fn from_env() -> Self {
        Self::new(&load_sdk_config().await)
    }
}

/// Adds an [`AccessRecorder`] to each client when recording.
pub(crate) fn record_access(clients: Clients) -> Clients {
    if !crate::access::recording() {
        return clients;
    }
    Clients {
        ddb: aws_sdk_dynamodb::Client::from_conf(
            clients
                .ddb
                .config()
                .to_builder()
                .interceptor(crate::access::AccessRecorder::new("dynamodb"))
                .build(),
        ),
        sqs: aws_sdk_sqs::Client::from_conf(
            clients.sqs.config().to_builder().interceptor(crate::access::AccessRecorder::new("sqs")).build(),
        ),
        lambda: aws_sdk_lambda::Client::from_conf(
            clients
                .lambda
                .config()
                .to_builder()
                .interceptor(crate::access::AccessRecorder::new("lambda"))
                .build(),
        ),
        secrets: aws_sdk_secretsmanager::Client::from_conf(
            clients
                .secrets
                .config()
                .to_builder()
                .interceptor(crate::access::AccessRecorder::new("secretsmanager"))
                .build(),
        ),
        events: aws_sdk_eventbridge::Client::from_conf(
            clients
                .events
                .config()
                .to_builder()
                .interceptor(crate::access::AccessRecorder::new("events"))
                .build(),
        ),
    }
}
