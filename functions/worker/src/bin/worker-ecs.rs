//! The `worker-ecs` binary: long-polls its pool's queue ([`sundial_worker::ecs::run`]) until
//! SIGTERM (ECS stop) or Ctrl-C. In-process handlers are registered here; the shipped binary has
//! the diagnostic `sleep` handler and the diagnostic map-reduce `count` handler. Build your own binary with your handlers the same way.
use sundial_core::execution::target::in_process::{Handlers, Sleep};
use tokio::signal::unix::{signal, SignalKind};
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    sundial_core::telemetry::init();
    #[cfg(feature = "iam-record")]
    sundial_testkit::access::install();
    let worker = sundial_worker::worker_from_env(
        Handlers::new()
            .with("sleep", Sleep)
            .with_map_reduce("count", sundial_core::execution::mapreduce::Count),
    )
    .await?;
    let opts = sundial_worker::ecs::EcsOptions::from_env()?;
    let shutdown = CancellationToken::new();
    let mut term = signal(SignalKind::terminate())?;
    let trigger = shutdown.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        trigger.cancel();
    });
    let stats = sundial_worker::ecs::run(worker, opts, shutdown).await?;
    tracing::info!(?stats, "stopped");
    Ok(())
}
