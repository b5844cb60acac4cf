//! The `api` Lambda: API Gateway HTTP API (payload v2) → [`sundial_api::Api`]'s router.
use sundial_api::{api_with_backpressure, lambda, ApiSettings};
use sundial_core::aws::{load_sdk_config, Clients};
use sundial_core::config::Config;

/// The API function's parsed-schedule cache (bytes; one tenant holds at most a quarter).
const API_SCHEDULE_CACHE_BYTES: usize = 16 * 1024 * 1024;
/// The API function's calendar cache (bytes).
const API_CALENDAR_CACHE_BYTES: usize = 8 * 1024 * 1024;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    sundial_core::telemetry::init();
    #[cfg(feature = "iam-record")]
    sundial_testkit::access::install();
    let cfg = Config::from_env()?;
    // A 256 MB function: the parsed-schedule and calendar caches get a quarter of the scan's.
    sundial_core::schedules::set_byte_budgets(API_SCHEDULE_CACHE_BYTES, API_CALENDAR_CACHE_BYTES);
    let sdk = load_sdk_config().await;
    let clients = Clients::new(&sdk);
    // IAM is read only for `iam-principal-tag` tenancy (the tenant tag of the calling principal).
    let settings = ApiSettings::from_env()?;
    let console =
        sundial_api::console::ConsoleSettings::deployed(&settings, sdk.region().map(|r| r.to_string()));
    let api = api_with_backpressure(
        &clients,
        cfg,
        settings,
        sundial_core::config::BackpressureSettings::from_env()?,
    )
    .with_iam(aws_sdk_iam::Client::new(&sdk))
    .with_console(console);
    let router = api.router();
    let (api, router) = (&api, &router);
    lambda_http::run(lambda_http::service_fn(move |req| lambda::serve(router, api, req))).await
}
