//! What a reconciler run reports ([`ReconcileReport`], counts per run and per pool), how it
//! fails ([`ReconcileError`]), and what one look at an execution did ([`Done`]): shared by the
//! run and the map-reduce backstop, which both produce looks.

use crate::metrics::Emf;
use crate::missed;
use std::collections::BTreeMap;
use sundial_store::queue::{Outgoing, QueueError};
use sundial_store::StoreError;

/// What one run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReconcileReport {
    /// Index entries examined.
    pub examined: u64,
    /// Messages re-sent, by pool (lost deliveries: what the `ExecutionsResent` alarm counts).
    pub resent: BTreeMap<String, u64>,
    /// Messages re-sent of executions held by their job's pause: not lost, waiting for the
    /// resume; each copy lets a worker judge the hold again (the pause may be over, or the job
    /// deleted). Not in `resent`.
    pub held_resent: u64,
    /// Executions someone is acting on: looked at again later.
    pub looked_again: u64,
    /// Final executions taken out of the index.
    pub closed: u64,
    /// Executions that changed between the read and the write (a worker acted: nothing to do).
    pub raced: u64,
    /// Index entries whose execution is gone (expired).
    pub missing: u64,
    /// Executions whose handling failed (store or queue error; retried by the next run).
    pub failed: u64,
    /// How long past its due look the most overdue execution was (ms).
    pub max_overdue_ms: i64,
    /// Whether the run stopped at `max_per_run` with more due.
    pub truncated: bool,
    /// Re-sends put off because the execution's pool has a visible backlog (it may just be
    /// waiting its turn; see [`sundial_model::reconcile::BACKLOG_GRACES`]).
    pub deferred_backlog: u64,
    /// Fires found not started past their start deadline and reported by this run, by pool.
    pub missed: BTreeMap<String, u64>,
    /// Outcome events this run sent from outboxes their workers did not flush
    /// (docs/outcomes.md).
    pub outcome_events: u64,
}

impl ReconcileReport {
    /// Re-sends in all pools.
    pub fn resent_total(&self) -> u64 {
        self.resent.values().sum()
    }

    /// Missed starts in all pools.
    pub fn missed_total(&self) -> u64 {
        self.missed.values().sum()
    }

    /// The EMF records of a run (names from `resources.json` `metrics.names`).
    pub fn metric_lines(&self) -> Vec<Emf> {
        let mut out: Vec<Emf> = self
            .resent
            .iter()
            .map(|(pool, n)| Emf::new(&[("Pool", pool)]).count("ExecutionsResent", *n))
            .collect();
        // Per pool, never per job: one job's misses are alerted on through its FireMissed
        // events (an EventBridge rule on `detail.jobId`).
        out.extend(self.missed.iter().map(|(pool, n)| Emf::new(&[("Pool", pool)]).count("FiresMissed", *n)));
        out.push(
            Emf::new(&[])
                .count("ReconcileExamined", self.examined)
                .count("ReconcileFailed", self.failed)
                .millis("ReconcileOverdueMs", &[self.max_overdue_ms.max(0)]),
        );
        out
    }
}

/// A run failed somewhere; every other execution was handled (`report`).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// DynamoDB failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// SQS failed.
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// A missed start was recorded but its report (log entry or event) failed: that report is
    /// lost (the timeline note stays), and the run fails so the reconciler's error alarm fires.
    #[error("start deadline miss recorded, report failed: {0}")]
    Report(#[from] missed::ReportError),
    /// An outbox flush stopped (its entries stay for the next run).
    #[error("outcome events: {0}")]
    Outcome(#[from] crate::execution::outcome::OutcomeError),
    /// Some executions failed (logged each); the next run retries them.
    #[error("{failed} execution(s) could not be reconciled; first: {first}")]
    Partial {
        /// How many.
        failed: u64,
        /// The first error.
        first: Box<ReconcileError>,
        /// What the run did.
        report: Box<ReconcileReport>,
    },
}

impl ReconcileError {
    /// Whether retrying now may help (every failure is retried by the next run anyway).
    pub fn is_retryable(&self) -> bool {
        match self {
            ReconcileError::Store(e) => e.is_retryable(),
            ReconcileError::Queue(e) => e.is_retryable(),
            ReconcileError::Report(e) => e.is_retryable(),
            ReconcileError::Outcome(e) => e.is_retryable(),
            ReconcileError::Partial { first, .. } => first.is_retryable(),
        }
    }
}

/// What happened to one execution.
pub(super) enum Done {
    Resent(String, Box<Outgoing>),
    /// The re-send of an execution held by a pause (see [`ReconcileReport::held_resent`]).
    HeldResent(String, Box<Outgoing>),
    /// A missed start recorded (counted whatever happens to its report), and the report's
    /// failure if it failed.
    Missed(String, Option<missed::ReportError>),
    Backlogged,
    LookedAgain,
    Closed,
    Raced,
    Missing,
}
