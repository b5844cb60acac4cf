//! A DynamoDB client for the local emulator only.
//!
//! The example creates and deletes tables, so it is built never to reach AWS: the endpoint is
//! explicit and the credentials are dummies, whatever profile the developer has configured.

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_dynamodb::Client;

/// `AWS_ENDPOINT_URL`, else the emulator's default `http://127.0.0.1:4566`
/// (`localstack/env.sh` sets the same).
pub fn default_endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| {
        let port = std::env::var("SUNDIAL_EMULATOR_PORT").unwrap_or_else(|_| "4566".into());
        format!("http://127.0.0.1:{port}")
    })
}

/// A client for the emulator at `endpoint`, with dummy credentials.
pub fn dynamo_client(endpoint: &str) -> Client {
    let conf = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(Credentials::new("test", "test", None, None, "settlement-example"))
        .build();
    Client::from_conf(conf)
}
