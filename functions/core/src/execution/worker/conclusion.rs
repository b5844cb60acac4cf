//! How a delivery ends: the finish write of a claimed attempt and what follows from it, or the
//! disposition of a message whose execution could not be claimed.
//!
//! Only the worker whose finish was recorded deletes the message or copies it to the DLQ; a
//! refused finish (taken over) leaves the message to the new owner.

use super::attempt::{Exit, Holds};
use super::{secs_ceil, Delivery, Disposition, Worker};
use crate::execution::metrics::ExecMetrics;
use crate::execution::outcome::due_on_finish;
use chrono::{DateTime, Utc};
use sundial_model::claim::{Fence, Finish};
use sundial_model::outcome::OutboxEntry;
use sundial_model::retry::codes;
use sundial_model::{ExecStatus, Execution};
use sundial_store::error::StoreError;
use sundial_store::executions::{ClaimOutcome, FinishResult};

impl Worker {
    /// Records the finish and turns it into a disposition (and the metrics, DLQ copy, slot and
    /// tenant releases that go with it).
    pub(super) async fn conclude(
        &self,
        d: &Delivery<'_>,
        fence: &Fence,
        fin: Finish,
        e: &Execution,
        holds: Holds,
        m: &mut ExecMetrics,
    ) -> Result<Disposition, StoreError> {
        self.conclude_with(d, fence, Outcome { fin, item_result: None }, e, holds, m).await
    }

    /// [`Worker::conclude`] with a map-reduce item's result (`docs/mapreduce.md`): an item's
    /// final finish is counted on its parent in the same transaction.
    pub(super) async fn conclude_with(
        &self,
        d: &Delivery<'_>,
        fence: &Fence,
        outcome: Outcome,
        e: &Execution,
        holds: Holds,
        m: &mut ExecMetrics,
    ) -> Result<Disposition, StoreError> {
        let Outcome { fin, item_result: result } = outcome;
        let policy = e.definition.concurrency;
        let key = &d.key;
        let now = self.clock.now();
        let status = fin.status();
        let item = matches!(key.child, Some(sundial_model::children::ChildKey::Item(_)));
        // The outcome events this finish makes due, written with it (docs/outcomes.md).
        let outbox = if item { Vec::new() } else { Box::pin(self.outbox_of(e, &fin, fence.attempt)).await };
        // With `outcomeNotify`, each event's notification twin too (docs/outcomes.md).
        let encoded = sundial_model::outcome::members(&outbox, e.definition.outcome_notify.is_some());
        let (written, waiters) = if item {
            (self.finish_item(key, fence, &fin, result.as_ref()).await?, Vec::new())
        } else {
            // Past its finish deadline: the reconciler looks at once and reports it, unless it
            // already did (docs/outcomes.md, "Finish deadlines").
            let late = status.is_terminal()
                && sundial_model::reconcile::finish_deadline(e).is_some_and(|d| now.timestamp_millis() > d);
            self.store.finish_with(key, fence, &fin, &encoded, late, now).await?
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
        if !encoded.is_empty() {
            self.flush_outbox(e, status, &encoded, true).await;
        }
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
                let secs = secs_ceil(available_at - now.timestamp_millis()).max(1);
                // Boxed: its awaits would otherwise grow every finish's future (and the stack).
                Box::pin(self.retry_copy(d, secs)).await
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

    /// The outcome entries `fin` makes due for `e`. A success of a job that tracks its streak
    /// ([`crate::execution::outcome::tracks_streak`]) reads the job's dead fires in a row first
    /// (half a read unit): with any, it is the recovery. A failed read only costs that: the
    /// job's next success is the recovery instead.
    async fn outbox_of(&self, e: &Execution, fin: &Finish, attempt: u32) -> Vec<OutboxEntry> {
        let recovering = matches!(fin, Finish::Succeeded)
            && e.child.is_none()
            && crate::execution::outcome::tracks_streak(e)
            && match self.store.dead_in_a_row(&e.tenant, &e.job_id).await {
                Ok(n) => n > 0,
                Err(err) => {
                    tracing::warn!(execution = %e.id(), error = %err, "dead fires in a row unknown; a later success reports the recovery");
                    false
                }
            };
        due_on_finish(e, fin, attempt, recovering)
    }

    /// Sends `e`'s outbox entries now; what fails stays for the next claim or the reconciler.
    pub(super) async fn flush_outbox(
        &self,
        e: &Execution,
        status: ExecStatus,
        entries: &[String],
        held: bool,
    ) {
        // Its own task, so its SDK calls start from a fresh stack, not from the bottom of a
        // delivery's (deep in a debug build); the worker still waits for it.
        let (outcomes, exec, entries, now) =
            (self.outcomes.clone(), e.clone(), entries.to_vec(), self.clock.now());
        let scope = crate::access::current();
        let task = tokio::spawn(crate::access::within(scope, async move {
            outcomes.flush(&exec, status, &entries, held, now).await
        }));
        match task.await {
            Ok(Ok(_)) => {}
            Ok(Err(err)) => {
                tracing::warn!(execution = %e.id(), error = %err, "outcome events not all sent; the reconciler sends the rest")
            }
            Err(err) => {
                tracing::error!(execution = %e.id(), error = %err, "outcome flush task failed; the reconciler sends them")
            }
        }
    }

    /// Queues the copy that brings a RETRY_WAIT fire back in `secs`. It carries the generation
    /// the execution has now: a wake or a re-send may have raised it while the attempt ran, and
    /// a copy below it would drop itself as stale when it comes (the full mix's seed 141).
    async fn retry_copy(&self, d: &Delivery<'_>, secs: i32) -> Disposition {
        let gen = match self.store.get(&d.key, true).await {
            Ok(Some(s)) => s.wait_gen.max(d.msg.wait_gen),
            _ => d.msg.wait_gen,
        };
        self.requeue(d, gen, secs).await
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
            ClaimOutcome::NotYet { .. } | ClaimOutcome::Held { .. }
                if sundial_mutants::active(sundial_mutants::Mutant::WorkerAcksRefusedClaim) =>
            {
                Disposition::Delete
            }
            ClaimOutcome::NotYet { available_at } => {
                self.wait(d, secs_ceil(available_at - now_ms).max(1)).await
            }
            // Another copy of an execution this process runs now: its own message stands for
            // it (`in_flight`).
            ClaimOutcome::Held { .. } if self.in_flight.contains(&d.key) => {
                tracing::debug!(execution = %d.key.id(), "another copy of an execution this worker is running: dropped");
                Disposition::Delete
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
