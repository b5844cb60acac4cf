//! A [`Job`]: a definition's stored, versioned form with its trigger position and due class.

use crate::definition::invalid;
use crate::deployment::Deployment;
use crate::keys;
use crate::{JobDefinition, ValidationError};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use sundial_schedule::BusinessDays;

/// Lifecycle of a job definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobState {
    /// Triggering.
    Enabled,
    /// Not triggering; executions already created for later fires are cancelled.
    Paused,
    /// Soft-deleted: not triggering, kept for the retention period.
    Deleted,
    /// Done: its `maxRuns` scheduled fires were all created; not triggering. The fires already
    /// created run as usual. An edit raising `maxRuns` (or removing it) lets a resume enable it.
    Completed,
}

/// A stored job: its definition plus identity, version and trigger position.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Owner.
    pub tenant: String,
    /// Id, unique within the tenant.
    pub job_id: String,
    /// Optimistic-concurrency version, +1 on each edit.
    pub version: u64,
    /// Enabled, paused or deleted.
    pub state: JobState,
    /// The current definition.
    pub definition: JobDefinition,
    /// Anchor of `rate()` schedules (the creation instant unless `schedule.start` is set).
    pub anchor: DateTime<Utc>,
    /// The next scheduled instant not yet turned into an execution (the trigger position).
    /// `None` when the schedule is exhausted or the job is not enabled.
    pub next_fire_at: Option<DateTime<Utc>>,
    /// Logical shard.
    pub shard: u32,
    /// Which `due` index partition the job waits in.
    pub due_class: DueClass,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
    /// When the current definition took effect (creation, or the last edit).
    pub edited_at: DateTime<Utc>,
    /// The last pause: when it started and, once resumed, when it ended. A worker checks a
    /// scheduled execution's instant against it before the first claim.
    pub paused: Option<(DateTime<Utc>, Option<DateTime<Utc>>)>,
    /// The tz database release (`"2025b"`) the stored trigger position was computed with:
    /// set whenever `next_fire_at` is stored (create, edit, resume, each advance of the scan).
    /// The tzdb upgrade report compares the job's fires under it with the compiled release.
    pub tzdb_version: String,
    /// The business calendar chain (`(id, version)`, root first) the trigger position was
    /// computed with; empty without `schedule.businessCalendar`. The scan loads exactly these
    /// immutable versions; a calendar edit re-plans the job and records the new chain.
    pub calendar_versions: Vec<(String, u64)>,
    /// When the job's fires last changed under an unchanged definition: a calendar edit
    /// re-planned it, or a resume took a newer calendar chain. A worker judges a fire queued
    /// before that, at or after this instant, by the fires of the chain now recorded (a fire
    /// the new chain drops is superseded), like an edit. `None`: never.
    pub replanned_at: Option<DateTime<Utc>>,
    /// What the job is charged against its tenant's hourly execution budget (its busiest hour
    /// of fires times the executions a fire makes), set at create and edit; given back exactly
    /// when it is deleted. 0 for jobs stored before the budget existed.
    pub committed_per_hour: u64,
}

impl Job {
    /// Whether the job was paused at `at`, as far as its last pause window tells.
    pub fn paused_at(&self, at: DateTime<Utc>) -> bool {
        match self.paused {
            Some((from, None)) => self.state == JobState::Paused && from <= at,
            Some((from, Some(until))) => from <= at && at < until,
            None => false,
        }
    }

    /// Builds a new enabled job (version 1) whose trigger position is its first fire after `now`.
    pub fn new<'a>(
        cfg: impl Into<Deployment<'a>>,
        tenant: &str,
        job_id: &str,
        def: JobDefinition,
        now: DateTime<Utc>,
    ) -> Result<Self, ValidationError> {
        Job::new_with(cfg, tenant, job_id, def, now, None)
    }

    /// [`Job::new`] for a definition naming a business calendar: `business` is its resolved
    /// chain in force at `now`, recorded on the job.
    pub fn new_with<'a>(
        cfg: impl Into<Deployment<'a>>,
        tenant: &str,
        job_id: &str,
        def: JobDefinition,
        now: DateTime<Utc>,
        business: Option<Arc<BusinessDays>>,
    ) -> Result<Self, ValidationError> {
        let cfg: Deployment<'a> = cfg.into();
        keys::validate_id("tenant", tenant).map_err(|e| invalid(e.field, e.reason))?;
        keys::validate_id("jobId", job_id).map_err(|e| invalid(e.field, e.reason))?;
        let anchor = def.schedule.start.unwrap_or(now);
        let calendar_versions = business.as_ref().map(|b| b.chain().to_vec()).unwrap_or_default();
        let schedule = def.validate_with(cfg, tenant, anchor, business)?;
        let next = schedule.next_after(now);
        Ok(Job {
            tenant: tenant.into(),
            job_id: job_id.into(),
            version: 1,
            state: JobState::Enabled,
            due_class: DueClass::Admission,
            definition: def,
            anchor,
            next_fire_at: next,
            shard: keys::shard_of(tenant, job_id, cfg.shards),
            created_at: now,
            updated_at: now,
            edited_at: now,
            paused: None,
            tzdb_version: sundial_schedule::tzdb_version().to_string(),
            calendar_versions,
            replanned_at: None,
            committed_per_hour: 0,
        })
    }
}

/// Where an enabled job waits in the `due` index (see [`crate::keys`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DueClass {
    /// Just created, resumed or edited: scanned every tick until first dispatched.
    Admission,
    /// In the minute bucket of its next fire; moved on each dispatch.
    Bucket,
    /// Fires at least once a minute: never moved; its position is the shard watermark.
    Every,
    /// Fires at most once a day, always in this UTC minute of the day (0..1440): never moved
    /// while that holds; its position is the shard watermark.
    Daily(u32),
}

impl DueClass {
    /// The stored code.
    pub fn code(self) -> &'static str {
        match self {
            DueClass::Admission => "A",
            DueClass::Bucket => "B",
            DueClass::Every => "E",
            DueClass::Daily(_) => "D",
        }
    }
}
