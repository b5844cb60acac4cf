//! The operations log: one entry per control-plane action, kept per tenant.

use chrono::{DateTime, Utc};

/// What an operations-log entry records. Its schema's names are [`OpsAction::as_str`]'s (a test
/// holds them equal): the type has no serde form of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, utoipa::ToSchema)]
#[schema(rename_all = "snake_case", description = "What an operations-log entry records.")]
pub enum OpsAction {
    /// Job created (version 1).
    Create,
    /// Definition edited.
    Update,
    /// Job paused.
    Pause,
    /// Job resumed.
    Resume,
    /// Job soft-deleted.
    Delete,
    /// Manual run.
    Trigger,
    /// Past range backfilled.
    Backfill,
    /// Execution cancelled.
    Cancel,
    /// Dead execution replayed.
    Replay,
    /// A fire not started by its job's start deadline (`startDeadlineSecs`), reported once.
    FireMissed,
    /// Business calendar created (`jobId` holds the calendar id).
    CalendarCreate,
    /// Business calendar edited: a new version (the jobs using it are re-planned, each with
    /// an `update` entry).
    CalendarUpdate,
    /// Business calendar deleted.
    CalendarDelete,
    /// An event from one of the tenant's sources (its SQS queue, its EventBridge bus) that
    /// cannot fire: a bad message, or a job that is not the tenant's, takes no events or is
    /// paused (`detail`: the source, the message and the error, naming the field).
    EventRejected,
    /// Job completed: its `maxRuns` scheduled fires were all created (actor `max-runs`).
    Complete,
}

impl OpsAction {
    /// The stored (and API) name.
    pub fn as_str(self) -> &'static str {
        match self {
            OpsAction::Create => "create",
            OpsAction::Update => "update",
            OpsAction::Pause => "pause",
            OpsAction::Resume => "resume",
            OpsAction::Delete => "delete",
            OpsAction::Trigger => "trigger",
            OpsAction::Backfill => "backfill",
            OpsAction::Cancel => "cancel",
            OpsAction::Replay => "replay",
            OpsAction::FireMissed => "fire_missed",
            OpsAction::CalendarCreate => "calendar_create",
            OpsAction::CalendarUpdate => "calendar_update",
            OpsAction::CalendarDelete => "calendar_delete",
            OpsAction::EventRejected => "event_rejected",
            OpsAction::Complete => "complete",
        }
    }

    /// The action of a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        use OpsAction::*;
        [
            Create,
            Update,
            Pause,
            Resume,
            Delete,
            Trigger,
            Backfill,
            Cancel,
            Replay,
            FireMissed,
            CalendarCreate,
            CalendarUpdate,
            CalendarDelete,
            EventRejected,
            Complete,
        ]
        .into_iter()
        .find(|a| a.as_str() == s)
    }
}

/// One entry of a tenant's operations audit log: who changed what, when, from which version to
/// which.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpsEntry {
    /// When.
    pub at: DateTime<Utc>,
    /// Who (`api:<principal>`).
    pub actor: String,
    /// What.
    pub action: OpsAction,
    /// The job.
    pub job_id: String,
    /// Definition version before the change (none for create and execution operations).
    pub from_version: Option<u64>,
    /// Definition version after the change (or the version an execution was created with).
    pub to_version: Option<u64>,
    /// The execution concerned (cancel, replay, trigger).
    pub execution_id: Option<String>,
    /// Free-form detail (backfill range and counts, cancelled executions, ...).
    pub detail: Option<String>,
}

impl OpsEntry {
    /// An entry by `actor` at `now`.
    pub fn new(actor: impl Into<String>, action: OpsAction, job_id: &str, now: DateTime<Utc>) -> Self {
        OpsEntry {
            at: now,
            actor: actor.into(),
            action,
            job_id: job_id.to_string(),
            from_version: None,
            to_version: None,
            execution_id: None,
            detail: None,
        }
    }

    /// Sets the versions.
    pub fn versions(mut self, from: Option<u64>, to: Option<u64>) -> Self {
        self.from_version = from;
        self.to_version = to;
        self
    }

    /// Sets the execution.
    pub fn execution(mut self, id: impl Into<String>) -> Self {
        self.execution_id = Some(id.into());
        self
    }

    /// Sets the detail.
    pub fn detail(mut self, d: impl Into<String>) -> Self {
        self.detail = Some(d.into());
        self
    }
}
