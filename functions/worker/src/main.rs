//! The `worker` Lambda: SQS event source → [`sundial_worker::lambda::function_handler`].
use lambda_runtime::{run, service_fn, Error};
use sundial_core::execution::target::in_process::Handlers;

#[tokio::main]
async fn main() -> Result<(), Error> {
    sundial_core::telemetry::init();
    #[cfg(feature = "iam-record")]
    sundial_testkit::access::install();
    let worker = sundial_worker::worker_from_env(Handlers::new()).await?;
    run(service_fn(move |ev| sundial_worker::lambda::function_handler(worker.clone(), ev))).await
}
