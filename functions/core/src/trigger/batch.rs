//! A `fireOnce` batch whose key already exists: the rest of its range, covered once.
//!
//! A batch is keyed at the first missed fire after the job's position, so a re-plan from the
//! same position at a later `now` (a scan that put its fires and failed before advancing, then a
//! deferral or a flapping tick) plans a longer range under the same key. Its put is absorbed by
//! the earlier batch, which stands only for the fires up to its own range end. The fires after
//! that, up to the re-plan's range end, are a continuation batch keyed at the first fire after
//! what the existing execution covers. That key may exist as well (an ordinary fire the earlier
//! scan put, or an earlier continuation): then the same step again, after what that one covers.
//! Each step passes one existing execution and moves forward, so the walk ends at a created
//! batch or at the end of the range: every missed fire is in exactly one execution.

use crate::model::{Execution, Job};
use crate::schedule::Schedule;
use crate::store::executions::{ExecKey, ExecStore, PutOutcome};
use crate::store::StoreError;
use chrono::{DateTime, Utc};

/// A planned execution with what its put needs: whether it gets an `open` index entry, and for
/// a `fireOnce` batch the job and schedule that plan its continuation.
pub(super) struct Put {
    pub(super) exec: Execution,
    pub(super) indexed: bool,
    pub(super) batch_of: Option<(Job, std::sync::Arc<Schedule>)>,
}

impl Put {
    /// Creates the execution unless it exists.
    pub(super) async fn put(&self, execs: &ExecStore) -> Result<PutOutcome, StoreError> {
        if self.indexed {
            execs.put_new(&self.exec).await
        } else {
            execs.put_new_unindexed(&self.exec).await
        }
    }
}

/// The last fire an existing execution stands for: its range end for a batch, else itself.
async fn covered_through(execs: &ExecStore, e: &Execution) -> Result<Option<DateTime<Utc>>, StoreError> {
    Ok(execs
        .get(&ExecKey::of(e), true)
        .await?
        .map(|s| s.exec.missed_range.map_or(s.exec.scheduled_at, |(_, last)| last)))
}

/// After `put`'s batch was found existing: puts the continuation batches until the batch's range
/// is covered, and returns each with its outcome (existing READY ones are sent again like any
/// other). Nothing for an ordinary fire or a batch that covers its range already.
pub(super) async fn cover_rest(
    execs: &ExecStore,
    put: &Put,
    now: DateTime<Utc>,
    actor: &str,
) -> Result<Vec<(Execution, PutOutcome)>, StoreError> {
    let (Some((job, schedule)), Some((_, last))) = (&put.batch_of, put.exec.missed_range) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let mut existing = put.exec.clone();
    loop {
        let Some(through) = covered_through(execs, &existing).await? else { break };
        let Some(next) = schedule.next_after(through).filter(|n| *n <= last) else { break };
        let rest = Put {
            exec: Execution::ready(job, schedule, next, Some((next, last)), now, actor),
            indexed: put.indexed,
            batch_of: None,
        };
        let outcome = rest.put(execs).await?;
        let created = outcome == PutOutcome::Created;
        out.push((rest.exec.clone(), outcome));
        if created {
            break;
        }
        existing = rest.exec;
    }
    Ok(out)
}
