//! Cancellation: the API's (or the REPLACE policy's) request, and the CAS that moves an
//! execution nobody runs to CANCELED (also a claim's, when it finds a cancel requested).

use super::{s, CancelOutcome, CasResult, ExecKey, ExecStore};
use crate::error::StoreError;
use crate::expr::Expr;
use crate::items::{attr, n};
use crate::transition::{Guard, Transition};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use sundial_model::children::ChildKey;
use sundial_model::keys;
use sundial_model::retry::codes;
use sundial_model::ExecStatus;

impl ExecStore {
    /// Requests cancellation (API, or the REPLACE policy): an execution nobody runs becomes
    /// CANCELED at once and will not run; a running one gets the `cx` flag its runner sees at the
    /// next heartbeat or checkpoint. A waiting parent (`docs/children.md`) becomes CANCELED
    /// and each of its children not final yet gets the same request.
    pub async fn request_cancel(
        &self,
        key: &ExecKey,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<CancelOutcome, StoreError> {
        let out = self.cancel_one(key, actor, now).await?;
        if out != CancelOutcome::Canceled {
            return Ok(out);
        }
        if key.child.is_some() {
            // A child cancelled alone counts on its parent now, not at the reconciler's look.
            // (A map-reduce item does not: its parent counts only finishes, and the reconciler
            // starts the reduce once every item is final, `docs/mapreduce.md`.)
            if !matches!(key.child, Some(ChildKey::Item(_))) {
                self.count_child(key, ExecStatus::Canceled, actor, now).await?;
            }
            return Ok(out);
        }
        for kid in self.children_of(key).await? {
            if !kid.status.is_terminal() {
                self.cancel_one(&ExecKey::of(&kid), actor, now).await?;
            }
        }
        Ok(out)
    }

    async fn cancel_one(
        &self,
        key: &ExecKey,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<CancelOutcome, StoreError> {
        let now_ms = now.timestamp_millis();
        for _ in 0..5 {
            let Some(cur) = self.get(key, true).await? else { return Ok(CancelOutcome::Missing) };
            let ex = &cur.exec;
            match ex.status {
                ExecStatus::Ready | ExecStatus::RetryWait | ExecStatus::Waiting => {
                    let deadline = sundial_model::reconcile::finish_deadline(ex);
                    if self
                        .cas_cancel(key, (ex.status, ex.fencing_token, ex.attempt), deadline, actor, now_ms)
                        .await?
                        .is_ok()
                    {
                        return Ok(CancelOutcome::Canceled);
                    }
                }
                ExecStatus::Running => {
                    let mut e = Expr::default();
                    e.set(attr::CANCEL, AttributeValue::Bool(true));
                    Guard::Token(ex.fencing_token).conditions(&mut e, ExecStatus::Running);
                    if self.cas(key, "UpdateItem(cancel-flag)", e).await?.is_ok() {
                        return Ok(CancelOutcome::Requested);
                    }
                }
                st => return Ok(CancelOutcome::AlreadyFinal(st)),
            }
        }
        Err(StoreError::Transient { op: "UpdateItem(cancel)", message: "lost the race five times".into() })
    }

    pub(super) async fn cas_cancel(
        &self,
        key: &ExecKey,
        at: (ExecStatus, u64, u32),
        deadline: Option<i64>,
        actor: &str,
        now_ms: i64,
    ) -> Result<CasResult, StoreError> {
        self.cas_cancel_with(key, at, codes::CANCELED, deadline, actor, now_ms).await
    }

    /// `from` → CANCELED with `code` if the execution is still at `(from, token)`: the audit
    /// event, the `attention` keys, and out of the lease and the `open` index, in one write.
    /// Past its finish deadline (`deadline`, [`sundial_model::reconcile::finish_deadline`]) it
    /// stays in the index, due at once, so the reconciler reports the miss unless it did.
    pub(crate) async fn cas_cancel_with(
        &self,
        key: &ExecKey,
        at: (ExecStatus, u64, u32),
        code: &str,
        deadline: Option<i64>,
        actor: &str,
        now_ms: i64,
    ) -> Result<CasResult, StoreError> {
        let e = Self::cancel_expr(key, at, code, deadline, actor, now_ms);
        self.cas(key, "UpdateItem(cancel)", e).await
    }

    /// The update of [`ExecStore::cas_cancel_with`].
    pub(crate) fn cancel_expr(
        key: &ExecKey,
        at: (ExecStatus, u64, u32),
        code: &str,
        deadline: Option<i64>,
        actor: &str,
        now_ms: i64,
    ) -> Expr {
        let t = Transition::at_token(at, ExecStatus::Canceled, actor, now_ms, Some(code.into()));
        let late = deadline.is_some_and(|d| now_ms > d);
        t.expr(
            |e| {
                e.set(attr::ERR_CODE, s(code))
                    .set(attr::ATT_PK, s(keys::attention_pk(&key.tenant, ExecStatus::Canceled.as_str())))
                    .set(attr::ATT_SK, s(keys::attention_sk(key.scheduled_ms, &key.job_id)));
            },
            |e| {
                e.remove(attr::LEASE_UNTIL);
                if late {
                    let part = keys::open_partition(keys::open_part(&key.tenant, &key.job_id));
                    e.set(attr::OPEN_PK, s(part)).set(attr::OPEN_DUE, n(now_ms));
                } else {
                    e.remove(attr::OPEN_PK).remove(attr::OPEN_DUE);
                }
            },
        )
    }
}
