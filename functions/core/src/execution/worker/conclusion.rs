//! How a delivery ends: the finish write of a claimed attempt and what follows from it, or the
//! disposition of a message whose execution could not be claimed.
//!
//! Only the worker whose finish was recorded deletes the message or copies it to the DLQ; a
//! refused finish (taken over) leaves the message to the new owner.

use super::attempt::{Exit, Holds};
use super::{secs_ceil, Delivery, Disposition, Worker};
use crate::execution::claim::{Fence, Finish};
use crate::execution::metrics::ExecMetrics;
use crate::execution::retry::codes;
use crate::model::{ConcurrencyPolicy, ExecStatus};
use crate::store::error::StoreError;
use crate::store::executions::{ClaimOutcome, FinishResult};
use chrono::{DateTime, Utc};

impl Worker {
    /// Records the finish and turns it into a disposition (and the metrics, DLQ copy, slot and
    /// tenant releases that go with it).
    pub(super) async fn conclude(
        &self,
        d: &Delivery<'_>,
        fence: &Fence,
        fin: Finish,
        policy: ConcurrencyPolicy,
        holds: Holds,
        m: &mut ExecMetrics,
    ) -> Result<Disposition, StoreError> {
        self.conclude_with(d, fence, Outcome { fin, item_result: None }, policy, holds, m).await
    }

    /// [`Worker::conclude`] with a map-reduce item's result (`docs/mapreduce.md`): an item's
    /// final finish is counted on its parent in the same transaction.
    pub(super) async fn conclude_with(
        &self,
        d: &Delivery<'_>,
        fence: &Fence,
        outcome: Outcome,
        policy: ConcurrencyPolicy,
        holds: Holds,
        m: &mut ExecMetrics,
    ) -> Result<Disposition, StoreError> {
        let Outcome { fin, item_result: result } = outcome;
        let key = &d.key;
        let now = self.clock.now();
        let status = fin.status();
        let item = matches!(key.child, Some(crate::execution::children::ChildKey::Item(_)));
        let (written, waiters) = if item {
            (self.finish_item(key, fence, &fin, result.as_ref()).await?, Vec::new())
        } else {
            self.store.finish_waking(key, fence, &fin, now).await?
        };
        match written {
            FinishResult::TakenOver { status: cur, token } => {
                m.stale_rejections += 1;
                tracing::warn!(execution = %key.id(), mine = fence.token, current = ?token, status = ?cur, "finish refused: taken over");
                holds.end(self, Exit::TakenOver).await?;
                return Ok(Disposition::Leave);
            }
            FinishResult::Done => {}
        }
        m.outcome = Some(status);
        holds.end(self, Exit::Finished { status, policy }).await?;
        if status.is_terminal() && !waiters.is_empty() {
            // Fires waiting for this one as an upstream (docs/dependencies.md).
            self.wake_downstream(key, &waiters).await;
        }
        if status.is_terminal() && item {
            self.item_finished(key).await;
        } else if status.is_terminal() && key.child.is_some() {
            self.child_finished(key, status).await;
        }
        Ok(match fin {
            Finish::RetryWait { available_at, .. } => {
                m.retries = 1;
                self.wait(d, secs_ceil(available_at - now.timestamp_millis()).max(1)).await
            }
            Finish::Dead { reason, .. } => {
                match self.queues.dead_letter(d.pool, d.body, &reason, &key.id()).await {
                    Ok(()) => Disposition::Delete,
                    // The next delivery finds DEAD and retries the DLQ copy.
                    Err(_) => Disposition::RetryAfter(5),
                }
            }
            _ => Disposition::Delete,
        })
    }

    /// The disposition of a message whose execution was not claimed.
    pub(super) async fn unclaimed(
        &self,
        d: &Delivery<'_>,
        outcome: ClaimOutcome,
        now: DateTime<Utc>,
    ) -> Disposition {
        let now_ms = now.timestamp_millis();
        match outcome {
            ClaimOutcome::Missing => {
                tracing::warn!(execution = %d.key.id(), "no such execution; dropping its message");
                Disposition::Delete
            }
            ClaimOutcome::Finished(ExecStatus::Dead) => {
                // DEAD but its message still here: the DLQ copy may be missing.
                let code = codes::ATTEMPTS_EXHAUSTED;
                match self.queues.dead_letter(d.pool, d.body, code, &d.key.id()).await {
                    Ok(()) => Disposition::Delete,
                    Err(_) => Disposition::Leave,
                }
            }
            ClaimOutcome::Finished(_) => Disposition::Delete,
            ClaimOutcome::NotYet { available_at } => {
                self.wait(d, secs_ceil(available_at - now_ms).max(1)).await
            }
            ClaimOutcome::Held { expires_at } => {
                self.wait(d, secs_ceil(expires_at - now_ms).max(1) + 1).await
            }
            ClaimOutcome::Claimed(_) => Disposition::Leave,
        }
    }
}

/// How an attempt ended: its finish, and a map-reduce item's result (counted on its parent in
/// the same transaction as the item's final finish).
pub(super) struct Outcome {
    pub(super) fin: Finish,
    pub(super) item_result: Option<serde_json::Value>,
}
