//! An [`Execution`]: the immutable record of one scheduled instant (docs/architecture.md,
//! "Three planes"), its audit timeline and the queue message that carries it. Its status,
//! [`ExecStatus`] with the one-way machine, is `execution/status.rs`'s, below every module
//! that embeds a status.

pub(crate) mod status;

pub use status::ExecStatus;

use crate::{Job, JobDefinition};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sundial_schedule::Schedule;

/// One entry of an execution's audit timeline, written in the same conditional write as the
/// transition it records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    /// When (ms since epoch).
    pub at: i64,
    /// Who: `tick:<id>`, `worker:<id>`, `api:<principal>`.
    pub actor: String,
    /// From status (`None` for creation).
    pub from: Option<ExecStatus>,
    /// To status.
    pub to: ExecStatus,
    /// Attempt number after the transition.
    pub attempt: u32,
    /// Fencing token after the transition.
    pub token: u64,
    /// Error or reason code, if any.
    pub code: Option<String>,
}

impl AuditEvent {
    /// A note on an execution's timeline that changes no status (`from` = `to`, attempt and
    /// token kept): a re-send, a hold by a pause, an amendment by an edit. The state machine
    /// stays one-way: a note is not an edge of [`ExecStatus::can_move_to`].
    pub fn note(e: &Execution, at: i64, actor: &str, code: &str) -> Self {
        AuditEvent {
            at,
            actor: actor.to_string(),
            from: Some(e.status),
            to: e.status,
            attempt: e.attempt,
            token: e.fencing_token,
            code: Some(code.to_string()),
        }
    }

    /// Whether this event is a note (see [`AuditEvent::note`]) after `prev`.
    pub fn is_note_after(&self, prev: &AuditEvent) -> bool {
        self.from == Some(prev.to)
            && self.to == prev.to
            && self.token == prev.token
            && self.attempt == prev.attempt
    }
}

/// Audit code of a manual run's creation event.
pub const MANUAL_CODE: &str = "manual";
/// Audit code of a backfilled execution's creation event.
pub const BACKFILL_CODE: &str = "backfill";

/// The range a `fireOnce` batch stands for, as its job's partition records it at the batch's
/// first claim (docs/simulation.md, K6): every scheduled instant in `(first, through]` is the
/// batch's, so an ordinary fire put there by another scan is canceled before its first claim
/// (code [`crate::retry::codes::COVERED_BY_BATCH`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchCover {
    /// The batch's own instant (its key).
    pub first: DateTime<Utc>,
    /// The last instant it stands for.
    pub through: DateTime<Utc>,
}

impl BatchCover {
    /// Whether a fire at `at` is the batch's, other than the batch itself.
    pub fn covers(&self, at: DateTime<Utc>) -> bool {
        self.first < at && at <= self.through
    }
}

/// An execution: one scheduled instant of one job.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    /// Owner.
    pub tenant: String,
    /// The job.
    pub job_id: String,
    /// The scheduled instant (with `job_id`, the primary key).
    pub scheduled_at: DateTime<Utc>,
    /// When it should start: `scheduled_at` plus the job's deterministic jitter.
    pub fire_at: DateTime<Utc>,
    /// When the trigger created it.
    pub created_at: DateTime<Utc>,
    /// Current status.
    pub status: ExecStatus,
    /// Attempts started so far.
    pub attempt: u32,
    /// Incremented by every claim; writes carrying an older token are refused.
    pub fencing_token: u64,
    /// Worker holding the lease.
    pub lease_owner: Option<String>,
    /// Lease expiry (ms).
    pub lease_until: Option<i64>,
    /// Earliest claim instant (ms): `fire_at`, or the end of a retry backoff.
    pub available_at: i64,
    /// Definition version used.
    pub def_version: u64,
    /// Snapshot of the definition used (pool, target, params, policies).
    pub definition: JobDefinition,
    /// For `fireOnce` misfires: the missed range this execution stands for.
    pub missed_range: Option<(DateTime<Utc>, DateTime<Utc>)>,
    /// Instants of `missed_range` this batch does not stand for: each had its own execution,
    /// already claimed when the batch was first claimed (a scan that planned the job from a
    /// later position put them while another put the batch; docs/simulation.md, K6). Empty for
    /// anything else.
    pub missed_except: Vec<DateTime<Utc>>,
    /// Last error code and message.
    pub last_error: Option<(String, String)>,
    /// Cancellation requested while running.
    pub cancel_requested: bool,
    /// The audit trail.
    pub timeline: Vec<AuditEvent>,
    /// A child execution of a sharded or broadcast parent (the parent is the execution with
    /// the same job and instant and no child key): which child.
    pub child: Option<crate::children::ChildKey>,
    /// A parent that fanned out: its children's count and the final ones counted so far.
    pub children: Option<crate::children::Tally>,
    /// A map-reduce parent's phase and counts, or an item child's input and result.
    pub map_reduce: Option<crate::mapreduce::MapState>,
}

impl Execution {
    /// A new READY execution for one fire of `job` at `scheduled_at`, created at `now` by
    /// `actor`. A missed fire (`missed_range` set: the fires it stands for) is dispatched at once;
    /// an on-time one at its (jittered) instant.
    pub fn ready(
        job: &Job,
        schedule: &Schedule,
        scheduled_at: DateTime<Utc>,
        missed_range: Option<(DateTime<Utc>, DateTime<Utc>)>,
        now: DateTime<Utc>,
        actor: &str,
    ) -> Self {
        // A missed fire is dispatched now; an on-time one at its (jittered) instant.
        let fire_at = schedule.dispatch_at(&job.job_id, scheduled_at).max(if missed_range.is_some() {
            now
        } else {
            scheduled_at
        });
        Execution {
            tenant: job.tenant.clone(),
            job_id: job.job_id.clone(),
            scheduled_at,
            fire_at,
            created_at: now,
            status: ExecStatus::Ready,
            attempt: 0,
            fencing_token: 0,
            lease_owner: None,
            lease_until: None,
            available_at: fire_at.timestamp_millis(),
            def_version: job.version,
            definition: job.definition.clone(),
            missed_range,
            missed_except: Vec::new(),
            last_error: None,
            cancel_requested: false,
            timeline: vec![AuditEvent {
                at: now.timestamp_millis(),
                actor: actor.to_string(),
                from: None,
                to: ExecStatus::Ready,
                attempt: 0,
                token: 0,
                code: missed_range.map(|_| "misfire_batch".to_string()),
            }],
            child: None,
            children: None,
            map_reduce: None,
        }
    }

    /// Whether no worker has ever claimed it: the first-start marker. Only a claim raises the
    /// fencing token, and nothing lowers it, so a reduce's start and a DLQ replay (which start
    /// the attempt count again from 0) are not first starts. Start deadlines, the start-lag
    /// metric and the claim-time job check ([`Execution::attempt`] is the retry budget's
    /// count, not this) are about a fire's first start only.
    pub fn never_claimed(&self) -> bool {
        self.fencing_token == 0
    }

    /// Whether this is a fire of the schedule: not a manual run (`MANUAL_CODE`), a backfill
    /// (`BACKFILL_CODE`) nor an event's (`event::EVENT_CODE`: its instant may be none of the
    /// schedule's, and it was accepted while the job was enabled), as its creation event says.
    pub fn is_scheduled_fire(&self) -> bool {
        let first_code = self.timeline.first().and_then(|ev| ev.code.as_deref());
        !matches!(first_code, Some(MANUAL_CODE) | Some(BACKFILL_CODE) | Some(crate::event::EVENT_CODE))
    }

    /// Whether this execution stands for a fire of the schedule: a scheduled fire, or a
    /// `oncePerPeriod` event's, which takes the period's fire's instant (put with a definition
    /// whose `events` says so). A `fireOnce` batch and the fires in its range decide each such
    /// instant between them, whoever was put first (docs/execution.md, "A batch's first claim";
    /// the full mix's seed 220, K14: an event late for a fire a batch had run ran it again).
    pub fn stands_for_fire(&self) -> bool {
        let first_code = self.timeline.first().and_then(|ev| ev.code.as_deref());
        let once_event = first_code == Some(crate::event::EVENT_CODE)
            && self.definition.events.as_ref().is_some_and(|t| t.once_per_period);
        self.is_scheduled_fire() || once_event
    }

    /// Whether an operator's backfill (or a resume's catch-up) created this execution
    /// (`BACKFILL_CODE`): it replays an instant of the schedule, so a `fireOnce` batch that
    /// stands for the instant decides it with it as with the fire itself (the full mix's seed
    /// 2016: a backfill put before a batch's first claim ran the batch's instants again).
    pub fn is_backfilled(&self) -> bool {
        self.timeline.first().and_then(|ev| ev.code.as_deref()) == Some(BACKFILL_CODE)
    }

    /// Whether a backfill (or a resume's catch-up) took this queued-ahead fire over to replay
    /// its instant (a `CaughtUp` note): from then on it runs like a backfilled fire, whatever
    /// the job's state.
    pub fn is_caught_up(&self) -> bool {
        self.timeline.iter().any(|ev| ev.code.as_deref() == Some(crate::codes::CAUGHT_UP))
    }

    /// The public id (`{job}@{scheduled ms}`), relative to the caller's tenant (the API's).
    pub fn id(&self) -> String {
        crate::keys::child_execution_id(
            &crate::keys::execution_id(&self.job_id, self.scheduled_at.timestamp_millis()),
            self.child.as_ref(),
        )
    }

    /// The id outside the system (`{tenant}:{job}@{scheduled ms}`, see
    /// [`crate::keys::global_execution_id`]).
    pub fn global_id(&self) -> String {
        crate::keys::child_execution_id(
            &crate::keys::global_execution_id(
                &self.tenant,
                &self.job_id,
                self.scheduled_at.timestamp_millis(),
            ),
            self.child.as_ref(),
        )
    }
}

/// The SQS message that carries an execution to a worker: just its key. Small on purpose: the
/// execution item is the source of truth, and a duplicate or stale message is harmless.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecMessage {
    /// Tenant.
    #[serde(rename = "t")]
    pub tenant: String,
    /// Job id.
    #[serde(rename = "j")]
    pub job_id: String,
    /// Scheduled instant (ms).
    #[serde(rename = "s")]
    pub scheduled_ms: i64,
    /// Dispatch instant (ms), for queue-wait and lag metrics.
    #[serde(rename = "f")]
    pub fire_ms: i64,
    /// When the trigger enqueued it (ms).
    #[serde(rename = "e")]
    pub enqueued_ms: i64,
    /// The pool lane it travels in (absent: the main queue; docs/priority.md).
    #[serde(rename = "l", default, skip_serializing_if = "crate::priority::Lane::is_main")]
    pub lane: crate::priority::Lane,
    /// A child execution's key part (`s3`, `m-eu-west-1`; absent for every other execution).
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    pub child: Option<String>,
    /// The wait generation of the copy (absent: 0). A waiting execution lives in one chain of
    /// delayed copies; whoever starts a new chain (a wait that moves the reconciler's look, a
    /// re-send) raises the execution's generation and stamps it here, and a worker drops a
    /// copy older than its execution's generation ([`crate::reconcile::stale_copy`]).
    #[serde(rename = "g", default, skip_serializing_if = "is_zero")]
    pub wait_gen: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
