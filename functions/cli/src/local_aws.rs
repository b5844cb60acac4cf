//! The local emulator's AWS settings, shared by the local run (`sundial dev`) and the commands
//! that talk to it (`sundial events send`): a loopback endpoint gets dummy credentials and a
//! fixed region, so nothing here ever resolves real credentials for an emulator.

/// Whether `endpoint` (`http://host:port`) is on this machine.
pub(crate) fn is_loopback(endpoint: &str) -> bool {
    let host = endpoint.trim_start_matches("http://").split([':', '/']).next().unwrap_or_default();
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
}

/// SDK settings for the emulator at `endpoint`: dummy credentials, `us-east-1`.
pub(crate) fn sdk_config(endpoint: &str) -> aws_config::SdkConfig {
    let creds = aws_credential_types::Credentials::new("test", "test", None, None, "sundial-dev");
    aws_config::SdkConfig::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(aws_credential_types::provider::SharedCredentialsProvider::new(creds))
        .build()
}
