//! The operations audit log: who changed what, when, from which version to which.
//!
//! One partition per tenant in the jobs table ([`keys::ops_pk`]), sorted by time
//! ([`keys::ops_sk`]), so "what happened lately" is one Query, newest first, and no other
//! tenant's entries share the partition. Definition changes write their entry in the same
//! transaction as the change ([`super::jobs::put_job_change`]); execution operations write it
//! with [`record`] right after their conditional write (the execution's own timeline already
//! holds the authoritative record of who moved it).

use super::error::StoreError;
use super::expr::{Expr, WithExpr};
use super::items::{self, attr, Item};
use super::query::one_page;
use super::QueryPage;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;
use sundial_model::keys;
use sundial_model::OpsEntry;

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

/// Appends an entry to `tenant`'s log, expiring `retention_secs` after it was written.
pub async fn record(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    tenant: &str,
    e: &OpsEntry,
    retention_secs: i64,
) -> Result<(), StoreError> {
    ddb.put_item()
        .table_name(table)
        .set_item(Some(items::ops_item(tenant, e, retention_secs)))
        .send()
        .await
        .map_err(|e| StoreError::from_sdk("PutItem(ops)", e))?;
    Ok(())
}

/// One page of `tenant`'s log, newest first, optionally of one job (a filter: the entries of
/// other jobs are still read); `next` is the sort key the next page starts after.
pub async fn list(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    tenant: &str,
    job_id: Option<&str>,
    limit: i32,
    after_sk: Option<&str>,
) -> Result<QueryPage<OpsEntry, String>, StoreError> {
    let pk = keys::ops_pk(tenant);
    let start: Option<Item> =
        after_sk.map(|sk| HashMap::from([(attr::PK.to_string(), s(&pk)), (attr::SK.to_string(), s(sk))]));
    let mut e = Expr::new();
    e.key_eq(attr::PK, s(&pk)).key_begins_with(attr::SK, keys::OPS_SK_PREFIX);
    if let Some(j) = job_id {
        e.filter_eq(attr::JOB, s(j));
    }
    let query = ddb.query().table_name(table).expr(e).scan_index_forward(false).limit(limit);
    let page = one_page(query, start, "Query(ops)").await?;
    let items = page.items.iter().filter_map(items::ops_from_item).collect();
    let next = page.last_key.as_ref().and_then(|k| k.get(attr::SK)).and_then(|v| v.as_s().ok()).cloned();
    Ok(QueryPage { items, next })
}
