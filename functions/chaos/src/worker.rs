//! The chaos run's worker process: the real ECS long-poll loop (`sundial_worker::long_poll::run`) with
//! the chaos handler registered, its metrics journalled, and optionally a skewed clock.
//!
//! The run starts several of these as child processes (`chaos worker`) with `AWS_ENDPOINT_URL`
//! pointing at the fault proxy, so they can be SIGKILLed, SIGSTOPped and restarted like ECS
//! tasks. The clock skew is wired here ([`SKEW_MS`], through [`SkewedClock`]), not in the
//! execution plane: `Worker::new` already takes its clock as an argument.

use crate::effect::{EffectHandler, EffectStore, Journal, JournalSink, SkewedClock, HANDLER};
use std::path::PathBuf;
use std::sync::Arc;
use sundial_core::aws::Clients;
use sundial_core::config::{Config, WorkerSettings};
use sundial_core::execution::clock::{Clock, SystemClock};
use sundial_core::execution::target::in_process::Handlers;
use sundial_core::execution::worker::Worker;
use tokio::signal::unix::{signal, SignalKind};
use tokio_util::sync::CancellationToken;

/// The journal file (required).
pub const JOURNAL: &str = "SUNDIAL_CHAOS_JOURNAL";
/// The fenced resources' table (required).
pub const EFFECTS_TABLE: &str = "SUNDIAL_CHAOS_EFFECTS_TABLE";
/// Offset of this worker's clock from the host's, in ms (default 0).
pub const SKEW_MS: &str = "SUNDIAL_CHAOS_CLOCK_SKEW_MS";

fn required(name: &str) -> anyhow::Result<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty()).ok_or_else(|| anyhow::anyhow!("{name} is not set"))
}

/// Runs one worker process until SIGTERM.
pub async fn main() -> anyhow::Result<()> {
    sundial_core::telemetry::init();
    let cfg = Config::from_env()?;
    let mut settings = WorkerSettings::from_env()?;
    settings.tenant_roles = sundial_core::config::TenantRoleSettings::from_env()?.roles;
    let journal = Arc::new(Journal::open(&PathBuf::from(required(JOURNAL)?))?);
    let skew: i64 = match std::env::var(SKEW_MS) {
        Ok(v) if !v.is_empty() => {
            v.parse().map_err(|_| anyhow::anyhow!("{SKEW_MS}={v:?} is not an integer"))?
        }
        _ => 0,
    };
    sundial_testkit::access::install();
    let clients = Clients::from_env().await;
    let handler = EffectHandler {
        store: EffectStore::new(clients.ddb.clone(), required(EFFECTS_TABLE)?),
        journal: journal.clone(),
        worker: settings.worker_id.clone(),
        real: Arc::new(SystemClock),
    };
    let sink = Arc::new(JournalSink::new(&settings.worker_id, journal));
    let clock: Arc<dyn Clock> = Arc::new(SkewedClock { offset_ms: skew });
    tracing::info!(worker = %settings.worker_id, skew_ms = skew, "chaos worker starting");
    let shards = crate::shards::ShardHandler {
        ledger: crate::shards::ShardLedger::new(clients.ddb.clone(), required(EFFECTS_TABLE)?),
    };
    let handlers = Handlers::new().with(HANDLER, handler).with(crate::shards::SHARD_HANDLER, shards);
    let worker = Arc::new(Worker::new(cfg, settings, &clients, handlers, clock, sink)?);
    let opts = sundial_worker::long_poll::EcsOptions::from_env()?;
    let shutdown = CancellationToken::new();
    let mut term = signal(SignalKind::terminate())?;
    let trigger = shutdown.clone();
    tokio::spawn(async move {
        term.recv().await;
        trigger.cancel();
    });
    sundial_worker::long_poll::run(worker, opts, shutdown).await?;
    Ok(())
}
