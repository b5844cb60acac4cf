//! How an attempt ends: the lease holder's fenced finish (RUNNING → SUCCEEDED, RETRY_WAIT,
//! FAILED, DEAD or CANCELED), with its audit event and its error, in one write.

use super::{s, truncate, ExecKey, ExecStore, FinishResult};
use crate::error::StoreError;
use crate::expr::Expr;
use crate::items::{self, attr, n};
use crate::transition::Transition;
use chrono::{DateTime, Utc};
use sundial_model::claim::{Fence, Finish};
use sundial_model::keys;
use sundial_model::retry::codes;

impl ExecStore {
    /// Records how an attempt ended, if `fence` still holds the execution.
    pub async fn finish(
        &self,
        key: &ExecKey,
        fence: &Fence,
        finish: &Finish,
        now: DateTime<Utc>,
    ) -> Result<FinishResult, StoreError> {
        Ok(self.finish_with(key, fence, finish, &[], false, now).await?.0)
    }

    /// [`ExecStore::finish`], returning also the executions waiting for this one as an
    /// upstream ([`super::downstream_of`] of the item as written; empty unless recorded), and
    /// putting `outbox` (encoded [`sundial_model::outcome::OutboxEntry`]s, none for `&[]`) on
    /// the item in the same write: the events
    /// this transition makes due (docs/outcomes.md). A final execution with entries stays in
    /// the `open` index, due a grace from now, so the reconciler sends what the caller's own
    /// flush does not. `late`: the fire finishes past its finish deadline; it stays in the
    /// index, due now, so the reconciler reports the miss if it did not already.
    pub async fn finish_with(
        &self,
        key: &ExecKey,
        fence: &Fence,
        finish: &Finish,
        outbox: &[String],
        late: bool,
        now: DateTime<Utc>,
    ) -> Result<(FinishResult, Vec<String>), StoreError> {
        let e = Self::finish_expr_with(key, fence, finish, outbox, late, now);
        Ok(match self.cas(key, "UpdateItem(finish)", e).await? {
            Ok(new) => (FinishResult::Done, super::downstream_of(&new)),
            Err(old) => {
                let cur = old.as_ref().and_then(|i| items::snapshot_from_item(i).ok());
                let taken = FinishResult::TakenOver {
                    status: cur.as_ref().map(|c| c.exec.status),
                    token: cur.as_ref().map(|c| c.exec.fencing_token),
                };
                (taken, Vec::new())
            }
        })
    }

    /// The fenced update of [`ExecStore::finish`] (also a map-reduce item's, in a transaction).
    pub(crate) fn finish_expr(key: &ExecKey, fence: &Fence, finish: &Finish, now: DateTime<Utc>) -> Expr {
        Self::finish_expr_with(key, fence, finish, &[], false, now)
    }

    /// [`ExecStore::finish_expr`] with outbox entries ([`ExecStore::finish_with`]).
    pub(crate) fn finish_expr_with(
        key: &ExecKey,
        fence: &Fence,
        finish: &Finish,
        outbox: &[String],
        late: bool,
        now: DateTime<Utc>,
    ) -> Expr {
        let to = finish.status();
        let t = Transition::by_worker(fence, to, now.timestamp_millis(), finish_code(finish));
        t.expr(
            |_| {},
            |e| {
                e.remove(attr::LEASE_UNTIL);
                if to.is_terminal() && (!outbox.is_empty() || late) {
                    // Its events are not sent yet: the reconciler looks a grace from now (at
                    // once for a late finish, whose miss it reports if nobody did).
                    if !fence.indexed {
                        e.set(
                            attr::OPEN_PK,
                            s(keys::open_partition(keys::open_part(&key.tenant, &key.job_id))),
                        );
                    }
                    let wait = if late { 0 } else { sundial_model::reconcile::GRACE_MS };
                    e.set(attr::OPEN_DUE, n(now.timestamp_millis() + wait));
                } else if to.is_terminal() && fence.indexed {
                    e.remove(attr::OPEN_PK).remove(attr::OPEN_DUE);
                }
                if !outbox.is_empty() {
                    // The writer flushes right after: it holds the outbox meanwhile.
                    e.add_strings(attr::OUTBOX, outbox.to_vec())
                        .set(attr::OUTBOX_LEASE, n(now.timestamp_millis() + super::OUTBOX_LEASE_MS));
                }
                if to.needs_attention() {
                    e.set(attr::ATT_PK, s(keys::attention_pk(&key.tenant, to.as_str())))
                        .set(attr::ATT_SK, s(keys::attention_sk(key.scheduled_ms, &key.job_id)));
                }
                finish_fields(e, key, fence, finish);
                if let Some(t) = succeeded_expiry(key, finish, now) {
                    e.set(attr::EXPIRES, n(t));
                }
            },
        )
    }
}

/// The shorter retention tier of a fire that succeeded ([`super::SUCCEEDED_RETENTION_SECS`]
/// after its finish): `None` for any other end, and for a child execution.
pub(crate) fn succeeded_expiry(key: &ExecKey, finish: &Finish, now: DateTime<Utc>) -> Option<i64> {
    (matches!(finish, Finish::Succeeded) && key.child.is_none())
        .then(|| now.timestamp() + super::SUCCEEDED_RETENTION_SECS)
}

/// The code of a finish's audit event.
fn finish_code(finish: &Finish) -> Option<String> {
    match finish {
        Finish::Succeeded => None,
        Finish::RetryWait { error, .. } | Finish::Failed { error } => Some(error.code.clone()),
        Finish::Dead { reason, .. } => Some(reason.clone()),
        Finish::Canceled => Some(codes::CANCELED.to_string()),
    }
}

/// What each way of ending stores besides the status: the retry's instant and budget, the
/// error, a dead letter's input digest.
fn finish_fields(e: &mut Expr, key: &ExecKey, fence: &Fence, finish: &Finish) {
    match finish {
        Finish::Succeeded => {}
        Finish::RetryWait { available_at, error, total_run_ms } => {
            // A retry waits on a delayed message only: the reconciler must know about it.
            if !fence.indexed {
                e.set(attr::OPEN_PK, s(keys::open_partition(keys::open_part(&key.tenant, &key.job_id))));
            }
            e.set(attr::AVAILABLE, n(*available_at))
                .set(attr::OPEN_DUE, n(available_at + sundial_model::reconcile::GRACE_MS))
                .set(attr::ERR_CODE, s(&error.code))
                .set(attr::ERR_MSG, s(truncate(&error.message)))
                .set(attr::RUN_MS, n(*total_run_ms));
        }
        Finish::Failed { error } => {
            e.set(attr::ERR_CODE, s(&error.code)).set(attr::ERR_MSG, s(truncate(&error.message)));
        }
        Finish::Dead { reason, error, digest } => {
            e.set(attr::ERR_CODE, s(&error.code))
                .set(attr::ERR_MSG, s(truncate(&format!("{reason}: {}", error.message))))
                .set(attr::DIGEST, s(digest));
        }
        Finish::Canceled => {
            e.set(attr::ERR_CODE, s(codes::CANCELED));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use sundial_model::children::ChildKey;
    use sundial_model::retry::{ErrorClass, RunError};

    #[test]
    fn only_a_fire_that_succeeded_gets_the_short_retention() {
        let now = Utc.timestamp_opt(1_800_000_000, 0).unwrap();
        let fire = ExecKey::new("acme", "nightly", 1_799_999_999_000);
        let week = now.timestamp() + 7 * 86_400;
        assert_eq!(succeeded_expiry(&fire, &Finish::Succeeded, now), Some(week));
        let error = RunError { class: ErrorClass::Permanent, code: "Http400".into(), message: "no".into() };
        for other in [Finish::Failed { error }, Finish::Canceled] {
            assert_eq!(succeeded_expiry(&fire, &other, now), None, "{other:?}");
        }
        let mut child = fire.clone();
        child.child = Some(ChildKey::Item("3".into()));
        assert_eq!(succeeded_expiry(&child, &Finish::Succeeded, now), None);
    }
}
