pub async fn run_all(_sdk: &aws_config::SdkConfig, _prefix: &str) -> Vec<(&'static str, Result<(), String>)> {
    Vec::new()
}
