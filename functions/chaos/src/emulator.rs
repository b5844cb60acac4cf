//! SDK configuration for the local emulator, directly or through a fault proxy.
//!
//! Built explicitly with dummy credentials (never from a profile), so nothing in a chaos run can
//! reach real AWS; the endpoint is always loopback.

use aws_config::{BehaviorVersion, Region, SdkConfig};
use sundial_core::aws::Clients;

/// The emulator: `AWS_ENDPOINT_URL`, else `http://127.0.0.1:$SUNDIAL_EMULATOR_PORT` (4566).
pub fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| {
        let port = std::env::var("SUNDIAL_EMULATOR_PORT").unwrap_or_else(|_| "4566".into());
        format!("http://127.0.0.1:{port}")
    })
}

/// An SDK configuration for `endpoint` with dummy credentials and the SDK's standard retries.
pub fn sdk_config(endpoint: &str) -> SdkConfig {
    let creds = aws_credential_types::Credentials::new("test", "test", None, None, "sundial-chaos");
    SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(aws_credential_types::provider::SharedCredentialsProvider::new(creds))
        .build()
}

/// Sundial's clients for `endpoint`.
pub fn clients(endpoint: &str) -> Clients {
    sundial_testkit::access::install();
    Clients::new(&sdk_config(endpoint))
}

/// The environment a child process needs to reach `endpoint` with dummy credentials.
pub fn child_env(endpoint: &str) -> Vec<(String, String)> {
    [
        ("AWS_ENDPOINT_URL", endpoint),
        ("AWS_REGION", "us-east-1"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}
