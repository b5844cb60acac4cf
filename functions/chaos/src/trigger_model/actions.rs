//! The model's transitions, as labels for counterexample traces and replays.

use super::instance::Partition;
use std::fmt;

/// A transition, for counterexample traces. Jobs are indices into [`Bounds::jobs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The clock moves to the next minute.
    TickClock,
    /// A tick starts scanning the shards at `now`.
    StartTick,
    /// The scan reads a partition of a shard.
    Read {
        /// The shard.
        shard: u8,
        /// The partition.
        partition: Partition,
    },
    /// The scan dispatches what it read from a partition.
    Dispatch {
        /// The shard.
        shard: u8,
        /// The partition read.
        partition: Partition,
        /// The send after the puts fails.
        send_fails: bool,
    },
    /// The walk reads and dispatches one bucket.
    Walk {
        /// The shard.
        shard: u8,
        /// The bucket's minute.
        minute: u8,
        /// The send after the puts fails.
        send_fails: bool,
    },
    /// The scan of a shard ends by moving its watermark (maybe not at all).
    MoveWatermark {
        /// The shard.
        shard: u8,
    },
    /// The tick dies between two steps.
    TickCrash,
    /// API: pause a job.
    Pause(u8),
    /// API: resume a job.
    Resume(u8),
    /// API: edit a job to definition v2.
    Edit(u8),
    /// API: dispatch a job right after a resume or edit.
    DispatchOne {
        /// The job.
        job: u8,
        /// The send after the puts fails.
        send_fails: bool,
    },
    /// A worker receives a message for (job, minute) and handles it to the end.
    Deliver(u8, u8),
    /// Worker `w` receives a message for (job, minute) and claims (two-worker mode).
    Claim(u8, u8, u8),
    /// Worker `w`'s handler returns and it finishes (two-worker mode).
    Finish(u8),
    /// A worker waits (concurrency or tenant limit): the message goes back.
    Wait(u8, u8),
    /// A worker panics on the message.
    Panic(u8, u8),
    /// The queue loses a message.
    LoseMessage(u8, u8),
    /// The queue delivers a message twice.
    DuplicateMessage(u8, u8),
    /// The reconciler re-sends overdue Ready executions that have no message.
    Reconcile,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}
