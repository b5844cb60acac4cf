//! What the execution store's reads and writes return: the snapshot of an execution as read
//! and the typed outcome of each write (a lost race is an outcome, not an error).

use crate::error::StoreError;
use sundial_model::claim::Fence;
use sundial_model::{ExecStatus, Execution};

/// An execution as read: the whole item decoded, including the attributes only the execution
/// plane writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The execution.
    pub exec: Execution,
    /// The last checkpoint, if any.
    pub checkpoint: Option<serde_json::Value>,
    /// Run time of finished attempts (ms).
    pub total_run_ms: i64,
    /// SHA-256 prefix of the input, stored when the execution went DEAD.
    pub digest: Option<String>,
    /// When the reconciler looks at it next (ms; `None` once final).
    pub open_due: Option<i64>,
    /// How many times the reconciler re-sent its message.
    pub resends: u32,
    /// Held by a pause of this job version: it runs only if a resume releases it first.
    pub held: Option<u64>,
    /// When it was found not started past its start deadline (ms; reported once).
    pub missed_at: Option<i64>,
    /// Its wait generation (0 until a wait or a re-send started a new chain of copies).
    pub wait_gen: u64,
    /// The wait generation whose chain's copy was sent (`attr::WAIT_GEN_SENT`): a copy is stale
    /// only below it. Below [`Snapshot::wait_gen`] while a worker's raise awaits its send.
    pub wait_gen_sent: u64,
    /// A waiting map-reduce parent: its done count at the reconciler's last look.
    pub looked_done: Option<u64>,
    /// A waiting map-reduce parent: the sort key through which the reconciler found every item
    /// final (its next read of the items resumes after it).
    pub checked_through: Option<String>,
    /// Outcome events its transitions made due and nobody has sent yet (encoded
    /// `sundial_model::outcome::OutboxEntry`s, docs/outcomes.md).
    pub outbox: Vec<String>,
    /// When it was found past its finish deadline (ms; reported once).
    pub finish_missed_at: Option<i64>,
}

/// Result of putting a new execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutOutcome {
    /// This call created it.
    Created,
    /// It already existed (a duplicate tick, or a retry after a crash), in this status.
    Exists(ExecStatus),
}

/// A successful claim.
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    /// The execution as the claim left it (RUNNING, new token).
    pub snapshot: Snapshot,
    /// The credentials for every later write.
    pub fence: Fence,
    /// The status it was claimed from.
    pub from: ExecStatus,
    /// Whether this claim took over an expired lease.
    pub takeover: bool,
    /// The lease end this claim wrote (ms).
    pub lease_until: i64,
}

/// The result of a claim.
#[derive(Debug, Clone, PartialEq)]
pub enum ClaimOutcome {
    /// This worker now holds the execution.
    Claimed(Box<Claimed>),
    /// Not claimable before `available_at` (ms): early delivery, or a retry backoff.
    NotYet {
        /// When it becomes claimable.
        available_at: i64,
    },
    /// Another worker holds a live lease; it counts as expired after `expires_at` (ms).
    Held {
        /// When a takeover becomes possible.
        expires_at: i64,
    },
    /// Nothing to run: the execution is in this final status (possibly just now cancelled).
    Finished(ExecStatus),
    /// No such execution (expired by TTL, or a message that never had one).
    Missing,
}

/// The result of a finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishResult {
    /// Recorded.
    Done,
    /// The execution was taken over (or finished by someone else): this result is discarded.
    TakenOver {
        /// Its status now, if known.
        status: Option<ExecStatus>,
        /// Its token now, if known.
        token: Option<u64>,
    },
}

/// The result of a heartbeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heartbeat {
    /// The lease now ends later; `cancel_requested` tells the runner to stop at a safe point.
    Extended {
        /// A cancel was requested.
        cancel_requested: bool,
    },
    /// The lease is no longer ours: stop, publish nothing.
    Lost,
}

/// A checkpoint was not stored.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The token is stale: another worker took the execution over.
    #[error("checkpoint refused: fencing token {token} of execution {execution} is stale")]
    Stale {
        /// The execution.
        execution: String,
        /// The stale token.
        token: u64,
    },
    /// The state is too large to store inline.
    #[error("checkpoint state: {bytes} bytes exceeds {max}")]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// DynamoDB failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The result of a cancel request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// It was not running: now CANCELED, it will not run.
    Canceled,
    /// It is running: the flag is set; the runner stops at its next safe point.
    Requested,
    /// Already final.
    AlreadyFinal(ExecStatus),
    /// No such execution.
    Missing,
}
