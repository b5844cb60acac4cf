//! Per-tenant quota counters, in the jobs table under `pk` = [`keys::tenant_quota_pk`]:
//! `sk` = `jobs` counts the tenant's live (not deleted) jobs; `sk` = `{kind}#{window}` counts
//! what the tenant did in one fixed window (a minute), and expires with the table's TTL. Every
//! take is one conditional `UpdateItem`: the count moves only when the result stays within the
//! limit, so concurrent requests cannot overshoot it.

use super::error::{is_condition_failed, StoreError};
use super::expr::{Cmp, Expr};
use super::items::{attr, n};
use super::update_if;
use aws_sdk_dynamodb::types::AttributeValue;
use sundial_model::keys;

/// Adds `amount` to the tenant's `counter` if the result is at most `limit`; sets the item's
/// TTL to `expires_at` when given. `Ok(false)`: no room (nothing changed).
pub async fn take(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    tenant: &str,
    counter: &str,
    amount: u32,
    limit: u32,
    expires_at: Option<i64>,
) -> Result<bool, StoreError> {
    if amount > limit {
        return Ok(false);
    }
    let mut e = Expr::new();
    e.add(attr::QUOTA_USED, i64::from(amount));
    if let Some(x) = expires_at {
        e.set(attr::EXPIRES, n(x));
    }
    e.cond_absent_or(attr::QUOTA_USED, Cmp::Le, n(i64::from(limit - amount)));
    update_if(ddb, table, (keys::tenant_quota_pk(tenant), counter), e, "UpdateItem(quota)").await
}

/// Gives `amount` back to the tenant's `counter` (a job deleted, a create that failed after
/// its take).
pub async fn give_back(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    tenant: &str,
    counter: &str,
    amount: u32,
) -> Result<(), StoreError> {
    let mut e = Expr::new();
    e.increment(attr::QUOTA_USED, -i64::from(amount));
    e.cond_exists(attr::QUOTA_USED);
    update_if(ddb, table, (keys::tenant_quota_pk(tenant), counter), e, "UpdateItem(quota)").await?;
    // Back at zero: remove the item, so a refused request leaves the table as it found it.
    let res = ddb
        .delete_item()
        .table_name(table)
        .key(attr::PK, AttributeValue::S(keys::tenant_quota_pk(tenant)))
        .key(attr::SK, AttributeValue::S(counter.to_string()))
        .condition_expression("#u = :z")
        .expression_attribute_names("#u", attr::QUOTA_USED)
        .expression_attribute_values(":z", n(0))
        .send()
        .await;
    match res {
        Ok(_) => Ok(()),
        Err(e) if is_condition_failed(&e) => Ok(()),
        Err(e) => Err(StoreError::from_sdk("DeleteItem(quota)", e)),
    }
}
