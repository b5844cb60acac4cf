//! Outcome events (docs/outcomes.md): an execution's outbox, and the job's outcome item
//! (`OUTCOMES`, next to its executions) that counts dead fires in a row, names the execution
//! that auto-paused the job and the one that recovered it.
//!
//! Every write here is idempotent, so a flush retried after a crash at any point repeats it
//! harmlessly: entries and dead fires are members of string sets (adding one twice keeps one,
//! deleting an absent one is no error), and the pause and the recovery are claimed once, by
//! execution id, so the claimant's retry finds its own name.

use super::{s, ExecKey, ExecStore};
use crate::error::{is_condition_failed, StoreError};
use crate::expr::{Cmp, Expr, WithExpr};
use crate::items::{attr, n, Item};
use aws_sdk_dynamodb::types::ReturnValue;
use sundial_model::keys;

/// Most dead fires a job's streak holds (more than any `autoPauseAfterDeadFires`).
pub const MAX_DEAD_STREAK: usize = 128;

/// A job's dead fires in a row, as a dead fire's flush left them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadFire {
    /// Dead fires since the job's last success (this one included).
    pub in_a_row: usize,
    /// The execution whose dead fire paused the job in this streak, if one did.
    pub auto_paused_by: Option<String>,
}

/// Who ended a job's last streak of dead fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// How many dead fires it ended.
    pub after: usize,
}

fn set_len(item: &Item, a: &str) -> usize {
    item.get(a).and_then(|v| v.as_ss().ok()).map_or(0, |v| v.len())
}

fn string(item: &Item, a: &str) -> Option<String> {
    item.get(a).and_then(|v| v.as_s().ok()).cloned()
}

impl ExecStore {
    /// Deletes sent entries from `key`'s outbox (an execution gone meanwhile is no error).
    pub async fn outbox_sent(&self, key: &ExecKey, entries: &[String]) -> Result<(), StoreError> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut e = Expr::default();
        e.delete_strings(attr::OUTBOX, entries.to_vec()).cond_exists(attr::PK);
        match self.cas(key, "UpdateItem(outbox sent)", e).await? {
            Ok(_) | Err(_) => Ok(()),
        }
    }

    /// Replaces outbox members: adds `add`, then deletes `remove` (two writes: one update
    /// expression cannot both add to and delete from one set). A crash between them leaves both,
    /// which the flusher reads as one (docs/outcomes.md, "HTTPS notifications").
    pub async fn outbox_replace(
        &self,
        key: &ExecKey,
        add: &[String],
        remove: &[String],
    ) -> Result<(), StoreError> {
        if !add.is_empty() && !self.outbox_add(key, add).await? {
            return Ok(());
        }
        self.outbox_sent(key, remove).await
    }

    /// Gives up outbox entries (notifications that failed too often): deletes them with a
    /// `code` note by `actor` on `exec`'s timeline (an execution gone meanwhile is no error).
    pub async fn outbox_give_up(
        &self,
        key: &ExecKey,
        exec: &sundial_model::Execution,
        entries: &[String],
        actor: &str,
        code: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let ev = sundial_model::AuditEvent::note(exec, now_ms, actor, code);
        let mut e = Expr::default();
        if !entries.is_empty() {
            e.delete_strings(attr::OUTBOX, entries.to_vec());
        }
        e.append_event(&ev).cond_exists(attr::PK);
        let _gone = self.cas(key, "UpdateItem(outbox give up)", e).await?;
        Ok(())
    }

    /// Takes `key`'s outbox for one flush until `now_ms` + [`super::OUTBOX_LEASE_MS`]: false
    /// if it is empty or another flusher holds it (two reconcilers, a reconciler and a
    /// worker, never send one entry at once).
    pub async fn claim_outbox(&self, key: &ExecKey, now_ms: i64) -> Result<bool, StoreError> {
        let mut e = Expr::default();
        e.set(attr::OUTBOX_LEASE, n(now_ms + super::OUTBOX_LEASE_MS))
            .cond_exists(attr::OUTBOX)
            .cond_absent_or(attr::OUTBOX_LEASE, Cmp::Lt, n(now_ms));
        Ok(self.cas(key, "UpdateItem(outbox claim)", e).await?.is_ok())
    }

    /// Gives `key`'s outbox back (a flush that failed): the next flusher need not wait for the
    /// lease to run out.
    pub async fn release_outbox(&self, key: &ExecKey) -> Result<(), StoreError> {
        let mut e = Expr::default();
        e.remove(attr::OUTBOX_LEASE).cond_exists(attr::PK);
        let _gone = self.cas(key, "UpdateItem(outbox release)", e).await?;
        Ok(())
    }

    /// Adds entries to `key`'s outbox (a job-level event a flush raised, such as the auto-pause):
    /// false if the execution is gone.
    pub async fn outbox_add(&self, key: &ExecKey, entries: &[String]) -> Result<bool, StoreError> {
        let mut e = Expr::default();
        e.add_strings(attr::OUTBOX, entries.to_vec()).cond_exists(attr::PK);
        Ok(self.cas(key, "UpdateItem(outbox add)", e).await?.is_ok())
    }

    async fn update_outcomes(
        &self,
        tenant: &str,
        job_id: &str,
        op: &'static str,
        e: Expr,
        returns: ReturnValue,
    ) -> Result<Result<Item, ()>, StoreError> {
        let req = self
            .ddb
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(keys::job_pk(tenant, job_id)))
            .key(attr::SK, s(keys::JOB_OUTCOMES_SK))
            .return_values(returns);
        match req.expr(e).send().await {
            Ok(out) => Ok(Ok(out.attributes.unwrap_or_default())),
            Err(err) if is_condition_failed(&err) => Ok(Err(())),
            Err(err) => Err(StoreError::from_sdk(op, err)),
        }
    }

    /// The job's outcome item (empty when the job never had a dead fire), read strongly
    /// consistent or not, whole or only `projection`.
    async fn outcomes_item_with(
        &self,
        tenant: &str,
        job_id: &str,
        consistent: bool,
        projection: Option<&str>,
    ) -> Result<Item, StoreError> {
        let mut req = self
            .ddb
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, s(keys::job_pk(tenant, job_id)))
            .key(attr::SK, s(keys::JOB_OUTCOMES_SK))
            .consistent_read(consistent);
        if let Some(a) = projection {
            req = req.projection_expression("#p").expression_attribute_names("#p", a);
        }
        let out = req.send().await.map_err(|e| StoreError::from_sdk("GetItem(outcomes)", e))?;
        Ok(out.item.unwrap_or_default())
    }

    async fn outcomes_item(&self, tenant: &str, job_id: &str) -> Result<Item, StoreError> {
        self.outcomes_item_with(tenant, job_id, true, None).await
    }

    /// Dead fires since the job's last success, read eventually consistent (half a read unit):
    /// a worker reads it before a success's finish to know whether the success is a recovery. A
    /// dead fire written in the last second may not be seen yet: then the job's next success is
    /// the recovery (its streak is still there), never a second one.
    pub async fn dead_in_a_row(&self, tenant: &str, job_id: &str) -> Result<usize, StoreError> {
        let item = self.outcomes_item_with(tenant, job_id, false, Some(attr::DEAD_STREAK)).await?;
        Ok(set_len(&item, attr::DEAD_STREAK))
    }

    /// The execution whose dead fire paused the job (`autoPauseAfterDeadFires`), if the
    /// current streak paused it: an owner's resume resets the streak, and with it this.
    pub async fn auto_paused_by(&self, tenant: &str, job_id: &str) -> Result<Option<String>, StoreError> {
        let item = self.outcomes_item_with(tenant, job_id, true, Some(attr::AUTO_PAUSED_BY)).await?;
        Ok(string(&item, attr::AUTO_PAUSED_BY))
    }

    /// Counts the dead fire `execution_id` (its id is added to a set: a second add counts it
    /// once). The set holds at most [`MAX_DEAD_STREAK`] ids: past that the streak counts as
    /// that many, and the item stays small however long a job keeps dying.
    pub async fn add_dead_fire(
        &self,
        tenant: &str,
        job_id: &str,
        execution_id: &str,
    ) -> Result<DeadFire, StoreError> {
        let mut e = Expr::default();
        e.add_strings(attr::DEAD_STREAK, vec![execution_id.to_string()]).cond_set_room(
            attr::DEAD_STREAK,
            MAX_DEAD_STREAK,
            execution_id,
        );
        let item = match self
            .update_outcomes(tenant, job_id, "UpdateItem(dead fire)", e, ReturnValue::AllNew)
            .await?
        {
            Ok(item) => item,
            Err(()) => self.outcomes_item(tenant, job_id).await?,
        };
        Ok(DeadFire {
            in_a_row: set_len(&item, attr::DEAD_STREAK),
            auto_paused_by: string(&item, attr::AUTO_PAUSED_BY),
        })
    }

    /// Claims the streak's auto-pause for `execution_id`: true if it is this execution's (now
    /// or already), false if another dead fire of the streak claimed it.
    pub async fn claim_auto_pause(
        &self,
        tenant: &str,
        job_id: &str,
        execution_id: &str,
    ) -> Result<bool, StoreError> {
        let mut e = Expr::default();
        e.set(attr::AUTO_PAUSED_BY, s(execution_id)).cond_absent_or(
            attr::AUTO_PAUSED_BY,
            Cmp::Eq,
            s(execution_id),
        );
        let r = self.update_outcomes(tenant, job_id, "UpdateItem(auto-pause)", e, ReturnValue::None).await?;
        Ok(r.is_ok())
    }

    /// Ends the job's streak of dead fires with the success `execution_id`: `Some` if this
    /// success is the recovery (now, or already: a retried flush finds its own name), `None`
    /// when there was no streak or another success ended it.
    pub async fn claim_recovery(
        &self,
        tenant: &str,
        job_id: &str,
        execution_id: &str,
    ) -> Result<Option<Recovery>, StoreError> {
        for _ in 0..3 {
            let item = self.outcomes_item(tenant, job_id).await?;
            if string(&item, attr::RECOVERED_BY).as_deref() == Some(execution_id) {
                let after = item
                    .get(attr::RECOVERED_AFTER)
                    .and_then(|v| v.as_n().ok())
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                return Ok(Some(Recovery { after }));
            }
            let dead = set_len(&item, attr::DEAD_STREAK);
            if dead == 0 {
                return Ok(None);
            }
            let mut e = Expr::default();
            e.set(attr::RECOVERED_BY, s(execution_id))
                .set(attr::RECOVERED_AFTER, n(dead))
                .remove(attr::DEAD_STREAK)
                .remove(attr::AUTO_PAUSED_BY)
                .cond_exists(attr::DEAD_STREAK);
            if self
                .update_outcomes(tenant, job_id, "UpdateItem(recovery)", e, ReturnValue::None)
                .await?
                .is_ok()
            {
                return Ok(Some(Recovery { after: dead }));
            }
        }
        Ok(None)
    }

    /// Starts the job's count of dead fires over (a resume): the next dead fire is the first of
    /// a new streak, which may auto-pause the job again.
    pub async fn reset_dead_fires(&self, tenant: &str, job_id: &str) -> Result<(), StoreError> {
        let mut e = Expr::default();
        e.remove(attr::DEAD_STREAK).remove(attr::AUTO_PAUSED_BY).cond_exists(attr::PK);
        // No outcome item (the job never had a dead fire): nothing to reset.
        let _absent = self
            .update_outcomes(tenant, job_id, "UpdateItem(reset dead fires)", e, ReturnValue::None)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_set_counts_zero() {
        let mut item = Item::new();
        assert_eq!(set_len(&item, attr::DEAD_STREAK), 0);
        item.insert(
            attr::DEAD_STREAK.into(),
            aws_sdk_dynamodb::types::AttributeValue::Ss(vec!["a".into(), "b".into()]),
        );
        assert_eq!(set_len(&item, attr::DEAD_STREAK), 2);
    }
}
