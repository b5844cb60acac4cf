//! # sundial-worker
//!
//! Two entry points over one core ([`sundial_core::execution::worker::Worker`]):
//! - [`lambda`]: the SQS-triggered Lambda. Messages of a batch run concurrently; the response
//!   lists the ones to keep (`batch_item_failures`, partial batch response) after moving each
//!   kept message's visibility to when it should come back (retry backoff, lease end).
//! - [`long_poll`]: the long-running ECS binary's loop. It long-polls its pool's queue for only as many
//!   messages as it has free slots (docs/execution.md §7: never take a thousand and queue them
//!   locally while their leases run out), extends visibility while working, and on SIGTERM stops
//!   receiving, lets running work finish for a grace period, then releases what it still holds.
//!
//! - [`notify_poll`]: the ECS binary's consumer of its pool's outcome-notification queue (the
//!   Lambda's is an event source of its own, dispatched by [`lambda`]).
//!
//! The binaries only read config, build clients and call into these modules.

pub mod lambda;
pub mod long_poll;
pub mod notify_poll;

use std::sync::Arc;
use sundial_core::aws::Clients;
use sundial_core::config::{Config, WorkerSettings};
use sundial_core::execution::clock::SystemClock;
use sundial_core::execution::metrics::EmfStdout;
use sundial_core::execution::target::in_process::Handlers;
use sundial_core::execution::worker::Worker;

/// Builds a worker from the environment (config, settings, SDK clients), with `handlers`.
pub async fn worker_from_env(handlers: Handlers) -> anyhow::Result<Arc<Worker>> {
    let cfg = Config::from_env()?;
    let mut settings = WorkerSettings::from_env()?;
    settings.tenant_roles = sundial_core::config::TenantRoleSettings::from_env()?.roles;
    let clients = Clients::from_env().await;
    let w = Worker::new(cfg, settings, &clients, handlers, Arc::new(SystemClock), Arc::new(EmfStdout))?;
    Ok(Arc::new(w))
}
