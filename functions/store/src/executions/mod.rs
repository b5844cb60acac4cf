//! Execution items: creation, the one read, and every conditional write of an execution's life
//! (docs/execution.md §2), plus the Queries over a job's executions and the `attention` index.
//!
//! - [`ExecStore::put_new`]: `PutItem IF attribute_not_exists(pk)`. The key is (job,
//!   scheduled_at), so a second put for the same fire is absorbed: [`PutOutcome::Exists`] is
//!   success.
//! - [`ExecStore::get`]: the one read, decoding the whole item into a [`Snapshot`] (the
//!   execution, its checkpoint, run time so far and input digest).
//! - Claim, heartbeat, checkpoint, release and finish are compare-and-sets on `(st, tok)`: the
//!   claim moves `READY`/`RETRY_WAIT` (once available) or `RUNNING`-with-an-expired-lease to
//!   `RUNNING` and sets `tok = old + 1` (the rules are [`sundial_model::claim`]'s); the
//!   others succeed only while `st = RUNNING` and `tok` is still the caller's. A worker that
//!   paused past its lease and woke up after a takeover therefore finds every write refused
//!   ([`FinishResult::TakenOver`], [`CheckpointError::Stale`]): its result is not published.
//!   Each transition appends its [`AuditEvent`] in the same write.
//! - Cancel, skip (the FORBID policy) and replay (a dead letter, DEAD → READY) are CAS writes
//!   of the same kind.
//!
//! Cost: the happy path is one eventually consistent read (½ read unit) to learn the status and
//! token, then one write unit for the claim and one for the finish (items stay under 1 KiB).
//! Heartbeats only happen for runs longer than a third of the lease. A failed condition is not
//! an error but a typed outcome carrying the item as it is (`ReturnValuesOnConditionCheckFailure`),

mod cancel;
mod claim;
mod dependencies;
mod finish;
mod key;
mod lease;
mod outbox;
mod outcomes;
mod queries;
mod read_write;
mod runs;
mod skip_replay;

pub use dependencies::{downstream_of, Registration};
pub use key::ExecKey;
pub use outbox::{DeadFire, Recovery, MAX_DEAD_STREAK};
pub use outcomes::{
    CancelOutcome, CheckpointError, ClaimOutcome, Claimed, FinishResult, Heartbeat, PutOutcome, Snapshot,
};
pub use queries::JobPage;
pub use runs::CountedPut;

use super::items::Item;
use aws_sdk_dynamodb::types::AttributeValue;

/// Executions are kept this long after creation (the table's TTL attribute), unless a shorter
/// tier below applies: the audit trail of every execution that did not simply succeed (failed,
/// dead, canceled, skipped, still open) and of every child execution.
pub const EXECUTION_RETENTION_SECS: i64 = 90 * 86_400;

/// A fire's execution that SUCCEEDED is kept this long after it finished (docs/capacity.md,
/// "Retention tiers"): the finish write moves its TTL, for no extra unit. The item is also the
/// exactly-once key of (job, scheduled instant), so nothing may put an instant again once its
/// item can have expired: a backfill refuses instants older than this
/// ([`SUCCEEDED_RETENTION_SECS`] is checked by `sundial_core::control::executions::backfill`),
/// the trigger plane re-puts only instants after its positions (a re-put needs the tick down for
/// longer than this after the first put), and children keep [`EXECUTION_RETENTION_SECS`]: their
/// parent's backstop may look for them while siblings still run.
pub const SUCCEEDED_RETENTION_SECS: i64 = 7 * 86_400;

/// How long one flusher holds an execution's outbox (ms): the finish that writes the entries
/// holds it for its own flush; anyone else takes it only once it ran out (docs/outcomes.md).
pub const OUTBOX_LEASE_MS: i64 = 60_000;

/// Longest stored error message (characters): the item must stay under 1 KiB.
pub const MAX_ERROR_MESSAGE_CHARS: usize = 200;
/// Largest checkpoint state (bytes of JSON). Larger state belongs in S3, with its key here.
pub const MAX_CHECKPOINT_BYTES: usize = 2_048;

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

/// An error message as stored: at most [`MAX_ERROR_MESSAGE_CHARS`] characters, cut on a
/// character boundary and marked with `…`.
pub(crate) fn truncate(m: &str) -> String {
    match m.char_indices().nth(MAX_ERROR_MESSAGE_CHARS) {
        Some((i, _)) => format!("{}…", &m[..i]),
        None => m.to_string(),
    }
}

/// Either the new item, or the item as it was when the condition failed (`None` = no item).
pub(crate) type CasResult = Result<Item, Option<Item>>;

/// The execution table's conditional writes for the execution plane.
#[derive(Debug, Clone)]
pub struct ExecStore {
    ddb: aws_sdk_dynamodb::Client,
    table: String,
}

impl ExecStore {
    /// A store on `table`.
    pub fn new(ddb: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        ExecStore { ddb, table: table.into() }
    }

    /// The DynamoDB client.
    pub fn client(&self) -> &aws_sdk_dynamodb::Client {
        &self.ddb
    }

    /// The table.
    pub fn table(&self) -> &str {
        &self.table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_truncated_on_a_char_boundary() {
        let m = "é".repeat(500);
        let t = truncate(&m);
        assert_eq!(t.chars().count(), MAX_ERROR_MESSAGE_CHARS + 1);
    }
}
