//! [`ExecStatus`]: an execution's status and its one-way machine. Below every module that
//! embeds or tallies a status (a parent's children, a dependency's condition), so it imports
//! nothing of the crate.

use serde::{Deserialize, Serialize};

/// Status of an execution. Transitions are one-way (see [`ExecStatus::can_move_to`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord, utoipa::ToSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[schema(
    description = "Status of an execution. Transitions are one-way: SUCCEEDED, FAILED, DEAD, CANCELED and SKIPPED are final, except that a DEAD execution can be replayed."
)]
#[non_exhaustive]
pub enum ExecStatus {
    /// Created by the trigger, waiting for a worker.
    Ready,
    /// Claimed by a worker holding a lease and a fencing token.
    Running,
    /// Failed with a retryable error; claimable again after `available_at`.
    RetryWait,
    /// Done.
    Succeeded,
    /// Permanent (business) error: never retried.
    Failed,
    /// Retry budget exhausted; in the pool's DLQ.
    Dead,
    /// Cancelled before or during its run.
    Canceled,
    /// Not run by policy (FORBID while another run was going).
    Skipped,
    /// A sharded or broadcast parent whose children are running: final when every child is
    /// (`docs/children.md`). Nobody holds a lease on it.
    Waiting,
}

impl ExecStatus {
    /// The stored string.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecStatus::Ready => "READY",
            ExecStatus::Running => "RUNNING",
            ExecStatus::RetryWait => "RETRY_WAIT",
            ExecStatus::Succeeded => "SUCCEEDED",
            ExecStatus::Failed => "FAILED",
            ExecStatus::Dead => "DEAD",
            ExecStatus::Canceled => "CANCELED",
            ExecStatus::Skipped => "SKIPPED",
            ExecStatus::Waiting => "WAITING",
        }
    }

    /// Parses a stored string.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Every status.
    pub const ALL: [ExecStatus; 9] = [
        ExecStatus::Ready,
        ExecStatus::Running,
        ExecStatus::RetryWait,
        ExecStatus::Succeeded,
        ExecStatus::Failed,
        ExecStatus::Dead,
        ExecStatus::Canceled,
        ExecStatus::Skipped,
        ExecStatus::Waiting,
    ];

    /// No transition leaves a terminal status.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            ExecStatus::Succeeded
                | ExecStatus::Failed
                | ExecStatus::Dead
                | ExecStatus::Canceled
                | ExecStatus::Skipped
        )
    }

    /// The allowed edges of the one-way state machine (docs/execution.md §2). `Running -> Running`
    /// is a lease takeover (new token); `Dead -> Ready` is an audited DLQ replay.
    pub fn can_move_to(self, to: ExecStatus) -> bool {
        use ExecStatus::*;
        matches!(
            (self, to),
            (Ready, Running)
                | (Ready, Canceled)
                | (Ready, Skipped)
                | (RetryWait, Running)
                | (RetryWait, Canceled)
                | (RetryWait, Dead)
                | (Running, Running)
                | (Running, Succeeded)
                | (Running, RetryWait)
                | (Running, Failed)
                | (Running, Dead)
                | (Running, Canceled)
                | (Dead, Ready)
                | (Running, Waiting)
                | (Waiting, Succeeded)
                | (Waiting, Failed)
                | (Waiting, Canceled)
                | (Waiting, Ready)
        )
    }

    /// Whether executions in this status are indexed in `attention` (off the happy path).
    pub fn needs_attention(self) -> bool {
        matches!(self, ExecStatus::RetryWait | ExecStatus::Failed | ExecStatus::Dead | ExecStatus::Canceled)
    }
}
