//! The one way the instrumentation attaches an SDK interceptor: every client of a
//! [`Clients`] rebuilt with the interceptor made for its service (the access recorder and the
//! meter both do this, for the five services Sundial calls).

use aws_smithy_runtime_api::client::interceptors::Intercept;
use sundial_core::aws::Clients;

/// `clients` with `make(service)`'s interceptor added to each client (`dynamodb`, `sqs`,
/// `lambda`, `secretsmanager`, `events`: the IAM action prefixes), after the ones they carry.
pub fn with_interceptors<I: Intercept + 'static>(
    clients: Clients,
    make: impl Fn(&'static str) -> I,
) -> Clients {
    Clients {
        ddb: aws_sdk_dynamodb::Client::from_conf(
            clients.ddb.config().to_builder().interceptor(make("dynamodb")).build(),
        ),
        sqs: aws_sdk_sqs::Client::from_conf(
            clients.sqs.config().to_builder().interceptor(make("sqs")).build(),
        ),
        lambda: aws_sdk_lambda::Client::from_conf(
            clients.lambda.config().to_builder().interceptor(make("lambda")).build(),
        ),
        secrets: aws_sdk_secretsmanager::Client::from_conf(
            clients.secrets.config().to_builder().interceptor(make("secretsmanager")).build(),
        ),
        events: aws_sdk_eventbridge::Client::from_conf(
            clients.events.config().to_builder().interceptor(make("events")).build(),
        ),
    }
}
