//! The reconciler's backstop for a waiting map-reduce parent (`docs/mapreduce.md`).
//!
//! Its counts are exact (each item is counted in the transaction of its final finish), so a
//! sealed parent with `done = emitted` only needs someone to start its reduce: the last
//! item's worker normally does, and a crash right after that item's finish is repaired here,
//! from the parent alone (one read).
//!
//! An item made final by anything other than its worker's finish (a cancel) is not counted, so
//! the counts can stall short of `emitted` for good. Only then are the items read: once the
//! counts have not moved since the previous look and the parent has been looked at
//! [`STALLED_LOOKS`] times, keys and status only, at most
//! [`ReconcileOptions::max_items_per_look`] a look, resuming where the last look stopped
//! (`checked_through`: every item up to it is final) and stopping at the first item still open.
//! The reduce starts once every item is final. Every look that finds the parent not ready
//! counts one more look, so they back off from 2 to 60 minutes ([`backoff_ms`]): a
//! 100,000-item fire whose items take an hour costs a handful of parent reads, not a read of
//! every item every 2 minutes (protocol review 2026-12, finding 8).

use super::options::ReconcileOptions;
use super::report::{Done, ReconcileError};
use crate::execution::mapreduce::{ready_to_reduce, MapState};
use chrono::{DateTime, Utc};
use sundial_model::reconcile::{backoff_ms, GRACE_MS};
use sundial_model::ExecStatus;
use sundial_store::executions::{ExecStore, Snapshot};
use sundial_store::open::OpenEntry;
use sundial_store::queue::Outgoing;

/// Looks at a waiting parent before the reconciler may read its items (with the backoff, about
/// 14 minutes into the wait), and only if the counts did not move since the previous look.
pub(super) const STALLED_LOOKS: u32 = 3;

/// Items one page of the backstop's read asks for (keys and status: a few dozen bytes each).
const ITEMS_PER_PAGE: usize = 1_000;

pub(super) async fn aggregate(
    execs: &ExecStore,
    entry: &OpenEntry,
    seen: &Snapshot,
    now: DateTime<Utc>,
    opts: &ReconcileOptions,
) -> Result<Done, ReconcileError> {
    let parent = &seen.exec;
    let done = match &parent.map_reduce {
        Some(MapState::Parent { done, .. }) => *done,
        _ => 0,
    };
    let mut ready = ready_to_reduce(parent.status, parent.map_reduce.as_ref());
    let mut checked = None;
    if !ready && seen.resends >= STALLED_LOOKS && seen.looked_done == Some(done) {
        let (all_final, through) = read_items(execs, entry, seen, opts.max_items_per_look).await?;
        ready = all_final;
        checked = through;
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
    let looked = execs.look_at_parent(&entry.key, seen, next, done, checked.as_deref()).await?;
    Ok(if looked { Done::LookedAgain } else { Done::Raced })
}

/// Reads the parent's items after `checked_through`, keys and status only, page by page, up to
/// `cap` of them: whether every item is final (the read reached the last), and the sort key
/// through which all are final now (`None`: no progress).
async fn read_items(
    execs: &ExecStore,
    entry: &OpenEntry,
    seen: &Snapshot,
    cap: usize,
) -> Result<(bool, Option<String>), ReconcileError> {
    let mut after = seen.checked_through.clone();
    let mut progressed = false;
    let mut read = 0;
    while read < cap {
        let limit = (cap - read).min(ITEMS_PER_PAGE) as i32;
        let (rows, more) = execs.item_statuses(&entry.key, after.as_deref(), limit).await?;
        read += rows.len();
        for (sk, status) in rows {
            if !status.is_terminal() {
                return Ok((false, after.filter(|_| progressed)));
            }
            after = Some(sk);
            progressed = true;
        }
        if !more {
            return Ok((true, after.filter(|_| progressed)));
        }
    }
    Ok((false, after.filter(|_| progressed)))
}
