//! Idempotency-Key records (HTTP `Idempotency-Key` on create, trigger-now and backfill), in the
//! jobs table under `pk` = [`keys::idempotency_pk`], `sk` = [`keys::IDEMPOTENCY_SK`].
//!
//! A record holds the request's fingerprint, the instant the request ran at (a takeover after a
//! crash runs it again at that same instant, so trigger-now lands on the same execution), a
//! lease with its owner, and once done the response (status, headers, body) to replay. All
//! writes are conditional on the owner, so two concurrent requests with one key never both
//! run.

use super::error::{is_condition_failed, StoreError};
use super::expr::Expr;
use super::expr::WithExpr;
use super::items::{attr, n, Item};
use super::{get_consistent, update_if};
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use sundial_model::keys;

/// How a record stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdemState {
    /// A request holds the lease and is running.
    Running,
    /// The request succeeded with this HTTP status; its answer is stored.
    Done(u16),
}

/// A record as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdemRecord {
    /// The request's fingerprint (operation, path, body).
    pub fingerprint: String,
    /// How it stands.
    pub state: IdemState,
    /// The instant (ms) the request ran at.
    pub at_ms: i64,
    /// Lease end (ms) while running.
    pub lease_ms: i64,
    /// The lease holder's nonce.
    pub owner: String,
    /// The stored answer's headers (JSON `[[name, value], ...]`) and body (JSON text).
    pub answer: Option<(String, String)>,
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn record_of(item: &Item) -> Option<IdemRecord> {
    let gs = |a: &str| item.get(a).and_then(|v| v.as_s().ok()).cloned();
    let gn = |a: &str| item.get(a).and_then(|v| v.as_n().ok()).and_then(|v| v.parse::<i64>().ok());
    let state = match gn(attr::IDEM_STATE)? {
        0 => IdemState::Running,
        st => IdemState::Done(u16::try_from(st).ok()?),
    };
    Some(IdemRecord {
        fingerprint: gs(attr::IDEM_FP)?,
        state,
        at_ms: gn(attr::IDEM_AT)?,
        lease_ms: gn(attr::IDEM_LEASE).unwrap_or(0),
        owner: gs(attr::IDEM_OWNER).unwrap_or_default(),
        answer: gs(attr::IDEM_HEADERS).zip(gs(attr::IDEM_BODY)),
    })
}

/// The record of `key`, if any (an unreadable one counts as none).
pub async fn get(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    tenant: &str,
    key: &str,
) -> Result<Option<IdemRecord>, StoreError> {
    let item = get_consistent(
        ddb,
        table,
        (keys::idempotency_pk(tenant, key), keys::IDEMPOTENCY_SK),
        "GetItem(idempotency)",
    )
    .await?;
    Ok(item.as_ref().and_then(record_of))
}

/// A claim of a key: a new record, or a takeover of `prev` (running past its lease).
#[derive(Debug, Clone)]
pub struct Claim<'a> {
    /// The request's fingerprint.
    pub fingerprint: &'a str,
    /// The instant (ms) the request runs at.
    pub at_ms: i64,
    /// Lease end (ms).
    pub lease_ms: i64,
    /// This request's nonce.
    pub owner: &'a str,
    /// TTL of the record (epoch seconds).
    pub expires_at: i64,
}

/// Takes the key: `Ok(false)` when someone else holds it now.
pub async fn claim(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    tenant: &str,
    key: &str,
    c: &Claim<'_>,
    prev: Option<&IdemRecord>,
) -> Result<bool, StoreError> {
    let mut e = Expr::new();
    e.set(attr::IDEM_FP, s(c.fingerprint))
        .set(attr::IDEM_STATE, n(0))
        .set(attr::IDEM_AT, n(c.at_ms))
        .set(attr::IDEM_LEASE, n(c.lease_ms))
        .set(attr::IDEM_OWNER, s(c.owner))
        .set(attr::EXPIRES, n(c.expires_at));
    match prev {
        None => e.cond_not_exists(attr::IDEM_STATE),
        Some(p) => e.cond_eq(attr::IDEM_OWNER, s(p.owner.clone())).cond_eq(attr::IDEM_LEASE, n(p.lease_ms)),
    };
    update_if(
        ddb,
        table,
        (keys::idempotency_pk(tenant, key), keys::IDEMPOTENCY_SK),
        e,
        "UpdateItem(idempotency)",
    )
    .await
}

/// Takes a key nobody holds, in one write: `Ok(Err(record))` when a record exists, with that
/// record as the failed condition returned it (`None` if the store did not say), so the
/// common case — a key seen for the first time — costs no read.
pub async fn claim_new(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    tenant: &str,
    key: &str,
    c: &Claim<'_>,
) -> Result<Result<(), Option<IdemRecord>>, StoreError> {
    let mut e = Expr::new();
    e.set(attr::IDEM_FP, s(c.fingerprint))
        .set(attr::IDEM_STATE, n(0))
        .set(attr::IDEM_AT, n(c.at_ms))
        .set(attr::IDEM_LEASE, n(c.lease_ms))
        .set(attr::IDEM_OWNER, s(c.owner))
        .set(attr::EXPIRES, n(c.expires_at))
        .cond_not_exists(attr::IDEM_STATE);
    let res = ddb
        .update_item()
        .table_name(table)
        .key(attr::PK, s(keys::idempotency_pk(tenant, key)))
        .key(attr::SK, s(keys::IDEMPOTENCY_SK))
        .expr(e)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .send()
        .await;
    match res {
        Ok(_) => Ok(Ok(())),
        Err(err) if is_condition_failed(&err) => Ok(Err(match err.into_service_error() {
            UpdateItemError::ConditionalCheckFailedException(c) => c.item.as_ref().and_then(record_of),
            _ => None,
        })),
        Err(err) => Err(StoreError::from_sdk("UpdateItem(idempotency)", err)),
    }
}

/// Ends the owner's request: with `answer` (status, headers JSON, body JSON) stored for
/// replay, or (`None`: the request was refused or failed) with the record deleted, so a
/// refused request leaves nothing behind and the key may be used again.
pub async fn finish(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    tenant: &str,
    key: &str,
    owner: &str,
    answer: Option<(u16, String, String)>,
) -> Result<bool, StoreError> {
    let Some((status, headers, body)) = answer else {
        let res = ddb
            .delete_item()
            .table_name(table)
            .key(attr::PK, s(keys::idempotency_pk(tenant, key)))
            .key(attr::SK, s(keys::IDEMPOTENCY_SK))
            .condition_expression("#o = :o")
            .expression_attribute_names("#o", attr::IDEM_OWNER)
            .expression_attribute_values(":o", s(owner))
            .send()
            .await;
        return match res {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failed(&e) => Ok(false),
            Err(e) => Err(StoreError::from_sdk("DeleteItem(idempotency)", e)),
        };
    };
    let mut e = Expr::new();
    e.set(attr::IDEM_STATE, n(status)).set(attr::IDEM_HEADERS, s(headers)).set(attr::IDEM_BODY, s(body));
    e.cond_eq(attr::IDEM_OWNER, s(owner));
    let key = (keys::idempotency_pk(tenant, key), keys::IDEMPOTENCY_SK);
    update_if(ddb, table, key, e, "UpdateItem(idempotency)").await
}
