//! # The DynamoDB adapter: the only module that calls the DynamoDB client
//!
//! The planes ([`crate::trigger`], [`crate::execution`], [`crate::control`]) and provisioning
//! call typed functions here and get typed outcomes back. Key formats come from
//! [`sundial_model::keys`], attribute names from the codec ([`items::attr`]), index names from
//! `resources.json` ([`items::index`]), and every expression from one builder ([`expr`]).
//!
//! Errors say whether to retry ([`StoreError::is_retryable`]); a failed condition is not an
//! error here but a typed outcome ([`executions::PutOutcome::Exists`], [`jobs::Advance::Lost`],
//! [`executions::ClaimOutcome::Held`], [`executions::FinishResult::TakenOver`],
//! [`slots::Take::Held`], ...), because under at-least-once delivery it is the normal way a
//! duplicate or a lost race is absorbed.
//!
//! ## Layout
//! - [`items`]: the item codec. Every attribute name ([`items::attr`]), index names, and the
//!   encoders and decoders of jobs, version snapshots, executions (as [`executions::Snapshot`]s),
//!   audit events, operations-log entries, slots, tenant gates and watermarks.
//! - [`expr`]: the one expression builder (`SET` / `REMOVE` / `list_append`, conditions, key
//!   conditions, filters, projections), always with `#name` / `:value` placeholders.
//! - `query` (internal): the one Query pager, following `LastEvaluatedKey` for every Query here.
//! - `transition` (internal): an execution's status change as one typed value (`SET st`, the
//!   audit event, the status and fencing conditions), rendered in one place.
//! - `versioned` (internal): the versioned, audited definition write of jobs and calendars.
//! - [`error`]: [`StoreError`] (transient or permanent, classified by the SDK's error code).
//! - [`jobs`]: job definition items and their version snapshots (create, read, the audited
//!   change transaction, TTL of old versions), the `by_tenant` listing and batch reads, and the
//!   trigger's `due` index reads and CAS advance. (Validation and construction are the model's:
//!   [`sundial_model::Job::new`].)
//! - [`executions`]: execution items: put-if-absent, the one read ([`executions::ExecStore::get`]),
//!   claim / heartbeat / checkpoint / release / finish / cancel / skip / replay CAS, and the
//!   Queries by job and by the `attention` index.
//! - [`open`]: the `open` index of executions not yet final, and the reconciler's writes
//!   (look again later, re-sent, close).
//! - [`queued`]: hold / release / amend / cancel of queued-ahead executions when their job
//!   changes.
//! - [`slots`]: job concurrency slots and tenant running gates (the decisions are
//!   [`crate::execution::policy`]'s).
//! - [`resources`]: platform-wide resource limits (their holder gates are [`slots`]' gates).
//! - [`calendars`]: business calendars: current item, version snapshots, the audited change.
//! - [`children`]: a sharded or broadcast fire's parent: its wait, its children's tally, its end.
//! - [`ops`]: the tenant's operations audit log.
//! - [`watermarks`]: shard watermarks of the trigger's scan.
//! - [`tables`]: table create / describe / TTL / list, for [`crate::provision`] and the CLI.
pub mod calendars;
pub mod children;
pub mod config;
pub mod error;
pub mod events;
pub mod executions;
pub mod expr;
pub mod idem;
pub mod items;
pub mod jobs;
mod landed;
pub mod mapreduce;
pub mod open;
pub mod ops;
mod query;
pub mod queue;
pub mod queued;
pub mod quota;
pub mod resource_limits;
pub mod slots;
pub mod tables;
pub mod throughput;
mod transition;
#[cfg(test)]
mod transition_shapes;
mod versioned;
pub mod watermarks;

pub use error::StoreError;

use error::is_condition_failed;
use expr::{Expr, WithExpr};
use items::{attr, Item};

/// Reads one item by its key, strongly consistent (`None`: no such item). The small items the
/// compare-and-set protocols read before they write (slots, tenant gates, watermarks) use this.
async fn get_consistent(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    (pk, sk): (String, &str),
    op: &'static str,
) -> Result<Option<Item>, StoreError> {
    let out = ddb
        .get_item()
        .table_name(table)
        .key(attr::PK, aws_sdk_dynamodb::types::AttributeValue::S(pk))
        .key(attr::SK, aws_sdk_dynamodb::types::AttributeValue::S(sk.to_string()))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| StoreError::from_sdk(op, e))?;
    Ok(out.item)
}

/// A conditional `UpdateItem` of one item: `Ok(true)` when written, `Ok(false)` when its
/// condition failed (someone else got there first: an outcome, not an error).
async fn update_if(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    (pk, sk): (String, &str),
    e: Expr,
    op: &'static str,
) -> Result<bool, StoreError> {
    let res = ddb
        .update_item()
        .table_name(table)
        .key(attr::PK, aws_sdk_dynamodb::types::AttributeValue::S(pk))
        .key(attr::SK, aws_sdk_dynamodb::types::AttributeValue::S(sk.to_string()))
        .expr(e)
        .send()
        .await;
    match res {
        Ok(_) => Ok(true),
        Err(e) if is_condition_failed(&e) => Ok(false),
        Err(e) => Err(StoreError::from_sdk(op, e)),
    }
}

/// One page of a Query: the items, and where the next page starts when more may follow.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryPage<T, C> {
    /// The items, in the Query's order.
    pub items: Vec<T>,
    /// The position to continue after (`None` on the last page).
    pub next: Option<C>,
}

/// Every item of `keys` that exists in `table`: BatchGetItem, 100 keys a call, unprocessed keys
/// retried with a short backoff up to 8 rounds, then a transient error; in no particular order.
async fn batch_get(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    keys: Vec<Item>,
    consistent: bool,
    op: &'static str,
) -> Result<Vec<Item>, StoreError> {
    let mut found = Vec::with_capacity(keys.len());
    for chunk in keys.chunks(100) {
        let mut request: Vec<Item> = chunk.to_vec();
        for round in 0..8u32 {
            if request.is_empty() {
                break;
            }
            let ka = aws_sdk_dynamodb::types::KeysAndAttributes::builder()
                .set_keys(Some(std::mem::take(&mut request)))
                .consistent_read(consistent)
                .build()
                .map_err(|e| StoreError::Permanent { op, message: e.to_string() })?;
            let out = ddb
                .batch_get_item()
                .request_items(table, ka)
                .send()
                .await
                .map_err(|e| StoreError::from_sdk(op, e))?;
            found.extend(out.responses().and_then(|r| r.get(table)).into_iter().flatten().cloned());
            request = out
                .unprocessed_keys()
                .and_then(|u| u.get(table))
                .map(|ka| ka.keys().to_vec())
                .unwrap_or_default();
            if !request.is_empty() {
                tokio::time::sleep(std::time::Duration::from_millis(20 << round.min(5))).await;
            }
        }
        if !request.is_empty() {
            let message = format!("{} keys still unprocessed after 8 rounds", request.len());
            return Err(StoreError::Transient { op, message });
        }
    }
    Ok(found)
}
