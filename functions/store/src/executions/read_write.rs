//! The one read of an execution, its put-if-absent, and the conditional update every other
//! write goes through ([`ExecStore::cas`]).

use super::{s, CasResult, ExecKey, ExecStore, PutOutcome, Snapshot, EXECUTION_RETENTION_SECS};
use crate::error::{is_condition_failed, StoreError};
use crate::expr::{Expr, WithExpr};
use crate::items::{self, attr, Item};
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{ReturnValue, ReturnValuesOnConditionCheckFailure};
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use sundial_model::{ExecStatus, Execution};

impl ExecStore {
    /// Reads an execution (`consistent`: strongly consistent, one read unit instead of ½).
    pub async fn get(&self, key: &ExecKey, consistent: bool) -> Result<Option<Snapshot>, StoreError> {
        Ok(self.get_item(key, consistent).await?.as_ref().map(items::snapshot_from_item).transpose()?)
    }

    pub(crate) async fn get_item(&self, key: &ExecKey, consistent: bool) -> Result<Option<Item>, StoreError> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, s(key.pk()))
            .key(attr::SK, s(key.sk()))
            .consistent_read(consistent)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("GetItem", e))?;
        Ok(out.item)
    }

    /// Creates the execution unless one exists for the same (job, scheduled_at).
    pub async fn put_new(&self, e: &Execution) -> Result<PutOutcome, StoreError> {
        self.put(e, items::execution_to_item(e, EXECUTION_RETENTION_SECS)).await
    }

    /// [`ExecStore::put_new`] without the `open` index entry: for fires of every-minute and
    /// daily jobs, which the trigger's verification pass finds again (`trigger::verify`). Saves
    /// the index write at the put and the one at the final write.
    pub async fn put_new_unindexed(&self, e: &Execution) -> Result<PutOutcome, StoreError> {
        self.put(e, new_item(e, false)).await
    }

    async fn put(&self, e: &Execution, item: Item) -> Result<PutOutcome, StoreError> {
        let mut cond = Expr::new();
        if !sundial_mutants::active(sundial_mutants::Mutant::PutOverwrites) {
            cond.cond_not_exists(attr::PK);
        }
        let res = self
            .ddb
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .expr(cond)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match res {
            Ok(_) => Ok(PutOutcome::Created),
            Err(err) if is_condition_failed(&err) => {
                let old = match err.into_service_error() {
                    PutItemError::ConditionalCheckFailedException(c) => c.item,
                    _ => None,
                };
                let old = match old {
                    Some(i) => i,
                    // Not every server returns the old item: read it.
                    None => self.get_item(&ExecKey::of(e), true).await?.unwrap_or_default(),
                };
                Ok(PutOutcome::Exists(items::status_of(&old).unwrap_or(ExecStatus::Ready)))
            }
            Err(err) => Err(StoreError::from_sdk("PutItem", err)),
        }
    }

    /// The conditional update every write of an execution goes through: `Ok(new item)`, or
    /// `Err(the item as it was)` when the condition failed (no extra read: the service returns
    /// it). A failed condition whose item shows this very update (an earlier attempt landed and
    /// its response was lost, `crate::landed`) is `Ok` with that item.
    pub(crate) async fn cas(
        &self,
        key: &ExecKey,
        op: &'static str,
        e: Expr,
    ) -> Result<CasResult, StoreError> {
        let req = self
            .ddb
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(key.pk()))
            .key(attr::SK, s(key.sk()))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        let mut e = e;
        e.set(attr::WRITE_ID, s(crate::landed::write_id()));
        // Both boxed: every execution write's future (nested deep in a worker's) stays a few
        // pointers, not the SDK's whole send future and a copy of the expression (a debug
        // build's 2 MiB test threads overflowed when they were inline).
        let check = Box::new(e.clone());
        match Box::pin(req.expr(e).send()).await {
            Ok(out) => Ok(Ok(out.attributes.unwrap_or_default())),
            Err(err) if is_condition_failed(&err) => Ok(match old_item(err) {
                // Its own earlier attempt, whose response was lost (the SDK sent it again).
                Some(item) if check.landed(&item) => Ok(item),
                old => Err(old),
            }),
            Err(err) => Err(StoreError::from_sdk(op, err)),
        }
    }
}

/// A new execution's item, with its `open` index entry or without.
pub(super) fn new_item(e: &Execution, indexed: bool) -> Item {
    let mut item = items::execution_to_item(e, EXECUTION_RETENTION_SECS);
    if !indexed {
        item.remove(attr::OPEN_PK);
        item.remove(attr::OPEN_DUE);
    }
    item
}

fn old_item(err: SdkError<UpdateItemError, HttpResponse>) -> Option<Item> {
    match err.into_service_error() {
        UpdateItemError::ConditionalCheckFailedException(c) => c.item,
        _ => None,
    }
}
