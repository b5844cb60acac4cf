//! # sundial-api: the control plane's HTTP API
//!
//! One router ([`Api::handle`]) behind two entry points: the `api` Lambda (API Gateway HTTP
//! API, payload v2, via `lambda_http`) and the local run's loopback server (hyper), so
//! `sundial dev` serves exactly the deployed routes. The router only parses, authorizes and
//! maps errors; the domain lives in [`sundial_core::control`].
//!
//! ## Layout
//! - [`routes`]: the route table (also checked against `openapi.json` by a test).
//! - [`router`]: [`Api`]: request → checks (route, caller, body, idempotency) → handler → JSON
//!   response.
//! - `handlers`: one function per operation, by family (jobs, schedules, executions, dead
//!   letters, calendars, resources, the operations log).
//! - [`auth`]: tenant and principal from the authorizer context (JWT claims or IAM).
//! - [`idempotency`]: `Idempotency-Key` on create, trigger-now and backfill.
//! - [`error`]: the `{"error": {code, message, field}}` shape and status mapping.
//! - [`dto`]: JSON views of jobs, executions and operations; request bodies.
//! - [`console`]: the web console's embedded files under `/console`.
//! - [`exec_logs`]: the local run's worker log lines per execution (`/v1/executions/{id}/logs`).
//! - [`lambda`]: `lambda_http` ⇄ router.
//! - [`local`]: hyper ⇄ router, for the local run.
//!
//! `docs/api.md` documents the API; `openapi.json` is served at `/openapi.json`.
pub mod auth;
pub mod console;
pub mod dto;
pub mod error;
pub mod exec_logs;
mod handlers;
pub mod idempotency;
pub mod lambda;
pub mod local;
pub mod router;
pub mod routes;

pub use router::{Api, ApiRequest, ApiResponse};
pub use sundial_core::config::ApiSettings;

use std::sync::Arc;
use sundial_core::aws::Clients;
use sundial_core::config::Config;
use sundial_core::control::{Control, ControlSettings};
use sundial_core::execution::clock::SystemClock;
use sundial_core::queue::PoolQueues;
use sundial_core::Ctx;

/// An API over `clients` and `cfg` with the system clock; the control plane enforces the
/// quotas of `settings`.
pub fn api_with(clients: &Clients, cfg: Config, settings: ApiSettings) -> Api {
    api_with_backpressure(clients, cfg, settings, sundial_core::priority::Backpressure::default())
}

/// [`api_with`] with back-pressure thresholds (`SUNDIAL_BACKPRESSURE_*`, docs/priority.md).
pub fn api_with_backpressure(
    clients: &Clients,
    cfg: Config,
    settings: ApiSettings,
    backpressure: sundial_core::priority::Backpressure,
) -> Api {
    let trigger =
        Ctx { ddb: clients.ddb.clone(), queues: PoolQueues::new(clients.sqs.clone(), cfg.clone()), cfg };
    let control = ControlSettings {
        quotas: settings.quotas,
        operator_tenants: settings.operator_tenants.clone(),
        backpressure,
        ..ControlSettings::default()
    };
    Api::new(Control::new(trigger, control), Arc::new(SystemClock), settings)
}
