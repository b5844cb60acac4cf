//! Map-reduce parents and items (`docs/mapreduce.md`): the transactions that keep the
//! parent's counts exact, and the fenced phase moves.
//!
//! - [`ExecStore::emit_items`]: `TransactWriteItems` [parent: `SET ck = cursor, lu, xp = MAP`,
//!   `xe += created` `IF st = RUNNING AND tok = T AND lo = me`; child puts
//!   `IF attribute_not_exists(pk)` ×≤99]. A stale fence cancels the whole batch; items whose
//!   children exist already (a batch repeated after a takeover) are left out and the rest
//!   written again.
//! - [`ExecStore::finish_item`]: `TransactWriteItems` [child: the fenced finish (and its
//!   result); parent: `xd += 1` (and `xf += 1`) `IF attribute_exists(pk) AND xp <> REDUCE`]:
//!   an item is counted in the same write that makes it final, so never lost. Once the reduce
//!   has started, the counts are history: a late item (a replay) finishes alone.
//! - [`ExecStore::replay_item`]: `TransactWriteItems` [child: DEAD → READY; parent: `xd -= 1,
//!   xf -= 1` `IF attribute_exists(pk) AND xp <> REDUCE`]: a replayed item leaves the count it
//!   was in, so its next final finish counts it once again, never twice (a DEAD item under a
//!   parent that has not reduced was counted: its finish was the counted one).
//! - [`ExecStore::seal_map`]: RUNNING → WAITING `IF st = RUNNING AND tok = T AND lo = me`.
//! - [`ExecStore::start_reduce`]: WAITING → READY (phase REDUCE), attempts from 0 again,
//!   `IF st = WAITING AND tok = T AND xd = done as read` (a replay that took an item back
//!   out of the count since then wins).

use super::error::StoreError;
use super::executions::{ExecKey, ExecStore, FinishResult, Snapshot, EXECUTION_RETENTION_SECS};
use super::expr::{Expr, WithExpr};
use super::items::{self, attr, n};
use super::transition::Transition;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};
use chrono::{DateTime, Utc};
use std::time::Duration;
use sundial_model::claim::{Fence, Finish};
use sundial_model::keys;
use sundial_model::mapreduce::{Emitted, ItemResult, MapState, REDUCE_CODE, SEAL_CODE};
use sundial_model::retry::RunError;
use sundial_model::{ExecStatus, Execution};

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

/// How a transaction ended.
enum Tx {
    Applied,
    /// Cancelled: the code of each action, in order (`ConditionalCheckFailed`, `None`, ...).
    Cancelled(Vec<String>),
}

/// Rounds for a transaction that conflicts with another on the same parent (children finishing
/// at once): each waits a little longer.
const CONFLICT_ROUNDS: u32 = 12;

impl ExecStore {
    async fn transact(&self, op: &'static str, actions: Vec<TransactWriteItem>) -> Result<Tx, StoreError> {
        let mut round = 0;
        loop {
            let res =
                self.client().transact_write_items().set_transact_items(Some(actions.clone())).send().await;
            let err = match res {
                Ok(_) => return Ok(Tx::Applied),
                Err(e) => e,
            };
            let reasons: Option<Vec<String>> = match err.as_service_error() {
                Some(TransactWriteItemsError::TransactionCanceledException(c)) => Some(
                    c.cancellation_reasons().iter().map(|r| r.code().unwrap_or("None").to_string()).collect(),
                ),
                _ => None,
            };
            let conflict = match &reasons {
                Some(r) => !r.iter().any(|c| c == "ConditionalCheckFailed"),
                None => matches!(
                    err.as_service_error(),
                    Some(TransactWriteItemsError::TransactionInProgressException(_))
                ),
            };
            if conflict && round < CONFLICT_ROUNDS {
                round += 1;
                // Jittered, growing: a few ms first, at most ~0.4 s.
                let ms = (5u64 << round.min(6)) + u64::from(std::process::id() % 7) * round as u64;
                tokio::time::sleep(Duration::from_millis(ms)).await;
                continue;
            }
            return match reasons {
                Some(r) if !conflict => Ok(Tx::Cancelled(r)),
                Some(r) => Err(StoreError::Transient {
                    op,
                    message: format!("transaction cancelled: {}", r.join(", ")),
                }),
                None => Err(StoreError::from_sdk(op, err)),
            };
        }
    }

    fn update(&self, key: &ExecKey, e: Expr) -> Result<TransactWriteItem, StoreError> {
        let u = Update::builder()
            .table_name(self.table())
            .key(attr::PK, s(key.pk()))
            .key(attr::SK, s(key.sk()))
            .expr(e)
            .build()
            .map_err(|e| StoreError::Permanent { op: "TransactWriteItems", message: e.to_string() })?;
        Ok(TransactWriteItem::builder().update(u).build())
    }

    /// Creates the item children `kids` of the parent `key` and commits `cursor` as its
    /// checkpoint (extending its lease to `lease_until`), atomically, if `fence` still holds
    /// the parent and at most `limit` items exist then.
    pub async fn emit_items(
        &self,
        key: &ExecKey,
        fence: &Fence,
        kids: &[Execution],
        cursor: &serde_json::Value,
        lease_until: i64,
        limit: u64,
    ) -> Result<Emitted, EmitError> {
        let text = cursor.to_string();
        if text.len() > super::executions::MAX_CHECKPOINT_BYTES {
            return Err(EmitError::Invalid(format!(
                "cursor: {} bytes, at most {}",
                text.len(),
                super::executions::MAX_CHECKPOINT_BYTES
            )));
        }
        let mut pending: Vec<&Execution> = kids.iter().collect();
        let mut existing = 0u64;
        loop {
            let created = pending.len() as u64;
            let actions = self.emit_actions(key, fence, &pending, &text, lease_until, limit)?;
            let reasons = match self.transact("TransactWriteItems(emit)", actions).await? {
                Tx::Applied => return Ok(Emitted { created, existing }),
                Tx::Cancelled(reasons) => reasons,
            };
            let failed = |i: usize| reasons.get(i).is_some_and(|c| c == "ConditionalCheckFailed");
            if failed(0) {
                return Err(self.emit_refused(key, fence, limit).await?);
            }
            let before = pending.len();
            pending =
                pending.into_iter().enumerate().filter(|(i, _)| !failed(i + 1)).map(|(_, k)| k).collect();
            existing += (before - pending.len()) as u64;
            if pending.len() == before {
                return Err(EmitError::Store(StoreError::Transient {
                    op: "TransactWriteItems(emit)",
                    message: format!("cancelled without a failed condition: {}", reasons.join(", ")),
                }));
            }
        }
    }

    /// One emit transaction: the parent's fenced update (the cursor, the lease, the count of
    /// items created, within the job's item limit), then a put of each child not there yet.
    fn emit_actions(
        &self,
        key: &ExecKey,
        fence: &Fence,
        pending: &[&Execution],
        cursor: &str,
        lease_until: i64,
        limit: u64,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let created = pending.len() as u64;
        let mut e = Expr::default();
        e.set(attr::CHECKPOINT, s(cursor))
            .set(attr::LEASE_UNTIL, n(lease_until))
            .set(attr::MAP_PHASE, s(items::phase_str(sundial_model::mapreduce::Phase::Map)))
            .add(attr::MAP_EMITTED, created as i64);
        ExecStore::fenced(&mut e, fence);
        // The job's item limit, checked in the same write: `xe` absent or `xe <= limit - created`.
        if created > 0 {
            let room = limit.saturating_sub(created) as i64;
            e.cond_absent_or(attr::MAP_EMITTED, super::expr::Cmp::Le, n(room));
        }
        let mut actions = vec![self.update(key, e)?];
        for kid in pending {
            let mut cond = Expr::new();
            cond.cond_not_exists(attr::PK);
            let put = Put::builder()
                .table_name(self.table())
                .set_item(Some(items::execution_to_item(kid, EXECUTION_RETENTION_SECS)))
                .expr(cond)
                .build()
                .map_err(|e| StoreError::Permanent { op: "TransactWriteItems", message: e.to_string() })?;
            actions.push(TransactWriteItem::builder().put(put).build());
        }
        Ok(actions)
    }

    /// Why the parent's update refused an emit: the fence, or the item limit. Which one, the
    /// parent says (read again, strongly consistent).
    async fn emit_refused(&self, key: &ExecKey, fence: &Fence, limit: u64) -> Result<EmitError, StoreError> {
        let cur = self.get(key, true).await?;
        let held = cur.as_ref().is_some_and(|c| {
            c.exec.status == ExecStatus::Running
                && c.exec.fencing_token == fence.token
                && c.exec.lease_owner.as_deref() == Some(fence.owner.as_str())
        });
        Ok(if held {
            EmitError::Invalid(format!("more than mapReduce.maxItems = {limit} items emitted"))
        } else {
            EmitError::Stale { token: fence.token }
        })
    }

    /// A map-reduce item's fenced finish: as [`ExecStore::finish`], and when final, with its
    /// `result` and its count on the parent in the same transaction.
    pub async fn finish_item(
        &self,
        key: &ExecKey,
        fence: &Fence,
        finish: &Finish,
        result: Option<&serde_json::Value>,
        now: DateTime<Utc>,
    ) -> Result<FinishResult, StoreError> {
        let to = finish.status();
        if !to.is_terminal() {
            return self.finish(key, fence, finish, now).await;
        }
        let mut child = ExecStore::finish_expr(key, fence, finish, now);
        if let (ExecStatus::Succeeded, Some(r)) = (to, result) {
            child.set(attr::ITEM_RESULT, s(r.to_string()));
        }
        let mut parent = Expr::default();
        parent.add(attr::MAP_DONE, 1);
        if to != ExecStatus::Succeeded {
            parent.add(attr::MAP_FAILED, 1);
        }
        Self::counting(&mut parent);
        let actions = vec![self.update(key, child)?, self.update(&key.parent(), parent)?];
        match self.transact("TransactWriteItems(finish item)", actions).await? {
            Tx::Applied => Ok(FinishResult::Done),
            Tx::Cancelled(reasons) if reasons.first().is_some_and(|c| c == "ConditionalCheckFailed") => {
                let cur = self.get(key, true).await?;
                Ok(FinishResult::TakenOver {
                    status: cur.as_ref().map(|c| c.exec.status),
                    token: cur.as_ref().map(|c| c.exec.fencing_token),
                })
            }
            // The parent is gone (deleted with its job), or its reduce has started (a replayed
            // item): finish the item alone.
            Tx::Cancelled(_) => self.finish(key, fence, finish, now).await,
        }
    }

    /// The parent's condition of a change to its item counts: it exists and has not started
    /// its reduce (whose item set is then fixed).
    fn counting(parent: &mut Expr) {
        parent.cond_exists(attr::PK).cond_absent_or(
            attr::MAP_PHASE,
            super::expr::Cmp::Ne,
            s(items::phase_str(sundial_model::mapreduce::Phase::Reduce)),
        );
    }

    /// The replay of a DEAD map-reduce item (`child`: its DEAD → READY update): in one
    /// transaction with taking it back out of its parent's count (`xd -= 1, xf -= 1`), while
    /// the parent has not started its reduce. Otherwise (the parent reduces, ended after its
    /// reduce, or is gone) the item is replayed alone and counted nowhere. False if the item
    /// was no longer DEAD at its token.
    pub(crate) async fn replay_item(&self, key: &ExecKey, child: Expr) -> Result<bool, StoreError> {
        let mut parent = Expr::default();
        // The reconciler's read of the items starts over: this one may be behind where it was.
        parent.add(attr::MAP_DONE, -1).add(attr::MAP_FAILED, -1).remove(attr::MAP_CHECKED);
        Self::counting(&mut parent);
        let actions = vec![self.update(key, child.clone())?, self.update(&key.parent(), parent)?];
        match self.transact("TransactWriteItems(replay item)", actions).await? {
            Tx::Applied => Ok(true),
            Tx::Cancelled(reasons) if reasons.first().is_some_and(|c| c == "ConditionalCheckFailed") => {
                Ok(false)
            }
            Tx::Cancelled(_) => Ok(self.cas(key, "UpdateItem(replay)", child).await?.is_ok()),
        }
    }

    /// The map returned: RUNNING → WAITING (phase WAIT) if `fence` still holds the parent;
    /// the reconciler looks at it at `next_look` (ms). Returns the parent as it is now.
    pub async fn seal_map(
        &self,
        key: &ExecKey,
        fence: &Fence,
        next_look: i64,
        now: DateTime<Utc>,
    ) -> Result<Result<Execution, FinishResult>, StoreError> {
        let e = Self::seal_map_expr(key, fence, next_look, now);
        Ok(match self.cas(key, "UpdateItem(seal map)", e).await? {
            Ok(item) => Ok(items::execution_from_item(&item)?),
            Err(old) => {
                let cur = old.as_ref().and_then(|i| items::snapshot_from_item(i).ok());
                Err(FinishResult::TakenOver {
                    status: cur.as_ref().map(|c| c.exec.status),
                    token: cur.as_ref().map(|c| c.exec.fencing_token),
                })
            }
        })
    }

    /// The update of [`ExecStore::seal_map`].
    pub(crate) fn seal_map_expr(key: &ExecKey, fence: &Fence, next_look: i64, now: DateTime<Utc>) -> Expr {
        let t =
            Transition::by_worker(fence, ExecStatus::Waiting, now.timestamp_millis(), Some(SEAL_CODE.into()));
        t.expr(
            |e| {
                e.set(attr::MAP_PHASE, s(items::phase_str(sundial_model::mapreduce::Phase::Wait)))
                    .add(attr::MAP_EMITTED, 0)
                    .add(attr::MAP_DONE, 0)
                    .set(attr::OPEN_PK, s(keys::open_partition(keys::open_part(&key.tenant, &key.job_id))))
                    .set(attr::OPEN_DUE, n(next_look));
            },
            |e| {
                e.remove(attr::LEASE_UNTIL);
            },
        )
    }

    /// WAITING → READY in the reduce phase, once, if `parent` still waits at its token: the
    /// caller then sends its message (the `open` index covers a lost send). False if someone
    /// else moved it first.
    pub async fn start_reduce(
        &self,
        key: &ExecKey,
        parent: &Execution,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let mut e = Self::start_reduce_expr(key, parent, actor, now);
        // The reduce's message (generation 0) starts the parent's only chain of copies, and
        // the wait's looks (counted for their backoff) are over.
        for a in [attr::WAIT_GEN, attr::WAIT_GEN_SENT, attr::RESENDS, attr::MAP_LOOKED, attr::MAP_CHECKED] {
            e.remove(a);
        }
        Ok(self.cas(key, "UpdateItem(start reduce)", e).await?.is_ok())
    }

    /// The update of [`ExecStore::start_reduce`].
    pub(crate) fn start_reduce_expr(
        key: &ExecKey,
        parent: &Execution,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Expr {
        let now_ms = now.timestamp_millis();
        let at = (ExecStatus::Waiting, parent.fencing_token, parent.attempt);
        let t = Transition::at_token(at, ExecStatus::Ready, actor, now_ms, Some(REDUCE_CODE.into()));
        let mut e = t.expr(
            |e| {
                e.set(attr::MAP_PHASE, s(items::phase_str(sundial_model::mapreduce::Phase::Reduce)))
                    .set(attr::AVAILABLE, n(now_ms))
                    // The reduce is a step of its own: its attempts count from 1 again (the map's
                    // takeovers spent the map's), while the token keeps growing (fencing).
                    .set(attr::ATTEMPT, n(0))
                    .remove(attr::RUN_MS)
                    .set(attr::OPEN_PK, s(keys::open_partition(keys::open_part(&key.tenant, &key.job_id))))
                    .set(attr::OPEN_DUE, n(now_ms + sundial_model::reconcile::GRACE_MS));
            },
            |_| {},
        );
        // The count as read: an item replayed since (taken back out of it) stops the reduce.
        if let Some(MapState::Parent { done, .. }) = &parent.map_reduce {
            e.cond_absent_or(attr::MAP_DONE, super::expr::Cmp::Eq, n(*done as i64));
        }
        e
    }

    /// One page of the items of parent `key` after sort key `after`, keys and status only
    /// (strongly consistent, at most `limit`): (sort key, status) in key order, and whether more
    /// may follow. The reconciler's backstop reads them so, a page at a time.
    pub async fn item_statuses(
        &self,
        key: &ExecKey,
        after: Option<&str>,
        limit: i32,
    ) -> Result<(Vec<(String, ExecStatus)>, bool), StoreError> {
        let mut e = Expr::new();
        e.key_eq(attr::PK, s(key.pk()))
            .key_begins_with(attr::SK, &keys::children_sk_prefix(key.scheduled_ms))
            .project(&[attr::SK, attr::STATUS]);
        let start = after.map(|sk| {
            std::collections::HashMap::from([
                (attr::PK.to_string(), s(key.pk())),
                (attr::SK.to_string(), s(sk)),
            ])
        });
        let query =
            self.client().query().table_name(self.table()).expr(e).consistent_read(true).limit(limit.max(1));
        let page = super::query::one_page(query, start, "Query(item statuses)").await?;
        let rows = page
            .items
            .iter()
            .filter_map(|i| Some((i.get(attr::SK)?.as_s().ok()?.clone(), items::status_of(i)?)))
            .collect();
        Ok((rows, page.last_key.is_some_and(|k| !k.is_empty())))
    }

    /// The reconciler's look at a waiting parent `seen` found it not ready: its next look at
    /// `at` (ms), one more look counted (the backoff grows), the done count it saw, and where
    /// its read of the items got to (`checked`), if it read them; only if it is still as seen.
    pub async fn look_at_parent(
        &self,
        key: &ExecKey,
        seen: &Snapshot,
        at: i64,
        done: u64,
        checked: Option<&str>,
    ) -> Result<bool, StoreError> {
        let mut e = Expr::default();
        e.set(attr::OPEN_DUE, n(at))
            .set(attr::RESENDS, n(i64::from(seen.resends.saturating_add(1))))
            .set(attr::MAP_LOOKED, n(done as i64));
        if let Some(sk) = checked {
            e.set(attr::MAP_CHECKED, s(sk));
        }
        e.cond_eq(attr::STATUS, s(ExecStatus::Waiting.as_str()))
            .cond_eq(attr::TOKEN, n(seen.exec.fencing_token as i64));
        match seen.open_due {
            Some(d) => e.cond_eq(attr::OPEN_DUE, n(d)),
            None => e.cond_not_exists(attr::OPEN_DUE),
        };
        Ok(self.cas(key, "UpdateItem(look at parent)", e).await?.is_ok())
    }

    /// Every item's outcome under the parent `key`, in key order (what the reduce receives).
    pub async fn item_results(&self, key: &ExecKey) -> Result<Vec<ItemResult>, StoreError> {
        Ok(self.children_of(key).await?.into_iter().filter_map(|c| item_result(&c)).collect())
    }
}

/// One item child's outcome.
pub fn item_result(c: &Execution) -> Option<ItemResult> {
    let Some(sundial_model::children::ChildKey::Item(k)) = &c.child else { return None };
    let result = match &c.map_reduce {
        Some(MapState::Item { result, .. }) => result.clone(),
        _ => None,
    };
    Some(ItemResult {
        key: k.clone(),
        status: c.status,
        result,
        error: (c.status != ExecStatus::Succeeded).then(|| c.last_error.clone()).flatten(),
    })
}

/// Why an emit was refused.
#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    /// Another worker holds the parent now (this one is a zombie): nothing was created, stop.
    #[error("emit refused: the parent was taken over (token {token} is stale)")]
    Stale {
        /// This attempt's token.
        token: u64,
    },
    /// The batch is wrong (key, size, count, the job's `maxItems`): permanent.
    #[error("emit refused: {0}")]
    Invalid(String),
    /// The store failed (retryable).
    #[error("emit failed: {0}")]
    Store(#[from] crate::error::StoreError),
}

impl From<EmitError> for RunError {
    fn from(e: EmitError) -> Self {
        match &e {
            EmitError::Invalid(_) => RunError::permanent("EmitInvalid", e.to_string()),
            EmitError::Stale { .. } => RunError::retryable("EmitRefused", e.to_string()),
            EmitError::Store(_) => RunError::retryable("EmitFailed", e.to_string()),
        }
    }
}
