//! Event keys (event triggers, docs/dependencies.md "Event triggers"): the first event with a key
//! records the instant it was given on its job (`EVT#{key}`, kept
//! [`sundial_model::event::EVENT_KEY_RETENTION_SECS`]); a repeat reads it back, so it is given
//! the same instant and lands on the same execution.

use super::error::{is_condition_failed, StoreError};
use super::expr::{Cmp, Expr, WithExpr};
use super::items::{attr, n};
use crate::config::Config;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use sundial_model::keys;

/// Records that the event `key` of `tenant`'s `job` is given `instant_ms`, unless a live record
/// exists: the instant to use (this one, or the recorded one of an earlier event).
pub async fn claim_event_key(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    tenant: &str,
    job: &str,
    key: &str,
    instant_ms: i64,
    now_secs: i64,
) -> Result<i64, StoreError> {
    Ok(claim_event_key_fresh(ddb, cfg, tenant, job, key, instant_ms, now_secs).await?.0)
}

/// Moves the event `key`'s recorded instant from `from_ms` to `to_ms` (its first choice was
/// taken by another event or the schedule): false if the record no longer says `from_ms`.
pub async fn move_event_key(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    tenant: &str,
    job: &str,
    key: &str,
    from_ms: i64,
    to_ms: i64,
) -> Result<bool, StoreError> {
    let mut e = Expr::new();
    e.set(attr::SCHED, n(to_ms)).cond_eq(attr::SCHED, n(from_ms));
    let res = ddb
        .update_item()
        .table_name(&cfg.jobs_table)
        .key(attr::PK, AttributeValue::S(keys::job_pk(tenant, job)))
        .key(attr::SK, AttributeValue::S(keys::event_sk(key)))
        .expr(e)
        .send()
        .await;
    match res {
        Ok(_) => Ok(true),
        Err(e) if is_condition_failed(&e) => Ok(false),
        Err(e) => Err(StoreError::from_sdk("UpdateItem(event key)", e)),
    }
}

/// Claims instant `instant_ms` of `tenant`'s `job` for the event `key` (the `EVTI#{ms}` record
/// names its key): true if it is this key's, now or already; false if another key holds it.
pub async fn claim_event_instant(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    tenant: &str,
    job: &str,
    key: &str,
    instant_ms: i64,
    now_secs: i64,
) -> Result<bool, StoreError> {
    // Absent, or this key's already (a redelivery). An expired record is not taken over:
    // events are at most a day old, so its instant is long out of reach.
    let mut cond = Expr::new();
    cond.cond_absent_or(attr::LEASE_OWNER, Cmp::Eq, AttributeValue::S(key.to_string()));
    let expires = now_secs + sundial_model::event::EVENT_KEY_RETENTION_SECS;
    let res = ddb
        .put_item()
        .table_name(&cfg.jobs_table)
        .item(attr::PK, AttributeValue::S(keys::job_pk(tenant, job)))
        .item(attr::SK, AttributeValue::S(keys::event_instant_sk(instant_ms)))
        .item(attr::LEASE_OWNER, AttributeValue::S(key.to_string()))
        .item(attr::EXPIRES, n(expires))
        .expr(cond)
        .send()
        .await;
    match res {
        Ok(_) => Ok(true),
        Err(e) if is_condition_failed(&e) => Ok(false),
        Err(e) => Err(StoreError::from_sdk("PutItem(event instant)", e)),
    }
}

/// [`claim_event_key`], and whether this call made the record (true) or found an earlier
/// event's (false: a redelivery of the same key).
pub async fn claim_event_key_fresh(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    tenant: &str,
    job: &str,
    key: &str,
    instant_ms: i64,
    now_secs: i64,
) -> Result<(i64, bool), StoreError> {
    let mut cond = Expr::new();
    cond.cond_absent_or(attr::EXPIRES, Cmp::Lt, n(now_secs));
    let expires = now_secs + sundial_model::event::EVENT_KEY_RETENTION_SECS;
    let res = ddb
        .put_item()
        .table_name(&cfg.jobs_table)
        .item(attr::PK, AttributeValue::S(keys::job_pk(tenant, job)))
        .item(attr::SK, AttributeValue::S(keys::event_sk(key)))
        .item(attr::SCHED, n(instant_ms))
        .item(attr::EXPIRES, n(expires))
        .expr(cond)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .send()
        .await;
    let old = match res {
        Ok(_) => return Ok((instant_ms, true)),
        Err(e) if is_condition_failed(&e) => match e.into_service_error() {
            PutItemError::ConditionalCheckFailedException(c) => c.item,
            _ => None,
        },
        Err(e) => return Err(StoreError::from_sdk("PutItem(event key)", e)),
    };
    let old = match old {
        Some(i) => Some(i),
        // Not every server returns the item a condition failed on: read it.
        None => {
            ddb.get_item()
                .table_name(&cfg.jobs_table)
                .key(attr::PK, AttributeValue::S(keys::job_pk(tenant, job)))
                .key(attr::SK, AttributeValue::S(keys::event_sk(key)))
                .consistent_read(true)
                .send()
                .await
                .map_err(|e| StoreError::from_sdk("GetItem(event key)", e))?
                .item
        }
    };
    let given = old
        .as_ref()
        .and_then(|i| i.get(attr::SCHED))
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(instant_ms);
    Ok((given, false))
}
