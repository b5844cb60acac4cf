//! The `api` Lambda: API Gateway HTTP API (payload v2) → [`sundial_api::Api`].
use sundial_api::{api_with, lambda, ApiSettings};
use sundial_core::aws::Clients;
use sundial_core::config::Config;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    sundial_core::telemetry::init();
    let cfg = Config::from_env()?;
    let clients = Clients::from_env().await;
    let api = api_with(&clients, cfg, ApiSettings::from_env()?);
    let api = &api;
    lambda_http::run(lambda_http::service_fn(move |req| lambda::handle(api, req))).await
}
