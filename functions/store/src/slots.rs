//! Job concurrency slots and tenant running gates: the items behind the concurrency policies.
//! What they mean and when to take or wait is [`crate::execution::policy`]'s; this module only
//! reads and writes them, by compare-and-set, in the executions table.
//!
//! - A job's **slot** (`pk` = the job's partition, `sk` = [`keys::JOB_SLOT_SK`]) names the
//!   execution holding it (its scheduled ms) and the latest execution that released it.
//! - A tenant's **running gate** (`pk` = [`keys::tenant_running_pk`], `sk` =
//!   [`keys::TENANT_RUNNING_SK`]) maps each running execution id to its lease end, with a
//!   version that every rewrite of the whole map checks and every write (rewrite, extend,
//!   release) bumps. Extend and release change one entry and bump the version in one update, so
//!   they need no condition on it: an acquire that read before them fails its check instead.

use super::error::{is_condition_failed, StoreError};
use super::executions::ExecKey;
use super::expr::{Cmp, Expr, WithExpr};
use super::items::{self, attr, n};
use super::{get_consistent, update_if};
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use std::collections::HashMap;
use sundial_model::keys;

/// A job's slot as read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Slot {
    /// The scheduled ms of the execution holding it.
    pub holder: Option<i64>,
    /// The scheduled ms of the latest execution that released it.
    pub released: Option<i64>,
}

/// The result of taking a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// The caller holds it now.
    Taken,
    /// Someone else holds it (their scheduled ms, if the item said).
    Held(Option<i64>),
}

/// A tenant's running gate as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunningSet {
    /// Lease end (ms) of each running execution, by execution id.
    pub leases: HashMap<String, i64>,
    /// The version a rewrite must find (`None`: no item yet).
    pub version: Option<i64>,
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

/// Reads the slot of `key`'s job (consistent).
pub async fn get_slot(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    key: &ExecKey,
) -> Result<Slot, StoreError> {
    let item = get_consistent(ddb, table, (key.pk(), keys::JOB_SLOT_SK), "GetItem(slot)").await?;
    Ok(items::slot_from_item(&item.unwrap_or_default()))
}

/// Makes `me` (a scheduled ms) the holder of `key`'s job slot if it is free, already `me`, or
/// (with `stale`) still held by that stale holder.
pub async fn take_slot(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    key: &ExecKey,
    me: i64,
    stale: Option<i64>,
) -> Result<Take, StoreError> {
    let mut e = Expr::new();
    e.set(attr::SLOT_HOLDER, n(me));
    match stale {
        None => e.cond_absent_or(attr::SLOT_HOLDER, Cmp::Eq, n(me)),
        Some(old) => e.cond_eq(attr::SLOT_HOLDER, n(old)),
    };
    let res = ddb
        .update_item()
        .table_name(table)
        .key(attr::PK, s(key.pk()))
        .key(attr::SK, s(keys::JOB_SLOT_SK))
        .expr(e)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .send()
        .await;
    match res {
        Ok(_) => Ok(Take::Taken),
        Err(err) if is_condition_failed(&err) => {
            let item = match err.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(c) => c.item.unwrap_or_default(),
                _ => HashMap::new(),
            };
            Ok(Take::Held(items::slot_from_item(&item).holder))
        }
        Err(err) => Err(StoreError::from_sdk("UpdateItem(slot)", err)),
    }
}

/// Frees `key`'s job slot if `key` holds it, recording `key` as the latest released execution.
/// A no-op for anyone else.
pub async fn release_slot(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    key: &ExecKey,
) -> Result<(), StoreError> {
    let mut e = Expr::new();
    e.set(attr::SLOT_RELEASED, n(key.scheduled_ms))
        .remove(attr::SLOT_HOLDER)
        .cond_eq(attr::SLOT_HOLDER, n(key.scheduled_ms));
    // Not the holder (any more): nothing to release.
    update_if(ddb, table, (key.pk(), keys::JOB_SLOT_SK), e, "UpdateItem(slot release)").await?;
    Ok(())
}

/// Reads one shard of a tenant's running gate (consistent).
pub async fn get_running(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    tenant: &str,
    shard: u32,
) -> Result<RunningSet, StoreError> {
    get_gate(ddb, table, keys::tenant_running_shard_pk(tenant, shard)).await
}

/// Replaces one shard of a tenant's running set with `leases` if its version is still `version`
/// (`None`: no item yet). False if someone else rewrote it first.
pub async fn put_running(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    tenant: &str,
    shard: u32,
    leases: &HashMap<String, i64>,
    version: Option<i64>,
) -> Result<bool, StoreError> {
    put_gate(ddb, table, keys::tenant_running_shard_pk(tenant, shard), leases, version).await
}

/// Moves the lease end of `entry` (`keys::gate_entry`) in `tenant`'s running set (if it is still there), and
/// bumps the version in the same update: an acquire that read the set before this write then
/// fails its compare-and-set and reads again, instead of writing back the old lease end (which
/// would make a running execution look gone and let the tenant exceed its limit).
pub async fn extend_running(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    (tenant, entry): (&str, &str),
    shard: u32,
    lease_until: i64,
) -> Result<bool, StoreError> {
    let gate = keys::tenant_running_shard_pk(tenant, shard);
    extend_gate_entry(ddb, table, gate, entry, lease_until).await
}

/// Removes `entry` from `tenant`'s running set (if it is still there), bumping the
/// version for the same reason as [`extend_running`]: a racing acquire must not bring it back.
pub async fn remove_running(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    (tenant, entry): (&str, &str),
    shard: u32,
) -> Result<(), StoreError> {
    remove_gate_entry(ddb, table, keys::tenant_running_shard_pk(tenant, shard), entry).await
}

// The leased gate itself, by partition key: a tenant's running gate and a resource's holder
// gate ([`keys::resource_running_shard_pk`]) are the same item shape (sort key
// [`keys::TENANT_RUNNING_SK`]).

/// Reads one gate item (consistent); an absent item is an empty set with no version.
pub async fn get_gate(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    pk: String,
) -> Result<RunningSet, StoreError> {
    let item = get_consistent(ddb, table, (pk, keys::TENANT_RUNNING_SK), "GetItem(gate)").await?;
    Ok(items::running_from_item(&item.unwrap_or_default()))
}

/// Replaces a gate's map with `leases` if its version is still `version` (`None`: no item yet).
/// False if someone else wrote it first.
pub async fn put_gate(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    pk: String,
    leases: &HashMap<String, i64>,
    version: Option<i64>,
) -> Result<bool, StoreError> {
    let m: HashMap<String, AttributeValue> = leases.iter().map(|(k, v)| (k.clone(), n(*v))).collect();
    let mut e = Expr::new();
    e.set(attr::RUNNING, AttributeValue::M(m)).set(attr::GATE_VERSION, n(version.unwrap_or(0) + 1));
    match version {
        None => e.cond_not_exists(attr::GATE_VERSION),
        Some(v) => e.cond_eq(attr::GATE_VERSION, n(v)),
    };
    update_if(ddb, table, (pk, keys::TENANT_RUNNING_SK), e, "UpdateItem(gate)").await
}

/// Moves the lease end of entry `id` of a gate (if it is still there), bumping the version.
pub async fn extend_gate_entry(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    pk: String,
    id: &str,
    lease_until: i64,
) -> Result<bool, StoreError> {
    let mut e = Expr::new();
    e.set_entry(attr::RUNNING, id, n(lease_until))
        .increment(attr::GATE_VERSION, 1)
        .cond_entry_exists(attr::RUNNING, id);
    // No entry (released already, or lapsed and dropped by an acquire): nothing to change, and
    // false says so. A lost answer retried by the SDK finds the entry again: true.
    update_if(ddb, table, (pk, keys::TENANT_RUNNING_SK), e, "UpdateItem(gate extend)").await
}

/// Removes entry `id` of a gate (if it is still there), bumping the version.
pub async fn remove_gate_entry(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    pk: String,
    id: &str,
) -> Result<(), StoreError> {
    let mut e = Expr::new();
    e.remove_entry(attr::RUNNING, id).increment(attr::GATE_VERSION, 1).cond_entry_exists(attr::RUNNING, id);
    update_if(ddb, table, (pk, keys::TENANT_RUNNING_SK), e, "UpdateItem(gate release)").await?;
    Ok(())
}
