//! A job's run count (`maxRuns`, docs/schedule.md, "A run-count limit"): the `RUNS` item next
//! to its executions counts the scheduled fires the trigger created. Each fire of a job with a
//! limit is put in one transaction with the count's conditional increment, so a fire is
//! counted exactly when it is created: a re-put after a crash finds the fire there and counts
//! nothing, and a fire past the limit is never created.

use super::{s, ExecKey, ExecStore, PutOutcome};
use crate::error::StoreError;
use crate::expr::{Cmp, Expr, WithExpr};
use crate::items::{self, attr};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use sundial_model::{keys, ExecStatus, Execution};

/// What a counted put did.
#[derive(Debug, Clone, PartialEq)]
pub enum CountedPut {
    /// Created (and counted), or found there (and not counted again).
    Put(PutOutcome),
    /// Not created: the job's limit is reached (its count is at `maxRuns`).
    Limit,
}

fn permanent(e: impl std::fmt::Display) -> StoreError {
    StoreError::Permanent { op: "TransactWriteItems(counted put)", message: e.to_string() }
}

impl ExecStore {
    /// Creates the fire's execution unless it exists, counting it against `max_runs` in the
    /// same transaction: created only while the job's count is below `max_runs`.
    pub async fn put_counted(
        &self,
        e: &Execution,
        indexed: bool,
        max_runs: u64,
    ) -> Result<CountedPut, StoreError> {
        let mut absent = Expr::new();
        absent.cond_not_exists(attr::PK);
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(super::read_write::new_item(e, indexed)))
            .expr(absent)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(permanent)?;
        let mut count = Expr::new();
        let below =
            if sundial_mutants::active(sundial_mutants::Mutant::MaxRunsOffByOne) { Cmp::Le } else { Cmp::Lt };
        count.add(attr::RUN_COUNT, 1).cond_absent_or(
            attr::RUN_COUNT,
            below,
            AttributeValue::N(max_runs.to_string()),
        );
        let update = Update::builder()
            .table_name(&self.table)
            .key(attr::PK, s(keys::job_pk(&e.tenant, &e.job_id)))
            .key(attr::SK, s(keys::JOB_RUNS_SK))
            .expr(count)
            .build()
            .map_err(permanent)?;
        let res = self
            .ddb
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().put(put).build())
            .transact_items(TransactWriteItem::builder().update(update).build())
            .send()
            .await;
        let err = match res {
            Ok(_) => return Ok(CountedPut::Put(PutOutcome::Created)),
            Err(err) => err,
        };
        let reasons = match err.as_service_error() {
            Some(TransactWriteItemsError::TransactionCanceledException(c)) => {
                c.cancellation_reasons().to_vec()
            }
            _ => return Err(StoreError::from_sdk("TransactWriteItems(counted put)", err)),
        };
        let failed = |i: usize| reasons.get(i).and_then(|r| r.code()) == Some("ConditionalCheckFailed");
        if failed(0) {
            // The fire is there already (whatever the count says): not counted again.
            let old = match reasons[0].item() {
                Some(i) if !i.is_empty() => i.clone(),
                // Not every server returns the old item: read it.
                _ => self.get_item(&ExecKey::of(e), true).await?.unwrap_or_default(),
            };
            return Ok(CountedPut::Put(PutOutcome::Exists(
                items::status_of(&old).unwrap_or(ExecStatus::Ready),
            )));
        }
        if failed(1) {
            return Ok(CountedPut::Limit);
        }
        // Cancelled for another reason (a concurrent transaction on one of the items): transient.
        let codes: Vec<&str> = reasons.iter().map(|r| r.code().unwrap_or("None")).collect();
        Err(StoreError::Transient {
            op: "TransactWriteItems(counted put)",
            message: format!("transaction cancelled: {}", codes.join(", ")),
        })
    }

    /// How many scheduled fires the trigger created for the job (0 when it has no limit or no
    /// fire yet), read strongly consistent or not.
    pub async fn runs(&self, tenant: &str, job_id: &str, consistent: bool) -> Result<u64, StoreError> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, s(keys::job_pk(tenant, job_id)))
            .key(attr::SK, s(keys::JOB_RUNS_SK))
            .consistent_read(consistent)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("GetItem(runs)", e))?;
        Ok(out
            .item
            .and_then(|i| i.get(attr::RUN_COUNT).and_then(|v| v.as_n().ok()).and_then(|n| n.parse().ok()))
            .unwrap_or(0))
    }
}
