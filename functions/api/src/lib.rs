//! # sundial-api: the control plane's HTTP API
//!
//! One axum router ([`Api::router`]) behind two entry points: the `api` Lambda (API Gateway HTTP
//! API, payload v2, via `lambda_http`) and the local run's loopback server (hyper), so
//! `sundial dev` serves exactly the deployed routes. Handlers are typed functions (path, query
//! and body extracted into types, wire types answered); the cross-cutting checks are tower
//! layers; the OpenAPI document is generated from both ([`doc`]). The domain lives in
//! [`sundial_core::control`].
//!
//! ## Layout
//! - [`app`]: the router: every operation and the layers around them.
//! - `operations`: the authenticated operations by handler, which the router serves and the
//!   document describes.
//! - [`layers`]: request id, hardening headers, the error mapper, the clock, caller and tenant,
//!   the per-tenant throttle, body size and type, `Idempotency-Key`.
//! - `handlers`: one function per operation, by family (jobs, schedules, executions, dead
//!   letters, calendars, resources, the operations log and the console).
//! - [`extract`]: the extractors (caller, instant, path, query, body, `If-Match`).
//! - [`params`]: path and query parameters as checked types.
//! - [`doc`]: the OpenAPI document and its route (`/openapi.json`; `openapi.json` is its golden
//!   copy).
//! - [`dto`]: the domain's values as wire types ([`sundial_api_types`]).
//! - [`auth`]: tenant and principal from the authorizer context (JWT claims or IAM).
//! - [`error`]: the `{"error": {code, message, field}}` shape and status mapping.
//! - [`console`]: the web console's embedded files under `/console`.
//! - [`exec_logs`]: the local run's worker log lines per execution (`/v1/executions/{id}/logs`).
//! - [`lambda`]: `lambda_http` ⇄ router.
//! - [`local`]: hyper ⇄ router, for the local run.
//!
//! `docs/api.md` documents the API.
pub mod app;
pub mod auth;
pub mod console;
pub mod doc;
pub mod dto;
pub mod error;
pub mod exec_logs;
pub mod extract;
mod handlers;
pub mod ingest;
pub mod lambda;
pub mod layers;
pub mod local;
mod operations;
pub mod params;

pub use sundial_core::config::ApiSettings;

use crate::auth::PrincipalTags;
use chrono::{DateTime, Utc};
use std::sync::Arc;
use sundial_core::aws::Clients;
use sundial_core::config::Config;
use sundial_core::control::{Control, ControlSettings};
use sundial_core::execution::clock::{Clock, SystemClock};
use sundial_core::Ctx;
use sundial_store::queue::PoolQueues;

/// The API's state: the control plane, a clock and settings. Cheap to clone (every handler gets
/// one through axum's `State`).
#[derive(Debug, Clone)]
pub struct Api {
    control: Arc<Control>,
    clock: Arc<dyn Clock>,
    settings: ApiSettings,
    /// Reads principals' tenant tags (`iam-principal-tag` tenancy, [`crate::auth`]).
    tags: Option<Arc<PrincipalTags>>,
    /// How the web console signs in (`/console/config.json`, [`crate::console`]).
    console: console::ConsoleSettings,
    /// The local run's worker log lines per execution ([`crate::exec_logs`]); none deployed.
    exec_logs: Option<Arc<exec_logs::ExecLogs>>,
}

impl Api {
    /// An API over `control`, reading time from `clock`.
    pub fn new(control: Control, clock: Arc<dyn Clock>, settings: ApiSettings) -> Self {
        Api {
            control: Arc::new(control),
            clock,
            settings,
            tags: None,
            console: Default::default(),
            exec_logs: None,
        }
    }

    /// The same API with the web console signing in as `console` says.
    pub fn with_console(mut self, console: console::ConsoleSettings) -> Self {
        self.console = console;
        self
    }

    /// The same API serving the worker log lines `logs` captured (the local run).
    pub fn with_exec_logs(mut self, logs: Arc<exec_logs::ExecLogs>) -> Self {
        self.exec_logs = Some(logs);
        self
    }

    /// The same API reading principals' tenant tags from IAM (`iam-principal-tag` tenancy).
    pub fn with_iam(mut self, iam: aws_sdk_iam::Client) -> Self {
        self.tags = Some(Arc::new(PrincipalTags::new(iam)));
        self
    }

    /// The router serving this API ([`app::router`]).
    pub fn router(&self) -> axum::Router {
        app::router(self.clone())
    }

    /// The principal tag reader, if any.
    pub fn principal_tags(&self) -> Option<&PrincipalTags> {
        self.tags.as_deref()
    }

    /// The settings.
    pub fn settings(&self) -> &ApiSettings {
        &self.settings
    }

    /// The control plane.
    pub fn control(&self) -> &Control {
        &self.control
    }

    /// The API clock's instant.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// How the web console signs in.
    pub(crate) fn console_settings(&self) -> &console::ConsoleSettings {
        &self.console
    }

    /// The local run's worker log lines, if any.
    pub(crate) fn exec_logs(&self) -> Option<&exec_logs::ExecLogs> {
        self.exec_logs.as_deref()
    }
}

/// An API over `clients` and `cfg` with the system clock; the control plane enforces the
/// quotas of `settings`.
pub fn api_with(clients: &Clients, cfg: Config, settings: ApiSettings) -> Api {
    api_with_backpressure(clients, cfg, settings, sundial_model::priority::Backpressure::default())
}

/// [`api_with`] with back-pressure thresholds (`SUNDIAL_BACKPRESSURE_*`, docs/priority.md).
pub fn api_with_backpressure(
    clients: &Clients,
    cfg: Config,
    settings: ApiSettings,
    backpressure: sundial_model::priority::Backpressure,
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
