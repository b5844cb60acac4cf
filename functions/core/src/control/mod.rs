//! # The control plane's domain (seed 000 §2, §14)
//!
//! What the HTTP API does, minus HTTP: create, read, list, edit, pause, resume and delete jobs;
//! list, read and cancel executions; list and replay dead letters; trigger a job now; backfill a
//! past range; and the operations audit log. `functions/api` maps requests to these functions
//! and their errors to status codes; nothing here knows about requests or JSON bodies.
//!
//! Rules every function follows:
//! - **Tenant first.** Every key is built from the caller's tenant (see [`crate::keys`]), so
//!   another tenant's job or execution is simply *not found*: there is no read that could leak
//!   it and no "forbidden" that would confirm it exists.
//! - **Every change is audited where it happens.** A definition change (create, edit, pause,
//!   resume, delete) bumps `ver`, writes an immutable `V#{version}` snapshot and appends to
//!   the operations log in one `TransactWriteItems`: no change without its audit entry. An
//!   execution transition (cancel, replay, trigger, backfill) appends to the execution's own
//!   timeline in the same conditional write, then to the operations log.
//! - **Edits never rewrite history.** Executions snapshot the definition and its version when
//!   they are created; an edit applies to fires after the switch only.
//! - **`now` is a parameter**; the API reads the clock once per request.
//!
//! ## Layout
//! - [`error`]: [`ControlError`], mapped one-to-one to HTTP statuses by the API.
//! - [`page`]: opaque cursors that carry only the caller-independent part of a key.
//! - [`ops`]: the operations audit log: record an execution operation, list the caller's log.
//! - [`jobs`]: create / get / list / update (optimistic concurrency) / pause / resume / delete.
//! - [`executions`]: list by job or status, get with timeline, cancel, trigger now, backfill.
//! - [`dlq`]: dead letters: list and replay (DEAD → READY, same execution id).
pub mod dlq;
pub mod error;
pub mod executions;
pub mod jobs;
pub mod ops;
pub mod page;

pub use error::ControlError;

use crate::store::executions::ExecStore;
use crate::trigger::scan::TriggerCtx;

/// Limits and retention periods of the control plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlSettings {
    /// How long a deleted job's definition and versions are kept (seconds; the TTL).
    pub delete_retention_secs: i64,
    /// How long operations-log entries are kept (seconds; the TTL).
    pub ops_retention_secs: i64,
    /// Most executions one backfill may create.
    pub max_backfill: usize,
    /// Largest page a list returns.
    pub max_page: u32,
}

impl Default for ControlSettings {
    fn default() -> Self {
        ControlSettings {
            delete_retention_secs: 30 * 86_400,
            ops_retention_secs: 400 * 86_400,
            max_backfill: 1_000,
            max_page: 100,
        }
    }
}

/// Everything the control plane needs: the trigger's clients and queues (it dispatches jobs
/// right after create, resume and edit, and sends manual and replayed executions), the
/// execution store (cancel), and its settings.
#[derive(Debug)]
pub struct Control {
    /// DynamoDB, names and pool queues.
    pub trigger: TriggerCtx,
    /// The executions table's conditional writes.
    pub execs: ExecStore,
    /// Limits and retention.
    pub settings: ControlSettings,
}

impl Control {
    /// A control plane over `trigger`'s clients and names.
    pub fn new(trigger: TriggerCtx, settings: ControlSettings) -> Self {
        let execs = ExecStore::new(trigger.ddb.clone(), trigger.cfg.executions_table.clone());
        Control { trigger, execs, settings }
    }

    /// DynamoDB.
    pub fn ddb(&self) -> &aws_sdk_dynamodb::Client {
        &self.trigger.ddb
    }

    /// Table names and pools.
    pub fn cfg(&self) -> &crate::config::Config {
        &self.trigger.cfg
    }
}

/// Who asks: the tenant every key is built from, and the principal written to audit records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The tenant (from the authorizer, never from the request).
    pub tenant: String,
    /// The principal (JWT `sub`, IAM user ARN, ...), for the audit trail.
    pub principal: String,
}

impl Caller {
    /// The actor string of audit events: `api:<principal>`.
    pub fn actor(&self) -> String {
        format!("api:{}", self.principal)
    }
}
