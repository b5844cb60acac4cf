//! The `ingest` Lambda: the tenants' event sources (an SQS event source mapping on each tenant
//! queue, a rule on each tenant bus) → [`sundial_api::ingest::Ingest`]. Config, clients,
//! `run(service_fn(..))`; logic in `sundial_api::ingest` and `sundial_core::control::events`.
use lambda_runtime::{run, service_fn, Diagnostic, LambdaEvent};
use sundial_api::ingest::{Ingest, IngestEvent};
use sundial_api::{api_with_backpressure, ApiSettings};
use sundial_core::aws::{load_sdk_config, Clients};
use sundial_core::config::{BackpressureSettings, Config, EventSourceSettings};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    sundial_core::telemetry::init();
    #[cfg(feature = "iam-record")]
    sundial_testkit::access::install();
    let cfg = Config::from_env()?;
    let sdk = load_sdk_config().await;
    let clients = Clients::new(&sdk);
    // The API's quotas and back-pressure apply to events from every source alike.
    let api =
        api_with_backpressure(&clients, cfg, ApiSettings::from_env()?, BackpressureSettings::from_env()?);
    let ingest = Ingest::new(api, EventSourceSettings::from_env()?, clients.sqs.clone());
    let ingest = &ingest;
    run(service_fn(move |event: LambdaEvent<IngestEvent>| async move {
        ingest
            .handle(event.payload)
            .await
            .map_err(|reason| Diagnostic { error_type: "EventNotIngested".into(), error_message: reason })
    }))
    .await
}
