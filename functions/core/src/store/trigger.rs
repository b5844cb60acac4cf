//! The trigger plane's conditional writes (DESIGN §1: put → send → advance → watermark).
//!
//! - [`advance_job`]: `UpdateItem IF next = :read AND ver = :ver AND state = ENABLED`: moves the
//!   trigger position (and the job's `due` index bucket) only if nobody moved it since we read
//!   it. Losing that race is [`Advance::Lost`], not an error.
//! - [`advance_watermark`]: moves a shard's scanned-through minute forward only.

use super::error::{is_condition_failed, StoreError};
use super::items::{self, attr, n};
use crate::keys;
use crate::model::{DueClass, Job};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// Result of a CAS on a job's trigger position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advance {
    /// Moved.
    Advanced,
    /// Someone else moved it, or the job was paused, deleted or edited since it was read.
    Lost,
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
