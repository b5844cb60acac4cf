//! Shard watermarks: the last epoch minute each shard's scan fully dispatched.
//!
//! One item per shard in the jobs table ([`keys::watermark_pk`], [`keys::WATERMARK_SK`]). A tick
//! after an outage starts from it and walks the missed buckets, so no job's fires are
//! forgotten; it only ever moves forward, so a slow scanner cannot rewind a faster one.

use super::error::StoreError;
use super::expr::{Cmp, Expr};
use super::items::{self, attr, n};
use super::{get_consistent, update_if};
use crate::keys;

/// A shard's watermark: the last epoch minute fully scanned (`None`: never scanned).
pub async fn get(ddb: &aws_sdk_dynamodb::Client, table: &str, shard: u32) -> Result<Option<i64>, StoreError> {
    let item = get_consistent(ddb, table, (keys::watermark_pk(shard), keys::WATERMARK_SK), "GetItem").await?;
    Ok(item.as_ref().and_then(items::watermark_from_item))
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
    update_if(ddb, table, (keys::watermark_pk(shard), keys::WATERMARK_SK), e, "UpdateItem").await
}
