//! The `worker-ecs` binary: long-polls its pool's queue ([`sundial_worker::long_poll::run`]) until
//! SIGTERM (ECS stop) or Ctrl-C. It runs remote targets (webhooks, Lambda, SQS) and registers no
//! in-process handler: build your own binary with your handlers the same way. The diagnostic
//! `sleep` and map-reduce `count` handlers exist only where the operator opts in with
//! `SUNDIAL_DIAGNOSTIC_HANDLERS=true` (the local run and the tests): registered in a shared pool,
//! any tenant could hold a slot for hours or emit 100,000 items a fire with them.
use sundial_core::execution::target::in_process::{Handlers, Sleep};
use tokio::signal::unix::{signal, SignalKind};
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    sundial_core::telemetry::init();
    #[cfg(feature = "iam-record")]
    sundial_testkit::access::install();
    let opts = sundial_worker::long_poll::EcsOptions::from_env()?;
    let handlers = if opts.diagnostic_handlers {
        tracing::warn!("diagnostic handlers sleep and count registered (SUNDIAL_DIAGNOSTIC_HANDLERS)");
        Handlers::new()
            .with("sleep", Sleep)
            .with_map_reduce("count", sundial_core::execution::mapreduce::Count)
    } else {
        Handlers::new()
    };
    let worker = sundial_worker::worker_from_env(handlers).await?;
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
    let stats = sundial_worker::long_poll::run(worker, opts, shutdown).await?;
    tracing::info!(?stats, "stopped");
    Ok(())
}
