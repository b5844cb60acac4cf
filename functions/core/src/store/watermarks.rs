//! Shard watermarks: the last epoch minute each shard's scan fully dispatched.
//!
//! One item per shard in the jobs table ([`keys::watermark_pk`], [`keys::WATERMARK_SK`]). A tick
//! after an outage starts from it and walks the missed buckets, so no job's fires are
//! forgotten; it only ever moves forward, so a slow scanner cannot rewind a faster one.

use super::error::{is_condition_failed, StoreError};
use super::expr::{Cmp, Expr, WithExpr};
use super::items::{self, attr, n};
use crate::keys;
use aws_sdk_dynamodb::types::AttributeValue;

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

/// A shard's watermark: the last epoch minute fully scanned (`None`: never scanned).
pub async fn get(ddb: &aws_sdk_dynamodb::Client, table: &str, shard: u32) -> Result<Option<i64>, StoreError> {
    let out = ddb
        .get_item()
        .table_name(table)
        .key(attr::PK, s(keys::watermark_pk(shard)))
        .key(attr::SK, s(keys::WATERMARK_SK))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| StoreError::from_sdk("GetItem", e))?;
    Ok(out.item.as_ref().and_then(items::watermark_from_item))
}

/// Moves a shard's watermark forward to `through` (never back). Returns false if it was
/// already at or past it (a concurrent scanner got there first).
pub async fn advance(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    shard: u32,
    through: i64,
) -> Result<bool, StoreError> {
    let mut e = Expr::new();
    e.set(attr::THROUGH, n(through)).cond_absent_or(attr::THROUGH, Cmp::Lt, n(through));
    let res = ddb
        .update_item()
        .table_name(table)
        .key(attr::PK, s(keys::watermark_pk(shard)))
        .key(attr::SK, s(keys::WATERMARK_SK))
        .expr(e)
        .send()
        .await;
    match res {
        Ok(_) => Ok(true),
        Err(e) if is_condition_failed(&e) => Ok(false),
        Err(e) => Err(StoreError::from_sdk("UpdateItem", e)),
    }
}
