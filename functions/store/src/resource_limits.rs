//! Resource limits: named, platform-wide limits on how many executions may use a
//! downstream at once (`legacy-db: 20`). One partition for all of them in the jobs table
//! ([`keys::RESOURCES_PK`], sort key [`keys::resource_limit_sk`]): they are few, set by
//! operators, read by workers (cached) and by job create/edit. Who holds a resource is the
//! resource's holder gate in the executions table ([`super::slots::get_gate`] with
//! [`keys::resource_running_shard_pk`]); what a limit means is [`crate::execution::resource_limits`]'s.

use super::error::StoreError;
use super::expr::{Expr, WithExpr};
use super::items::{attr, n, DecodeError, Item};
use super::query::Pager;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use chrono::{DateTime, TimeZone, Utc};
use std::collections::HashMap;
use sundial_model::keys;

/// The limit attribute (executions at once).
const LIMIT: &str = "lim";
/// Who set it last (the caller's principal).
const BY: &str = "by";
/// The operator-set per-tenant share (absent: [`default_per_tenant`]).
const PER_TENANT: &str = "pt";

/// Largest resource limit: a gate of 10,000 is 500 gate items of 20 entries, the largest the
/// tenant gate is tested with too.
pub const MAX_RESOURCE_LIMIT: u32 = 10_000;

/// A stored resource limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceLimit {
    /// The resource's name (an id: 1-64 of `[A-Za-z0-9_-]`).
    pub name: String,
    /// Executions that may hold it at once, across all tenants, pools and jobs (0: none; every
    /// execution of a job that uses it waits).
    pub limit: u32,
    /// +1 on every change.
    pub version: u64,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
    /// Last changed by (principal).
    pub updated_by: String,
    /// Most units one tenant may hold at once, as the operator set it (`None`: the default,
    /// [`default_per_tenant`]); see [`ResourceLimit::share`].
    pub per_tenant: Option<u32>,
}

/// The per-tenant share of a limit no operator set one for: half the limit, rounded up, at
/// least 1 (a limit of 1 is its own share), so no single tenant can hold every unit of a limit
/// of 2 or more.
pub fn default_per_tenant(limit: u32) -> u32 {
    limit.div_ceil(2).max(1)
}

impl ResourceLimit {
    /// Most units one tenant may hold at once: the operator's `perTenant`, else
    /// [`default_per_tenant`]; never more than the limit.
    pub fn share(&self) -> u32 {
        self.per_tenant.unwrap_or_else(|| default_per_tenant(self.limit)).min(self.limit)
    }
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn num(item: &Item, a: &str) -> Option<i64> {
    item.get(a).and_then(|v| v.as_n().ok()).and_then(|v| v.parse().ok())
}

fn from_item(item: &Item) -> Result<ResourceLimit, StoreError> {
    let bad = |what: &'static str| {
        StoreError::Decode(DecodeError {
            attr: what,
            reason: "missing or invalid in a resource limit item".into(),
        })
    };
    let sk = item.get(attr::SK).and_then(|v| v.as_s().ok()).ok_or_else(|| bad(attr::SK))?;
    let name = sk.strip_prefix(keys::RESOURCE_LIMIT_SK_PREFIX).ok_or_else(|| bad(attr::SK))?;
    let limit = num(item, LIMIT).and_then(|v| u32::try_from(v).ok()).ok_or_else(|| bad(LIMIT))?;
    Ok(ResourceLimit {
        name: name.to_string(),
        limit,
        version: num(item, attr::VERSION)
            .and_then(|v| u64::try_from(v).ok())
            .ok_or_else(|| bad(attr::VERSION))?,
        updated_at: Utc
            .timestamp_millis_opt(num(item, attr::UPDATED).ok_or_else(|| bad(attr::UPDATED))?)
            .single()
            .ok_or_else(|| bad(attr::UPDATED))?,
        updated_by: item.get(BY).and_then(|v| v.as_s().ok()).cloned().unwrap_or_default(),
        per_tenant: num(item, PER_TENANT).and_then(|v| u32::try_from(v).ok()),
    })
}

fn key(name: &str) -> [(String, AttributeValue); 2] {
    [(attr::PK.into(), s(keys::RESOURCES_PK)), (attr::SK.into(), s(keys::resource_limit_sk(name)))]
}

/// Reads one resource limit (`consistent`: strongly, for the API after a write).
pub async fn get_limit(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    name: &str,
    consistent: bool,
) -> Result<Option<ResourceLimit>, StoreError> {
    let out = ddb
        .get_item()
        .table_name(table)
        .set_key(Some(HashMap::from(key(name))))
        .consistent_read(consistent)
        .send()
        .await
        .map_err(|e| StoreError::from_sdk("GetItem(resource)", e))?;
    out.item.as_ref().map(from_item).transpose()
}

/// Sets a resource limit (creating it) with the default per-tenant share, version + 1; returns
/// what is stored now.
pub async fn put_limit(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    name: &str,
    limit: u32,
    by: &str,
    now: DateTime<Utc>,
) -> Result<ResourceLimit, StoreError> {
    put_limit_shared(ddb, table, name, limit, None, by, now).await
}

/// [`put_limit`] with the per-tenant share `per_tenant` (`None`: the default).
pub async fn put_limit_shared(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    name: &str,
    limit: u32,
    per_tenant: Option<u32>,
    by: &str,
    now: DateTime<Utc>,
) -> Result<ResourceLimit, StoreError> {
    let mut e = Expr::new();
    e.set(LIMIT, n(limit)).set(attr::UPDATED, n(now.timestamp_millis())).set(BY, s(by)).add(attr::VERSION, 1);
    match per_tenant {
        Some(p) => e.set(PER_TENANT, n(p)),
        None => e.remove(PER_TENANT),
    };
    let out = ddb
        .update_item()
        .table_name(table)
        .set_key(Some(HashMap::from(key(name))))
        .expr(e)
        .return_values(ReturnValue::AllNew)
        .send()
        .await
        .map_err(|e| StoreError::from_sdk("UpdateItem(resource)", e))?;
    from_item(&out.attributes.unwrap_or_default())
}

/// Deletes a resource limit; false if there was none.
pub async fn delete_limit(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    name: &str,
) -> Result<bool, StoreError> {
    let out = ddb
        .delete_item()
        .table_name(table)
        .set_key(Some(HashMap::from(key(name))))
        .return_values(ReturnValue::AllOld)
        .send()
        .await
        .map_err(|e| StoreError::from_sdk("DeleteItem(resource)", e))?;
    Ok(out.attributes.is_some_and(|a| !a.is_empty()))
}

/// Every resource limit, by name (all pages: they are few).
pub async fn list_limits(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
) -> Result<Vec<ResourceLimit>, StoreError> {
    let mut e = Expr::new();
    e.key_eq(attr::PK, s(keys::RESOURCES_PK)).key_begins_with(attr::SK, keys::RESOURCE_LIMIT_SK_PREFIX);
    Pager::new(ddb.query().table_name(table).expr(e), None, "Query(resources)").all(from_item).await
}
