//! Map-reduce in the worker (`docs/mapreduce.md`).
//!
//! ```text
//! claim parent (T) ─> handler.map ─ emit batch ─> TransactWriteItems [parent fenced: ck = cursor, xe += n;
//!                         │                        child puts IF attribute_not_exists] ─> SendMessageBatch
//!                         └ returns ─> seal: RUNNING → WAITING IF tok = T AND lo = me
//! child (item) claimed ─> handler.run_item ─> TransactWriteItems [child's fenced finish + result; parent xd += 1]
//! sealed AND xd = xe ─> WAITING → READY (phase REDUCE) IF st = WAITING AND tok = T ─> message
//! claim parent (T+1) ─> handler.reduce(results read from the children) ─> fenced finish
//! ```
//!
//! Whoever sees a sealed parent with every item counted first moves it to its reduce: the
//! seal itself (every item already final), the last item's worker, or the reconciler.

use super::attempt::{Exit, Holds};
use super::{Delivery, Disposition, Worker};
use crate::access::Scope;
use crate::execution::clock::Clock;
use crate::execution::mapreduce::{ready_to_reduce, EmitError, Emitted, Emitter, MapItem, MapState};
use crate::execution::metrics::ExecMetrics;
use crate::execution::target::in_process::BoxFuture;
use std::sync::{Arc, Mutex};
use sundial_model::children::{child_of, ChildKey};
use sundial_model::claim::Fence;
use sundial_model::{ConcurrencyPolicy, ExecStatus, Execution};
use sundial_store::error::StoreError;
use sundial_store::executions::{ExecKey, ExecStore, FinishResult};
use sundial_store::queue::{Outgoing, PoolQueues};

/// The emitter of one claim of a map-reduce parent.
pub(super) struct WorkerEmitter {
    pub(super) store: ExecStore,
    pub(super) key: ExecKey,
    pub(super) fence: Fence,
    pub(super) parent: Execution,
    pub(super) lease_ms: i64,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) queues: Arc<PoolQueues>,
    pub(super) pool: String,
    pub(super) actor: String,
    pub(super) rejected: Arc<Mutex<u64>>,
    pub(super) scope: Option<Arc<Scope>>,
}

impl Emitter for WorkerEmitter {
    fn emit(
        &self,
        items: Vec<MapItem>,
        cursor: serde_json::Value,
    ) -> BoxFuture<'_, Result<Emitted, EmitError>> {
        Box::pin(async move {
            let now = self.clock.now();
            let kids: Vec<Execution> = items
                .into_iter()
                .map(|it| {
                    let mut c = child_of(&self.parent, ChildKey::Item(it.key), now, &self.actor);
                    c.map_reduce = Some(MapState::Item { input: it.input, result: None });
                    c
                })
                .collect();
            let limit = self.parent.definition.map_reduce.as_ref().map_or(0, |s| s.limit());
            if kids.len() as u64 > limit {
                return Err(EmitError::Invalid(format!(
                    "more than mapReduce.maxItems = {limit} items emitted"
                )));
            }
            let lu = self.clock.now_ms() + self.lease_ms;
            let write = self.store.emit_items(&self.key, &self.fence, &kids, &cursor, lu, limit);
            let r = crate::access::within(self.scope.clone(), write).await;
            if matches!(r, Err(EmitError::Stale { .. })) {
                if let Ok(mut n) = self.rejected.lock() {
                    *n += 1;
                }
            }
            let emitted = r?;
            // Every item of the batch is sent, also one whose child existed already (a batch
            // repeated after a takeover): a duplicate message is harmless, a missing one would
            // wait for the reconciler.
            let out: Vec<Outgoing> = kids.iter().map(|k| Outgoing::for_execution(k, now)).collect();
            if let Err(err) = self.queues.send_all(&self.pool, &out).await {
                tracing::warn!(execution = %self.key.id(), error = %err, "items created but not all sent; the reconciler re-sends them");
            }
            Ok(emitted)
        })
    }
}

impl Worker {
    /// The map of the claimed parent returned: seal it (RUNNING → WAITING), and start its
    /// reduce at once if every item is already final.
    pub(super) async fn seal_map(
        &self,
        d: &Delivery<'_>,
        e: &Execution,
        fence: &Fence,
        policy: ConcurrencyPolicy,
        holds: Holds,
        m: &mut ExecMetrics,
    ) -> Result<Disposition, StoreError> {
        let now = self.clock.now();
        let look = now.timestamp_millis()
            + (i64::from(e.definition.timeout_secs) * 1_000)
                .clamp(sundial_model::reconcile::GRACE_MS, sundial_model::reconcile::MAX_BACKOFF_MS);
        match self.store.seal_map(&d.key, fence, look, now).await? {
            Err(_) => {
                m.stale_rejections += 1;
                tracing::warn!(execution = %d.key.id(), mine = fence.token, "seal refused: taken over");
                holds.end(self, Exit::TakenOver).await?;
                Ok(Disposition::Leave)
            }
            Ok(parent) => {
                m.outcome = Some(ExecStatus::Waiting);
                holds.end(self, Exit::Finished { status: ExecStatus::Waiting, policy }).await?;
                self.maybe_reduce(&d.key, &parent).await?;
                Ok(Disposition::Delete)
            }
        }
    }

    /// A map-reduce item's final finish was counted on its parent: start the reduce if it was
    /// the last. A failure here loses nothing: the reconciler looks at a waiting parent.
    pub(super) async fn item_finished(&self, key: &ExecKey) {
        let pkey = key.parent();
        let r = async {
            let Some(p) = self.store.get(&pkey, true).await? else { return Ok(()) };
            self.maybe_reduce(&pkey, &p.exec).await
        }
        .await;
        if let Err(e) = r {
            tracing::warn!(execution = %key.id(), error = %e, "item counted but its parent's reduce not started; the reconciler will");
        }
    }

    /// WAITING → READY (reduce) and its message, if `parent` is sealed with every item counted.
    pub(super) async fn maybe_reduce(&self, pkey: &ExecKey, parent: &Execution) -> Result<(), StoreError> {
        if !ready_to_reduce(parent.status, parent.map_reduce.as_ref()) {
            return Ok(());
        }
        let now = self.clock.now();
        if self.store.start_reduce(pkey, parent, &self.actor(), now).await? {
            let mut ready = parent.clone();
            ready.status = ExecStatus::Ready;
            ready.fire_at = now;
            if let Err(err) =
                self.queues.send_all(&parent.definition.pool, &[Outgoing::for_execution(&ready, now)]).await
            {
                tracing::warn!(execution = %pkey.id(), error = %err, "reduce ready but not sent; the reconciler re-sends it");
            }
        }
        Ok(())
    }

    /// The finish of a claimed map-reduce item (with its result, counted on its parent).
    pub(super) async fn finish_item(
        &self,
        key: &ExecKey,
        fence: &Fence,
        fin: &sundial_model::claim::Finish,
        result: Option<&serde_json::Value>,
    ) -> Result<FinishResult, StoreError> {
        self.store.finish_item(key, fence, fin, result, self.clock.now()).await
    }
}
