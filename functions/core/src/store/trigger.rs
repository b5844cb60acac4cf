//! The trigger plane's conditional writes (DESIGN §1: put → send → advance → watermark).
//!
//! - [`put_execution`]: `PutItem IF attribute_not_exists(pk)`. The key is (job, scheduled_at),
//!   so a second put for the same fire is absorbed: [`PutOutcome::Exists`] is success.
//! - [`advance_job`]: `UpdateItem IF next = :read AND ver = :ver AND state = ENABLED`: moves the
//!   trigger position (and the job's `due` index bucket) only if nobody moved it since we read
//!   it. Losing that race is [`Advance::Lost`], not an error.
//! - [`advance_watermark`]: moves a shard's scanned-through minute forward only.

use super::error::{is_condition_failed, StoreError};
use super::items::{self, attr, n, Item};
use crate::keys;
use crate::model::{DueClass, ExecStatus, Execution, Job};
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// Executions are kept this long after creation (the table's TTL attribute).
pub const EXECUTION_RETENTION_SECS: i64 = 90 * 86_400;

/// Result of putting an execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutOutcome {
    /// This call created it.
    Created,
    /// It already existed (a duplicate tick, or a retry after a crash), in this status.
    Exists(ExecStatus),
}

/// Result of a CAS on a job's trigger position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advance {
    /// Moved.
    Advanced,
    /// Someone else moved it, or the job was paused, deleted or edited since it was read.
    Lost,
}

/// Creates the execution unless one exists for the same (job, scheduled_at).
pub async fn put_execution(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    e: &Execution,
) -> Result<PutOutcome, StoreError> {
    let item = items::execution_to_item(e, EXECUTION_RETENTION_SECS);
    let res = ddb
        .put_item()
        .table_name(table)
        .set_item(Some(item))
        .condition_expression("attribute_not_exists(pk)")
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .send()
        .await;
    match res {
        Ok(_) => Ok(PutOutcome::Created),
        Err(err) if is_condition_failed(&err) => {
            let old = err.as_service_error().and_then(|s| match s {
                aws_sdk_dynamodb::operation::put_item::PutItemError::ConditionalCheckFailedException(c) => {
                    c.item().cloned()
                }
                _ => None,
            });
            let old = match old {
                Some(i) => i,
                // Not every server returns the old item: read it.
                None => {
                    get_execution_item(ddb, table, &e.tenant, &e.job_id, e.scheduled_at.timestamp_millis())
                        .await?
                        .unwrap_or_default()
                }
            };
            let status = old
                .get(attr::STATUS)
                .and_then(|v| v.as_s().ok())
                .and_then(|s| ExecStatus::parse(s))
                .unwrap_or(ExecStatus::Ready);
            Ok(PutOutcome::Exists(status))
        }
        Err(err) => Err(StoreError::from_sdk("PutItem", err)),
    }
}

/// Reads one execution item (consistent read).
pub async fn get_execution_item(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    tenant: &str,
    job_id: &str,
    scheduled_ms: i64,
) -> Result<Option<Item>, StoreError> {
    let out = ddb
        .get_item()
        .table_name(table)
        .key(attr::PK, AttributeValue::S(keys::job_pk(tenant, job_id)))
        .key(attr::SK, AttributeValue::S(keys::exec_sk(scheduled_ms)))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| StoreError::from_sdk("GetItem", e))?;
    Ok(out.item)
}

/// Reads one execution.
pub async fn get_execution(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    tenant: &str,
    job_id: &str,
    scheduled_ms: i64,
) -> Result<Option<Execution>, StoreError> {
    match get_execution_item(ddb, table, tenant, job_id, scheduled_ms).await? {
        Some(i) => Ok(Some(items::execution_from_item(&i)?)),
        None => Ok(None),
    }
}

/// CAS-advances a job's trigger position from `read_next` (the value this scan read) to
/// `new_next` in the `class` partition (or removes it from the `due` index when the schedule
/// is exhausted).
pub async fn advance_job(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    job: &Job,
    read_next: DateTime<Utc>,
    new_next: Option<DateTime<Utc>>,
    class: DueClass,
) -> Result<Advance, StoreError> {
    let mut req = ddb
        .update_item()
        .table_name(table)
        .key(attr::PK, AttributeValue::S(keys::job_pk(&job.tenant, &job.job_id)))
        .key(attr::SK, AttributeValue::S(keys::JOB_DEF_SK.into()))
        .condition_expression("#next = :read AND #ver = :ver AND #state = :enabled")
        .expression_attribute_names("#next", attr::NEXT)
        .expression_attribute_names("#ver", attr::VERSION)
        .expression_attribute_names("#state", attr::STATE)
        .expression_attribute_values(":read", n(read_next.timestamp_millis()))
        .expression_attribute_values(":ver", n(job.version))
        .expression_attribute_values(":enabled", AttributeValue::S("ENABLED".into()));
    req = match new_next {
        Some(next) => {
            let moved = Job { due_class: class, ..job.clone() };
            let (pk, sk) = items::due_keys(&moved, next);
            req.update_expression("SET #next = :next, #dpk = :dpk, #dsk = :dsk, #cls = :cls")
                .expression_attribute_names("#dpk", attr::DUE_PK)
                .expression_attribute_names("#dsk", attr::DUE_SK)
                .expression_attribute_names("#cls", attr::EVERY)
                .expression_attribute_values(":cls", AttributeValue::S(class.code().into()))
                .expression_attribute_values(":next", n(next.timestamp_millis()))
                .expression_attribute_values(":dpk", AttributeValue::S(pk))
                .expression_attribute_values(":dsk", AttributeValue::S(sk))
        }
        None => req
            .update_expression("REMOVE #next, #dpk, #dsk")
            .expression_attribute_names("#dpk", attr::DUE_PK)
            .expression_attribute_names("#dsk", attr::DUE_SK),
    };
    match req.send().await {
        Ok(_) => Ok(Advance::Advanced),
        Err(e) if is_condition_failed(&e) => Ok(Advance::Lost),
        Err(e) => Err(StoreError::from_sdk("UpdateItem", e)),
    }
}

/// Queries one `due` index partition (a `{minute}#{shard}` bucket or an `E#{shard}` class),
/// following pagination.
pub async fn query_due(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    due_pk: &str,
) -> Result<Vec<Job>, StoreError> {
    let mut out = Vec::new();
    let mut start: Option<HashMap<String, AttributeValue>> = None;
    loop {
        let page = ddb
            .query()
            .table_name(table)
            .index_name("due")
            .key_condition_expression("#p = :p")
            .expression_attribute_names("#p", attr::DUE_PK)
            .expression_attribute_values(":p", AttributeValue::S(due_pk.to_string()))
            .set_exclusive_start_key(start.take())
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("Query", e))?;
        for item in page.items() {
            out.push(items::job_from_item(item)?);
        }
        match page.last_evaluated_key {
            Some(k) if !k.is_empty() => start = Some(k),
            _ => break,
        }
    }
    Ok(out)
}

/// A shard's watermark: the last epoch minute fully scanned.
pub async fn get_watermark(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    shard: u32,
) -> Result<Option<i64>, StoreError> {
    let out = ddb
        .get_item()
        .table_name(table)
        .key(attr::PK, AttributeValue::S(keys::watermark_pk(shard)))
        .key(attr::SK, AttributeValue::S(keys::WATERMARK_SK.into()))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| StoreError::from_sdk("GetItem", e))?;
    Ok(out.item.and_then(|i| i.get(attr::THROUGH).and_then(|v| v.as_n().ok()).and_then(|s| s.parse().ok())))
}

/// Moves a shard's watermark forward to `through` (never back). Returns false if it was
/// already at or past it (a concurrent scanner got there first).
pub async fn advance_watermark(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    shard: u32,
    through: i64,
) -> Result<bool, StoreError> {
    let res = ddb
        .update_item()
        .table_name(table)
        .key(attr::PK, AttributeValue::S(keys::watermark_pk(shard)))
        .key(attr::SK, AttributeValue::S(keys::WATERMARK_SK.into()))
        .update_expression("SET #t = :t")
        .condition_expression("attribute_not_exists(#t) OR #t < :t")
        .expression_attribute_names("#t", attr::THROUGH)
        .expression_attribute_values(":t", n(through))
        .send()
        .await;
    match res {
        Ok(_) => Ok(true),
        Err(e) if is_condition_failed(&e) => Ok(false),
        Err(e) => Err(StoreError::from_sdk("UpdateItem", e)),
    }
}
