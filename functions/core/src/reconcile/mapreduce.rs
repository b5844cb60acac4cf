//! The reconciler's backstop for a waiting map-reduce parent (`docs/mapreduce.md`).
//!
//! Its counts are exact (each item is counted in the transaction of its final finish), so a
//! sealed parent with `done = emitted` only needs someone to start its reduce: the last
//! item's worker normally does, and a crash right after that item's finish is repaired here.
//! An item made final by anything other than its worker's finish (a cancel) is not counted:
//! then the children themselves are read, and the reduce starts once every one is final.

use super::{backoff_ms, Done, ReconcileError, ReconcileOptions, GRACE_MS};
use crate::execution::mapreduce::{ready_to_reduce, MapState};
use crate::model::ExecStatus;
use crate::queue::Outgoing;
use crate::store::executions::{ExecStore, Snapshot};
use crate::store::open::OpenEntry;
use chrono::{DateTime, Utc};

pub(super) async fn aggregate(
    execs: &ExecStore,
    entry: &OpenEntry,
    seen: &Snapshot,
    now: DateTime<Utc>,
    opts: &ReconcileOptions,
) -> Result<Done, ReconcileError> {
    let parent = &seen.exec;
    let mut ready = ready_to_reduce(parent.status, parent.map_reduce.as_ref());
    if !ready {
        if let Some(MapState::Parent { emitted, .. }) = &parent.map_reduce {
            let kids = execs.children_of(&entry.key).await?;
            ready = kids.len() as u64 >= *emitted && kids.iter().all(|k| k.status.is_terminal());
        }
    }
    if ready {
        tracing::warn!(execution = %entry.key.global_id(), "starting the reduce of a map-reduce parent whose last item's worker did not");
        if !execs.start_reduce(&entry.key, parent, &opts.actor, now).await? {
            return Ok(Done::Raced);
        }
        let mut msg = parent.clone();
        msg.status = ExecStatus::Ready;
        msg.fire_at = now;
        return Ok(Done::Resent(
            parent.definition.pool.clone(),
            Box::new(Outgoing::for_execution(&msg, now)),
        ));
    }
    let next = now.timestamp_millis() + backoff_ms(seen.resends, GRACE_MS);
    Ok(if execs.look_again(&entry.key, seen, next).await? { Done::LookedAgain } else { Done::Raced })
}
