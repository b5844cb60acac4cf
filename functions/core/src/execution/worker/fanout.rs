//! Parents and children in the worker (`docs/children.md`).
//!
//! A claimed parent (a fire of a sharded or broadcast job) is not run: its claim is the fan-out.
//!
//! ```text
//! claim parent (token T) ─> PutItem child i IF attribute_not_exists   (each child, absorbed when it exists)
//!   ─> parent RUNNING → WAITING IF tok = T AND lo = me                 (kn = N, kc = {})
//!   ─> SendMessageBatch the children that are not final                 (the reconciler covers a lost send)
//! child's fenced finish (final) ─> SET parent.kc.{tag} = status IF st = WAITING
//!   ─> the tally is complete: parent WAITING → SUCCEEDED | FAILED IF st = WAITING AND tok = T
//! ```
//!
//! Order matters: the children exist before the parent waits (a crash in between leaves the
//! parent RUNNING; its lease ends, the reconciler re-sends it, and the takeover's fan-out finds
//! every child already there), and the parent waits before any child can finish (a child's
//! tally write requires a waiting parent; a repeated fan-out counts the children that finished
//! before it, so none is lost to a parent still RUNNING).

use super::attempt::{Exit, Holds};
use super::{Delivery, Disposition, Worker};
use crate::execution::metrics::ExecMetrics;
use futures_util::future::try_join_all;
use sundial_model::children;
use sundial_model::claim::Fence;
use sundial_model::{ConcurrencyPolicy, ExecStatus, Execution};
use sundial_store::error::StoreError;
use sundial_store::executions::{ExecKey, FinishResult, PutOutcome};
use sundial_store::queue::Outgoing;

/// Children put at once.
const PUT_CONCURRENCY: usize = 16;

impl Worker {
    /// The claimed parent `e`'s run: create its children, wait for them, deliver them.
    pub(super) async fn fan_out(
        &self,
        d: &Delivery<'_>,
        e: &Execution,
        fence: &Fence,
        policy: ConcurrencyPolicy,
        holds: Holds,
        m: &mut ExecMetrics,
    ) -> Result<Disposition, StoreError> {
        let now = self.clock.now();
        let actor = self.actor();
        let kids: Vec<Execution> = children::plan(&e.definition)
            .unwrap_or_default()
            .into_iter()
            .map(|k| children::child_of(e, k, now, &actor))
            .collect();
        let mut puts: Vec<PutOutcome> = Vec::with_capacity(kids.len());
        for chunk in kids.chunks(PUT_CONCURRENCY) {
            puts.extend(try_join_all(chunk.iter().map(|kid| self.store.put_new(kid))).await?);
        }
        // The reconciler's backstop look at the waiting parent: after one child attempt could
        // have ended, at most an hour away.
        let look = now.timestamp_millis()
            + (i64::from(e.definition.timeout_secs) * 1_000)
                .clamp(sundial_model::reconcile::GRACE_MS, sundial_model::reconcile::MAX_BACKOFF_MS);
        match self.store.await_children(&d.key, fence, kids.len() as u32, look, now).await? {
            FinishResult::TakenOver { status, token } => {
                m.stale_rejections += 1;
                tracing::warn!(execution = %d.key.id(), mine = fence.token, current = ?token, status = ?status, "fan-out refused: taken over");
                holds.end(self, Exit::TakenOver).await?;
                return Ok(Disposition::Leave);
            }
            FinishResult::Done => {}
        }
        m.outcome = Some(ExecStatus::Waiting);
        holds.end(self, Exit::Finished { status: ExecStatus::Waiting, policy }).await?;
        let out: Vec<Outgoing> = kids
            .iter()
            .zip(&puts)
            .filter(|(_, o)| !matches!(o, PutOutcome::Exists(st) if st.is_terminal()))
            .map(|(kid, _)| Outgoing::for_execution(kid, now))
            .collect();
        if let Err(err) = self.queues.send_all(d.pool, &out).await {
            // The children are READY in the `open` index: the reconciler sends them a grace later.
            tracing::warn!(execution = %d.key.id(), error = %err, "children created but not all sent; the reconciler re-sends them");
        }
        // A repeated fan-out (the first one's worker crashed before the parent's wait): a child
        // delivered by the first may have finished while the parent was still RUNNING, when
        // its tally write could not land. Count the final ones now; a child finishing from here
        // on finds the parent waiting and counts itself.
        if puts.iter().any(|o| matches!(o, PutOutcome::Exists(_))) {
            for kid in self.store.children_of(&d.key).await? {
                if kid.status.is_terminal() {
                    self.child_finished(&ExecKey::of(&kid), kid.status).await;
                }
            }
        }
        Ok(Disposition::Delete)
    }

    /// A child's fenced finish recorded a final `status`: count it on its parent, and end the
    /// parent if it was the last. A failure here loses nothing: the reconciler recomputes the
    /// tally of a waiting parent from its children.
    pub(super) async fn child_finished(&self, key: &ExecKey, status: ExecStatus) {
        match self.store.count_child_freeing(key, status, &self.actor(), self.clock.now()).await {
            // The last child ended the parent, which freed the job's slot: wake the next fire.
            Ok(Some((_, policy))) => self.wake_next(&key.parent(), policy).await,
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(execution = %key.id(), error = %e, "child final but not counted on its parent; the reconciler will");
            }
        }
    }
}
