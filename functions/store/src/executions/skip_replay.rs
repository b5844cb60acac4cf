//! Two audited moves of the control plane and the trigger: READY → SKIPPED (the FORBID
//! policy) and DEAD → READY (the replay of a dead letter).

use super::{s, truncate, ExecKey, ExecStore};
use crate::error::StoreError;
use crate::expr::{Cmp, Expr};
use crate::items::{attr, n};
use crate::transition::Transition;
use chrono::{DateTime, Utc};
use sundial_model::keys;
use sundial_model::retry::codes;
use sundial_model::{ExecStatus, Execution};

impl ExecStore {
    /// READY → SKIPPED (the FORBID policy), with the reason. False if it was no longer READY.
    pub async fn skip(
        &self,
        key: &ExecKey,
        current: &Execution,
        actor: &str,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        Ok(self.skip_with(key, current, actor, codes::FORBID_OVERLAP, reason, now).await?.is_some())
    }

    /// READY → SKIPPED with `code` (the FORBID policy's, or `DependencyNotMet`) and the
    /// reason: the executions waiting for this one as an upstream ([`super::downstream_of`]),
    /// or `None` if it was no longer READY.
    pub async fn skip_with(
        &self,
        key: &ExecKey,
        current: &Execution,
        actor: &str,
        code: &str,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<Vec<String>>, StoreError> {
        let e = Self::skip_expr_with(current, actor, code, reason, now);
        Ok(self.cas(key, "UpdateItem(skip)", e).await?.ok().map(|new| super::downstream_of(&new)))
    }

    /// The update of [`ExecStore::skip`].
    #[cfg(test)]
    pub(crate) fn skip_expr(current: &Execution, actor: &str, reason: &str, now: DateTime<Utc>) -> Expr {
        Self::skip_expr_with(current, actor, codes::FORBID_OVERLAP, reason, now)
    }

    fn skip_expr_with(
        current: &Execution,
        actor: &str,
        code: &str,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Expr {
        let at = (ExecStatus::Ready, current.fencing_token, current.attempt);
        let now_ms = now.timestamp_millis();
        let t = Transition::at_token(at, ExecStatus::Skipped, actor, now_ms, Some(code.into()));
        // Skipped past its finish deadline: the reconciler looks at once and reports the miss,
        // unless it already did (docs/outcomes.md, "Finish deadlines"), as after a late finish.
        let late = sundial_model::reconcile::finish_deadline(current).is_some_and(|d| now_ms > d);
        let open_pk = keys::open_partition(keys::open_part(&current.tenant, &current.job_id));
        t.expr(
            |e| {
                e.set(attr::ERR_CODE, s(code)).set(attr::ERR_MSG, s(truncate(reason)));
            },
            |e| {
                if late {
                    e.set(attr::OPEN_PK, s(open_pk)).set(attr::OPEN_DUE, n(now_ms));
                } else {
                    e.remove(attr::OPEN_PK).remove(attr::OPEN_DUE);
                }
            },
        )
    }

    /// DEAD → READY, the audited replay of a dead letter: resets the attempt count and the
    /// run-time budget, clears the error, lease, cancel flag and `attention` keys, and appends
    /// the event (`actor`, `code`). The fencing token is kept: the next claim takes it one
    /// higher. A map-reduce item is taken back out of its parent's count in the same
    /// transaction ([`ExecStore::replay_item`]). False if it was no longer DEAD at `token`.
    pub async fn replay(
        &self,
        key: &ExecKey,
        token: u64,
        actor: &str,
        code: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let mut e = Self::replay_expr(key, token, actor, code, now);
        // The replay's own send counts as the first re-send (see [`ExecStore::take_resend`]).
        e.set(attr::RESENT, n(now.timestamp_millis()));
        // The replay's message (generation 0) starts the execution's only chain of copies.
        e.remove(attr::WAIT_GEN).remove(attr::WAIT_GEN_SENT);
        if matches!(key.child, Some(sundial_model::children::ChildKey::Item(_))) {
            // A map-reduce item leaves its parent's count in the same write (`docs/mapreduce.md`).
            return self.replay_item(key, e).await;
        }
        Ok(self.cas(key, "UpdateItem(replay)", e).await?.is_ok())
    }

    /// Takes the right to send a READY execution to its queue again (a repeated replay): one
    /// conditional write on the item's `rs` (last re-send, ms), which succeeds only while the
    /// execution is READY and was not (re-)sent by a replay in the last `gap_ms`. False: someone
    /// sent it recently (or it is not READY): send nothing.
    pub async fn take_resend(
        &self,
        key: &ExecKey,
        gap_ms: i64,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let now_ms = now.timestamp_millis();
        let mut e = Expr::new();
        e.set(attr::RESENT, n(now_ms)).cond_eq(attr::STATUS, s(ExecStatus::Ready.as_str())).cond_absent_or(
            attr::RESENT,
            Cmp::Le,
            n(now_ms - gap_ms),
        );
        Ok(self.cas(key, "UpdateItem(resend)", e).await?.is_ok())
    }

    /// Gives back what [`ExecStore::take_resend`] took when the send was then refused (its
    /// budget): the next replay may send at once. Best effort.
    pub async fn give_back_resend(&self, key: &ExecKey, now: DateTime<Utc>) -> Result<(), StoreError> {
        let mut e = Expr::new();
        e.remove(attr::RESENT).cond_eq(attr::RESENT, n(now.timestamp_millis()));
        // Lost the condition: someone sent it since, and the slot is theirs.
        let _ = self.cas(key, "UpdateItem(resend)", e).await?;
        Ok(())
    }

    /// The update of [`ExecStore::replay`].
    pub(crate) fn replay_expr(
        key: &ExecKey,
        token: u64,
        actor: &str,
        code: &str,
        now: DateTime<Utc>,
    ) -> Expr {
        let now_ms = now.timestamp_millis();
        let t = Transition::at_token(
            (ExecStatus::Dead, token, 0),
            ExecStatus::Ready,
            actor,
            now_ms,
            Some(code.into()),
        );
        t.expr(
            |e| {
                e.set(attr::ATTEMPT, n(0))
                    .set(attr::AVAILABLE, n(now_ms))
                    .set(attr::RUN_MS, n(0))
                    .set(attr::OPEN_PK, s(keys::open_partition(keys::open_part(&key.tenant, &key.job_id))))
                    .set(attr::OPEN_DUE, n(now_ms + sundial_model::reconcile::GRACE_MS));
            },
            |e| {
                for a in [
                    attr::ATT_PK,
                    attr::ATT_SK,
                    attr::ERR_CODE,
                    attr::ERR_MSG,
                    attr::LEASE_UNTIL,
                    attr::CANCEL,
                ] {
                    e.remove(a);
                }
            },
        )
    }
}
