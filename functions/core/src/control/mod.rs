//! # The control plane's domain (docs/architecture.md, "Three planes"; docs/api.md, "Decisions")
//!
//! What the HTTP API does, minus HTTP: create, read, list, edit, pause, resume and delete jobs;
//! list, read and cancel executions; list and replay dead letters; trigger a job now; backfill a
//! past range; and the operations audit log. `functions/api` maps requests to these functions
//! and their errors to status codes; nothing here knows about requests or JSON bodies.
//!
//! Rules every function follows:
//! - **Tenant first.** Every key is built from the caller's tenant (see [`sundial_model::keys`]), so
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
//! - [`calendars`]: business calendars: put (If-Match) / get / list / versions / delete (refused
//!   while in use), the chain in force for a job, re-planning the jobs after an edit.
//! - [`resources`]: platform-wide resource limits: put / delete (operators only), get / list,
//!   and the check that a job's `resources` name defined limits.
//! - [`fire_calendar`]: what a business calendar did to the fires an execution read shows
//!   (rolled from, skipped before), from the definition version that made each.
//! - [`dlq`]: dead letters: list and replay (DEAD → READY, same execution id).
//! - [`tzreport`]: the tzdb upgrade report: jobs whose next fires differ between the release
//!   they were computed with and the compiled one.
//!
//! Dependencies run one way: `jobs` → `executions` → `ops`/`page`, `dlq` → `executions`; what
//! several need (the tenant-scoped job read [`Control::job`]) lives on [`Control`] here.
pub mod calendars;
pub mod catch_up;
pub mod dependencies;
pub mod dlq;
pub mod error;
pub mod events;
pub mod executions;
pub mod fire_calendar;
pub mod jobs;
pub mod ops;
pub mod outcomes;
pub mod page;
pub mod pools;
pub(crate) mod quota;
pub mod resource_limits;
pub mod tzreport;
pub mod upcoming;

pub use error::ControlError;

use crate::Ctx;
use sundial_model::keys;
use sundial_model::Job;
use sundial_store::executions::ExecStore;
use sundial_store::jobs as jobs_store;

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
    /// Per-tenant quotas.
    pub quotas: Quotas,
    /// Lane depths from which create, trigger-now and backfill answer 429 `saturated`.
    pub backpressure: sundial_model::priority::Backpressure,
    /// The tz database release the control plane computes trigger positions with (create,
    /// edit, resume) and records on the job: the compiled one. A test sets an older release
    /// read from TZif data to create jobs "computed under" it.
    pub tzdb: Tzdb,
    /// Releases other than the compiled one whose rules the tz report can read (TZif data),
    /// to compare jobs recorded under them. Without the recorded release the report lists the
    /// job as `rulesUnavailable`.
    pub tzdb_releases: Vec<Tzdb>,
    /// Tenants whose callers are platform operators (resource limits, [`resources`]).
    pub operator_tenants: Vec<String>,
}

use sundial_schedule::tzdb::Tzdb;

pub use crate::config::Quotas;

impl Default for ControlSettings {
    fn default() -> Self {
        ControlSettings {
            delete_retention_secs: 30 * 86_400,
            ops_retention_secs: 400 * 86_400,
            max_backfill: 1_000,
            max_page: 100,
            quotas: Quotas::default(),
            backpressure: sundial_model::priority::Backpressure::default(),
            tzdb: Tzdb::compiled(),
            tzdb_releases: Vec::new(),
            operator_tenants: Vec::new(),
        }
    }
}

/// Everything the control plane needs: the shared clients and queues (it dispatches jobs
/// right after create, resume and edit, and sends manual and replayed executions), the
/// execution store (cancel), and its settings.
#[derive(Debug)]
pub struct Control {
    /// DynamoDB, names and pool queues.
    pub ctx: Ctx,
    /// The executions table's conditional writes.
    pub execs: ExecStore,
    /// Limits and retention.
    pub settings: ControlSettings,
}

impl Control {
    /// A control plane over `ctx`'s clients and names.
    pub fn new(ctx: Ctx, settings: ControlSettings) -> Self {
        let execs = ctx.execs();
        Control { ctx, execs, settings }
    }

    /// The caller's job (also when deleted and still retained). Here rather than in [`jobs`]
    /// because [`executions`] needs it too, and `jobs` depends on `executions` (a pause cancels
    /// future executions): the modules of the control plane depend on each other one way only.
    pub async fn job(&self, caller: &Caller, job_id: &str) -> Result<Job, ControlError> {
        keys::validate_id("jobId", job_id).map_err(|e| ControlError::invalid(e.field, e.reason))?;
        let job = jobs_store::get_job(self.ddb(), self.cfg(), &caller.tenant, job_id)
            .await?
            .ok_or(ControlError::NotFound { what: "job" })?;
        // Its business calendar versions, so the schedule parses on every path after this read
        // (one cached lookup, or a GetItem per level the first time).
        if let Err(e) = crate::schedules::calendars::ensure(self.ddb(), &self.cfg().jobs_table, &job).await {
            match e {
                crate::trigger::calendars::LoadError::Store(s) => return Err(s.into()),
                other => tracing::warn!(job = %job.job_id, error = %other, "business calendar not loadable"),
            }
        }
        Ok(job)
    }

    /// After a change that took `cur` (as it was) out of the every-minute or daily class
    /// committed: the second indexing pass of its open fires (`verify::after_leaving`). A
    /// failure is logged, not the caller's: the change is stored, and this only backs up the
    /// pass made before it. Here because both [`jobs`] and [`calendars`] make such changes.
    pub(crate) async fn after_leaving(&self, cur: &Job, now: chrono::DateTime<chrono::Utc>) {
        if let Err(e) = crate::trigger::verify::after_leaving(&self.ctx, cur, now).await {
            tracing::warn!(tenant = %cur.tenant, job = %cur.job_id, error = %e, "indexing the open fires after the change failed");
        }
    }

    /// DynamoDB.
    pub fn ddb(&self) -> &aws_sdk_dynamodb::Client {
        &self.ctx.ddb
    }

    /// Table names and pools.
    pub fn cfg(&self) -> &crate::config::Config {
        &self.ctx.cfg
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
