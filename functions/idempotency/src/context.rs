//! What a handler knows about the run it is part of.
//!
//! Sundial's worker passes `executionId` and `fencingToken` to every target. This crate takes
//! them as plain values so a handler can use it without linking the worker: build the context
//! from whatever the handler received (Lambda payload, HTTP headers, in-process call).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The identity of one attempt of one execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionContext {
    /// The execution: the same for every attempt and every failover copy of one scheduled run.
    pub execution_id: String,
    /// Grows with every claim of the execution: a newer attempt always has a larger token, so
    /// protected items can reject an older (stale) attempt.
    pub fencing_token: u64,
    /// The scheduled instant of the run (not the time it happened to start).
    pub scheduled_at: DateTime<Utc>,
}

impl ExecutionContext {
    /// A context from the values Sundial's worker hands to the target.
    pub fn new(execution_id: impl Into<String>, fencing_token: u64, scheduled_at: DateTime<Utc>) -> Self {
        ExecutionContext { execution_id: execution_id.into(), fencing_token, scheduled_at }
    }
}
