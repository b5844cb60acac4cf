//! Parent and child executions (`docs/children.md`): the parent's fenced move to WAITING, the
//! children's tally on the parent, the parent's completion, and the Query of a fire's
//! children. Children themselves are ordinary execution items (put with
//! [`ExecStore::put_new`], claimed and finished like any other).
//!
//! - [`ExecStore::await_children`]: RUNNING → WAITING `IF st = RUNNING AND tok = mine AND lo = me`,
//!   setting the child count `kn` and an empty tally `kc`: a zombie parent worker cannot move it.
//! - [`ExecStore::record_child`]: `SET kc.{tag} = {status} IF st = WAITING`: one map entry per
//!   child, so recording the same child twice (a retried write, the reconciler after a worker)
//!   counts it once. Only the worker whose fenced finish of the child succeeded records it.
//! - [`ExecStore::complete_parent`]: WAITING → SUCCEEDED | FAILED `IF st = WAITING AND tok = T`:
//!   whoever completes the tally first (the last child's worker, or the reconciler) ends it once.

use super::error::StoreError;
use super::executions::{truncate, ExecKey, ExecStore, FinishResult};
use super::expr::{Expr, WithExpr};
use super::items::{self, attr, n};
use super::query::{one_page, Pager};
use super::transition::Transition;
use super::QueryPage;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use sundial_model::children::{ChildKey, ParentEnd, Tally, CHILDREN_FAILED_CODE, FAN_OUT_CODE};
use sundial_model::claim::Fence;
use sundial_model::keys;
use sundial_model::{ExecStatus, Execution};

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

impl ExecStore {
    /// The parent's fan-out is done (its children exist): RUNNING → WAITING with `total`
    /// children, if `fence` still holds it. The lease is given up (nobody runs a waiting
    /// parent) and the reconciler looks at it at `next_look` (ms), the backstop for a tally
    /// whose last write was lost.
    pub async fn await_children(
        &self,
        key: &ExecKey,
        fence: &Fence,
        total: u32,
        next_look: i64,
        now: DateTime<Utc>,
    ) -> Result<FinishResult, StoreError> {
        let e = Self::await_children_expr(key, fence, total, next_look, now);
        Ok(match self.cas(key, "UpdateItem(await children)", e).await? {
            Ok(_) => FinishResult::Done,
            Err(old) => {
                let cur = old.as_ref().and_then(|i| items::snapshot_from_item(i).ok());
                FinishResult::TakenOver {
                    status: cur.as_ref().map(|c| c.exec.status),
                    token: cur.as_ref().map(|c| c.exec.fencing_token),
                }
            }
        })
    }

    /// The update of [`ExecStore::await_children`].
    pub(crate) fn await_children_expr(
        key: &ExecKey,
        fence: &Fence,
        total: u32,
        next_look: i64,
        now: DateTime<Utc>,
    ) -> Expr {
        let code = Some(FAN_OUT_CODE.into());
        let t = Transition::by_worker(fence, ExecStatus::Waiting, now.timestamp_millis(), code);
        t.expr(
            |e| {
                e.set(attr::CHILDREN, n(total))
                    .set(attr::CHILD_RESULTS, AttributeValue::M(Default::default()))
                    .set(attr::OPEN_PK, s(keys::open_partition(keys::open_part(&key.tenant, &key.job_id))))
                    .set(attr::OPEN_DUE, n(next_look));
            },
            |e| {
                e.remove(attr::LEASE_UNTIL);
            },
        )
    }

    /// Records child `child`'s final `status` in its parent's tally, while the parent waits.
    /// Returns the parent as it is now, or `None` when it no longer waits (already complete,
    /// cancelled) or does not exist.
    pub async fn record_child(
        &self,
        child: &ExecKey,
        status: ExecStatus,
    ) -> Result<Option<Execution>, StoreError> {
        let Some(c) = &child.child else { return Ok(None) };
        let mut e = Expr::default();
        e.set_entry(attr::CHILD_RESULTS, &c.tag(), s(status.as_str()))
            .cond_eq(attr::STATUS, s(ExecStatus::Waiting.as_str()));
        match self.cas(&child.parent(), "UpdateItem(record child)", e).await? {
            Ok(item) => Ok(Some(items::execution_from_item(&item)?)),
            Err(_) => Ok(None),
        }
    }

    /// Counts child `child`'s final `status` on its waiting parent and, if it was the last,
    /// ends the parent (as `actor`) and frees the job's concurrency slot the parent held.
    /// Returns the parent's end if this call ended it.
    pub async fn count_child(
        &self,
        child: &ExecKey,
        status: ExecStatus,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<ParentEnd>, StoreError> {
        Ok(self.count_child_freeing(child, status, actor, now).await?.map(|(end, _)| end))
    }

    /// [`Self::count_child`], also returning the concurrency policy of the job whose slot the
    /// ended parent freed (so the caller can wake the next fire waiting for it).
    pub async fn count_child_freeing(
        &self,
        child: &ExecKey,
        status: ExecStatus,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<(ParentEnd, sundial_model::ConcurrencyPolicy)>, StoreError> {
        let Some(parent) = self.record_child(child, status).await? else { return Ok(None) };
        let Some(end) = parent.children.as_ref().and_then(sundial_model::children::verdict) else {
            return Ok(None);
        };
        let pkey = child.parent();
        if !self.complete_parent(&pkey, &parent, &end, actor, now).await? {
            return Ok(None);
        }
        if parent.definition.concurrency != sundial_model::ConcurrencyPolicy::Allow {
            super::slots::release_slot(self.client(), self.table(), &pkey).await?;
        }
        Ok(Some((end, parent.definition.concurrency)))
    }

    /// WAITING → the parent's end, once, if it still waits at `token`: the audit event, the
    /// error naming the children that did not succeed, the `attention` keys of a FAILED
    /// parent, and out of the `open` index. False if someone else ended it first.
    pub async fn complete_parent(
        &self,
        key: &ExecKey,
        parent: &Execution,
        end: &ParentEnd,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let e = Self::complete_parent_expr(key, parent, end, actor, now);
        Ok(self.cas(key, "UpdateItem(complete parent)", e).await?.is_ok())
    }

    /// The update of [`ExecStore::complete_parent`].
    pub(crate) fn complete_parent_expr(
        key: &ExecKey,
        parent: &Execution,
        end: &ParentEnd,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Expr {
        let to = end.status();
        let at = (ExecStatus::Waiting, parent.fencing_token, parent.attempt);
        let code = matches!(end, ParentEnd::Failed { .. }).then(|| CHILDREN_FAILED_CODE.to_string());
        let t = Transition::at_token(at, to, actor, now.timestamp_millis(), code);
        t.expr(
            |_| {},
            |e| {
                e.remove(attr::OPEN_PK).remove(attr::OPEN_DUE);
                if let ParentEnd::Failed { message, .. } = end {
                    e.set(attr::ERR_CODE, s(CHILDREN_FAILED_CODE))
                        .set(attr::ERR_MSG, s(truncate(message)))
                        .set(attr::ATT_PK, s(keys::attention_pk(&key.tenant, to.as_str())))
                        .set(attr::ATT_SK, s(keys::attention_sk(key.scheduled_ms, &key.job_id)));
                }
            },
        )
    }

    /// Every child of the fire `parent` (strongly consistent, all pages), in key order: shards
    /// by index, members by name.
    pub async fn children_of(&self, parent: &ExecKey) -> Result<Vec<Execution>, StoreError> {
        let mut e = Expr::new();
        e.key_eq(attr::PK, s(parent.pk()))
            .key_begins_with(attr::SK, &keys::children_sk_prefix(parent.scheduled_ms));
        let query = self.client().query().table_name(self.table()).expr(e).consistent_read(true);
        Pager::new(query, None, "Query(children)").all(items::execution_from_item).await
    }

    /// One page of the children of the fire `parent`, in key order, at most `limit` of them
    /// (DynamoDB's `Limit`: never more read), after the child `after` (`None`: from the first).
    /// The page's `next` is the last child read when more may follow.
    pub async fn children_page(
        &self,
        parent: &ExecKey,
        limit: i32,
        after: Option<&ChildKey>,
    ) -> Result<QueryPage<Execution, ChildKey>, StoreError> {
        let mut e = Expr::new();
        e.key_eq(attr::PK, s(parent.pk()))
            .key_begins_with(attr::SK, &keys::children_sk_prefix(parent.scheduled_ms));
        let start = after.map(|c| {
            HashMap::from([
                (attr::PK.to_string(), s(parent.pk())),
                (attr::SK.to_string(), s(keys::exec_child_sk(parent.scheduled_ms, c))),
            ])
        });
        let query =
            self.client().query().table_name(self.table()).expr(e).consistent_read(true).limit(limit.max(1));
        let page = one_page(query, start, "Query(children)").await?;
        let items = page.items.iter().map(items::execution_from_item).collect::<Result<Vec<_>, _>>()?;
        let next = page
            .last_key
            .and_then(|k| {
                k.get(attr::SK).and_then(|v| v.as_s().ok()).and_then(|sk| keys::parse_any_exec_sk(sk))
            })
            .and_then(|(_, child)| child);
        Ok(QueryPage { items, next })
    }

    /// The tally of a waiting parent recomputed from its children themselves (the
    /// reconciler's backstop): every final child's status. Writes nothing.
    pub fn tally_from(total: u32, children: &[Execution]) -> Tally {
        Tally {
            total,
            finished: children
                .iter()
                .filter(|c| c.status.is_terminal())
                .filter_map(|c| Some((c.child.as_ref()?.tag(), c.status)))
                .collect(),
        }
    }
}
