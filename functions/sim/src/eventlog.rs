//! The event source's log: every attempt of every delivery and what came of it, which the
//! `events` invariant reads, and the counters of the run's summary line.
//!
//! Apart from the source ([`crate::events`]) because the log is part of the state every
//! simulated process shares ([`crate::processes::Shared`]), and the source is one of those
//! processes: in one file, the source and the processes would import each other.

use std::sync::{Arc, Mutex};

/// What one attempt of a delivery came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// `fire` returned Ok, naming `execution` (`job@ms`); `created` false: deduplicated onto
    /// an execution that existed.
    Acked {
        /// The execution id.
        execution: String,
        /// Its scheduled instant (ms).
        scheduled_ms: i64,
        /// Whether this call made it.
        created: bool,
    },
    /// A 4xx answer (paused, deleted, no fire left, rate-limited): the source stops, unless
    /// `retry_after_secs` says when to try again.
    Refused {
        /// The error, as the API would name it.
        error: String,
        /// When to try again (a 429), if at all.
        retry_after_secs: Option<u32>,
    },
    /// A retryable error (the store or SQS failed): the outcome is unknown, the source retries.
    Failed(String),
    /// The source died mid-call (its task aborted), or right after the key claim.
    Crashed,
}

/// One attempt of one delivery of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// Which event (index into [`crate::workload::Workload::events`]).
    pub event: usize,
    /// Which delivery (0: the first; then the repeats).
    pub delivery: usize,
    /// Which attempt of that delivery.
    pub attempt: u32,
    /// When the call started (ms).
    pub started_ms: i64,
    /// The instant sent as `at`, if any (ms).
    pub at_ms: Option<i64>,
    /// What came of it.
    pub answer: Answer,
    /// For a failed keyed attempt: the key was claimed and no execution was at its instant
    /// right after (the failure fell between the claim and the put).
    pub after_claim: bool,
}

/// Every attempt of the source (shared by its tasks).
#[derive(Debug, Default, Clone)]
pub struct EventLog(Arc<Mutex<Vec<Attempt>>>);

/// The source's counters for the run's summary line.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct EventCounts {
    /// Events planned.
    pub events: usize,
    /// Attempts sent (every delivery, every retry).
    pub sent: usize,
    /// Attempts acknowledged.
    pub acked: usize,
    /// Acknowledged onto an execution that existed.
    pub deduplicated: usize,
    /// Refused (4xx, rate limits included).
    pub refused: usize,
    /// Failed (retryable) or died mid-call.
    pub failed: usize,
    /// Of those, died or failed between the key claim and the put.
    pub after_claim: usize,
}

impl EventLog {
    pub(crate) fn push(&self, a: Attempt) {
        if let Ok(mut g) = self.0.lock() {
            g.push(a);
        }
    }

    /// Every attempt so far.
    pub fn attempts(&self) -> Vec<Attempt> {
        self.0.lock().map(|g| g.clone()).unwrap_or_default()
    }

    /// The counters of the attempts so far.
    pub fn counts(&self, events: usize) -> EventCounts {
        let mut c = EventCounts { events, ..EventCounts::default() };
        for a in self.attempts() {
            c.sent += 1;
            match a.answer {
                Answer::Acked { created, .. } => {
                    c.acked += 1;
                    c.deduplicated += usize::from(!created);
                }
                Answer::Refused { .. } => c.refused += 1,
                Answer::Failed(_) | Answer::Crashed => c.failed += 1,
            }
            c.after_claim += usize::from(a.after_claim);
        }
        c
    }
}
