//! The claim (docs/execution.md §2): READY or RETRY_WAIT once available, or RUNNING whose lease
//! expired, moves to RUNNING with a new lease and `tok + 1`, by compare-and-set.

use super::{s, ClaimOutcome, Claimed, ExecKey, ExecStore, Snapshot};
use crate::error::StoreError;
use crate::expr::{Cmp, Expr};
use crate::items::{self, attr, n};
use crate::transition::{Guard, Transition};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use sundial_model::claim::{next_step, Fence, LeaseTerms, Step};
use sundial_model::retry::codes;
use sundial_model::ExecStatus;

/// What one round of the claim loop leads to.
enum Round {
    /// Done: this is the outcome.
    Done(ClaimOutcome),
    /// Lost a race (or read a stale item): go again from this snapshot.
    Again(Box<Option<Snapshot>>),
}

impl ExecStore {
    /// Claims an execution for `owner` (docs/execution.md §2): READY or RETRY_WAIT once available,
    /// or RUNNING whose lease expired, moves to RUNNING with a new lease and `tok + 1`. A cancel
    /// requested on an execution nobody runs is completed here (→ CANCELED) instead.
    pub async fn claim(
        &self,
        key: &ExecKey,
        owner: &str,
        terms: &LeaseTerms,
        now: DateTime<Utc>,
    ) -> Result<ClaimOutcome, StoreError> {
        // An eventually consistent read is enough to aim the CAS; the CAS is the authority.
        let snap = self.get(key, false).await?;
        self.claim_from(key, snap, owner, terms, now).await
    }

    /// [`ExecStore::claim`] starting from an already-read snapshot.
    pub async fn claim_from(
        &self,
        key: &ExecKey,
        mut snap: Option<Snapshot>,
        owner: &str,
        terms: &LeaseTerms,
        now: DateTime<Utc>,
    ) -> Result<ClaimOutcome, StoreError> {
        let now_ms = now.timestamp_millis();
        let mut confirmed = false;
        for _ in 0..5 {
            let Some(cur) = snap.take() else {
                // A stale read may miss a just-created item: confirm before calling it missing.
                if confirmed {
                    return Ok(ClaimOutcome::Missing);
                }
                confirmed = true;
                snap = self.get(key, true).await?;
                continue;
            };
            let step = next_step(&cur.exec, terms, now_ms);
            if let Step::Finished(st) = step {
                // Final statuses are final, except an audited DLQ replay (DEAD → READY):
                // confirm a stale "final" before anyone deletes the message on its word.
                if confirmed {
                    return Ok(ClaimOutcome::Finished(st));
                }
                confirmed = true;
                snap = self.get(key, true).await?;
                continue;
            }
            match self.claim_round(key, &cur, step, owner, terms, now_ms).await? {
                Round::Done(out) => return Ok(out),
                Round::Again(next) => snap = *next,
            }
        }
        // Lost the race five times in a row: let the message come back shortly.
        Ok(ClaimOutcome::Held { expires_at: now_ms + 1_000 })
    }

    /// One round of the claim loop on `cur`, for every step but [`Step::Finished`] (which the
    /// loop confirms by a consistent read).
    async fn claim_round(
        &self,
        key: &ExecKey,
        cur: &Snapshot,
        step: Step,
        owner: &str,
        terms: &LeaseTerms,
        now_ms: i64,
    ) -> Result<Round, StoreError> {
        let decode = |old: Option<items::Item>| old.as_ref().map(items::snapshot_from_item).transpose();
        Ok(match step {
            Step::Claim { from, token, attempt } => {
                let lease_until = now_ms + terms.duration_ms;
                let raise = u64::from(!sundial_mutants::active(sundial_mutants::Mutant::ClaimReusesToken));
                let fence = Fence {
                    owner: owner.to_string(),
                    token: token + raise,
                    attempt: attempt + 1,
                    indexed: cur.open_due.is_some(),
                };
                let e = Self::claim_expr(&fence, (from, token), lease_until, now_ms, terms);
                match self.cas(key, "UpdateItem(claim)", e).await? {
                    Ok(item) => {
                        let snapshot = items::snapshot_from_item(&item)?;
                        let takeover = from == ExecStatus::Running;
                        let claimed = Claimed { snapshot, fence, from, takeover, lease_until };
                        Round::Done(ClaimOutcome::Claimed(Box::new(claimed)))
                    }
                    Err(old) => Round::Again(Box::new(decode(old)?)),
                }
            }
            Step::Cancel { from, token, attempt } => {
                let actor = format!("worker:{owner}");
                let deadline = sundial_model::reconcile::finish_deadline(&cur.exec);
                match self.cas_cancel(key, (from, token, attempt), deadline, &actor, now_ms).await? {
                    Ok(_) => Round::Done(ClaimOutcome::Finished(ExecStatus::Canceled)),
                    Err(old) => Round::Again(Box::new(decode(old)?)),
                }
            }
            Step::NotYet(at) => Round::Done(ClaimOutcome::NotYet { available_at: at }),
            Step::Held(at) => Round::Done(ClaimOutcome::Held { expires_at: at }),
            Step::Finished(st) => Round::Done(ClaimOutcome::Finished(st)),
        })
    }

    /// The claim's update: `from` (at `token`) → RUNNING held by `fence` until `lease_until`,
    /// unless a cancel was requested; a takeover only once the lease expired by `terms`' skew
    /// margin, else only once available.
    pub(crate) fn claim_expr(
        fence: &Fence,
        (from, token): (ExecStatus, u64),
        lease_until: i64,
        now_ms: i64,
        terms: &LeaseTerms,
    ) -> Expr {
        let takeover = from == ExecStatus::Running;
        let t = Transition {
            from,
            to: ExecStatus::Running,
            guard: Guard::Token(token),
            at: now_ms,
            actor: format!("worker:{}", fence.owner),
            attempt: fence.attempt,
            token: fence.token,
            code: takeover.then(|| codes::LEASE_EXPIRED.to_string()),
        };
        let mut e = t.expr(
            |e| {
                e.set(attr::LEASE_OWNER, s(&fence.owner))
                    .set(attr::LEASE_UNTIL, n(lease_until))
                    .set(attr::TOKEN, n(fence.token))
                    .set(attr::ATTEMPT, n(fence.attempt));
            },
            |_| {},
        );
        e.cond_absent_or(attr::CANCEL, Cmp::Eq, AttributeValue::Bool(false));
        if from.needs_attention() {
            e.remove(attr::ATT_PK).remove(attr::ATT_SK);
        }
        if takeover && sundial_mutants::active(sundial_mutants::Mutant::TakeoverLiveLease) {
            // Planted: no lease condition.
        } else if takeover {
            let exp = now_ms - terms.skew_margin_ms;
            e.cond_cmp(attr::LEASE_UNTIL, Cmp::Lt, n(exp));
        } else {
            e.cond_cmp(attr::AVAILABLE, Cmp::Le, n(now_ms));
        }
        e
    }
}
