//! Business calendar items: one partition per tenant (`T#{tenant}#CAL`), the current
//! definition at `C#{calendar}` and an immutable snapshot per version at
//! `CV#{calendar}#{version}`, written with the operations-log entry in one transaction, like
//! job changes ([`super::jobs::put_job_change`]).
//!
//! A delete leaves the current item as a `DELETED` tombstone (same version + 1): version
//! numbers of an id never repeat, so a snapshot a job's trigger position was computed with
//! stays what it was even if the id is created again.

use super::error::StoreError;
use super::expr::{Expr, WithExpr};
use super::items::{self, attr, n, Item};
use super::query::one_page;
use super::versioned::{Versioned, VersionedWrite};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use sundial_model::keys;
use sundial_model::OpsEntry;
use sundial_schedule::BusinessCalendarSpec;

/// Attribute holding the calendar id.
const CAL: &str = "cal";

/// A stored calendar version (current item or snapshot).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredCalendar {
    /// Owner.
    pub tenant: String,
    /// Id, unique within the tenant.
    pub id: String,
    /// +1 on each edit (and on the delete, whose tombstone carries the last version + 1).
    pub version: u64,
    /// Deleted (a tombstone: not usable by jobs, not listed).
    pub deleted: bool,
    /// The definition of this version.
    pub spec: BusinessCalendarSpec,
    /// First created.
    pub created_at: DateTime<Utc>,
    /// This version written.
    pub updated_at: DateTime<Utc>,
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn to_item(c: &StoredCalendar, sk: String) -> Item {
    HashMap::from([
        (attr::PK.into(), s(keys::calendar_pk(&c.tenant))),
        (attr::SK.into(), s(sk)),
        (attr::TENANT.into(), s(&c.tenant)),
        (CAL.into(), s(&c.id)),
        (attr::VERSION.into(), n(c.version)),
        (attr::STATE.into(), s(if c.deleted { "DELETED" } else { "ACTIVE" })),
        (attr::DEF.into(), s(serde_json::to_string(&c.spec).unwrap_or_default())),
        (attr::CREATED.into(), n(c.created_at.timestamp_millis())),
        (attr::UPDATED.into(), n(c.updated_at.timestamp_millis())),
    ])
}

fn from_item(item: &Item) -> Result<StoredCalendar, StoreError> {
    let bad = |a: &str, why: String| StoreError::Permanent {
        op: "decode(calendar)",
        message: format!("{a}: {why}"),
    };
    let str_of = |a: &'static str| -> Result<&str, StoreError> {
        item.get(a).and_then(|v| v.as_s().ok()).map(String::as_str).ok_or_else(|| bad(a, "missing".into()))
    };
    let num_of = |a: &'static str| -> Result<i64, StoreError> {
        item.get(a)
            .and_then(|v| v.as_n().ok())
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| bad(a, "missing or not a number".into()))
    };
    Ok(StoredCalendar {
        tenant: str_of(attr::TENANT)?.to_string(),
        id: str_of(CAL)?.to_string(),
        version: num_of(attr::VERSION)? as u64,
        deleted: str_of(attr::STATE)? == "DELETED",
        spec: serde_json::from_str(str_of(attr::DEF)?).map_err(|e| bad(attr::DEF, e.to_string()))?,
        created_at: items::ms_to_dt(num_of(attr::CREATED)?),
        updated_at: items::ms_to_dt(num_of(attr::UPDATED)?),
    })
}

/// A calendar change was not written.
#[derive(Debug, thiserror::Error)]
pub enum CalendarChangeError {
    /// The current item is not at the version the caller read (or was created meanwhile).
    #[error("version: the calendar was changed concurrently")]
    Conflict,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Writes `cal` as the current item, conditional on the current item being at `expected`
/// (`None`: absent), with its immutable snapshot and the audit entry, in one transaction.
pub async fn put_calendar(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    expected: Option<u64>,
    cal: &StoredCalendar,
    audit: &OpsEntry,
    ops_retention_secs: i64,
) -> Result<(), CalendarChangeError> {
    let write = VersionedWrite {
        table,
        current: to_item(cal, keys::calendar_sk(&cal.id)),
        expected,
        snapshot: to_item(cal, keys::calendar_version_sk(&cal.id, cal.version)),
        snapshot_if_absent: true,
        audit: items::ops_item(&cal.tenant, audit, ops_retention_secs),
    };
    match write.send(ddb).await? {
        Versioned::Written => Ok(()),
        Versioned::Conflict => Err(CalendarChangeError::Conflict),
    }
}

async fn get_by_sk(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    tenant: &str,
    sk: String,
    consistent: bool,
) -> Result<Option<StoredCalendar>, StoreError> {
    let out = ddb
        .get_item()
        .table_name(table)
        .key(attr::PK, s(keys::calendar_pk(tenant)))
        .key(attr::SK, s(sk))
        .consistent_read(consistent)
        .send()
        .await
        .map_err(|e| StoreError::from_sdk("GetItem(calendar)", e))?;
    out.item.as_ref().map(from_item).transpose()
}

/// The current item of a calendar (a tombstone too), strongly consistent.
pub async fn get_calendar(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    tenant: &str,
    id: &str,
) -> Result<Option<StoredCalendar>, StoreError> {
    get_by_sk(ddb, table, tenant, keys::calendar_sk(id), true).await
}

/// One immutable version snapshot (eventually consistent reads are enough: it never changes
/// after the transaction that wrote it, and a reader learns the version from an item written
/// in or after that transaction).
pub async fn get_calendar_version(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    tenant: &str,
    id: &str,
    version: u64,
) -> Result<Option<StoredCalendar>, StoreError> {
    get_by_sk(ddb, table, tenant, keys::calendar_version_sk(id, version), true).await
}

/// One page of the tenant's current calendar items in id order (tombstones included; the
/// caller filters), `next` the id the next page starts after.
pub async fn list_calendars(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    tenant: &str,
    limit: i32,
    after: Option<&str>,
) -> Result<super::QueryPage<StoredCalendar, String>, StoreError> {
    let pk = keys::calendar_pk(tenant);
    let start = after.map(|id| {
        HashMap::from([(attr::PK.to_string(), s(&pk)), (attr::SK.to_string(), s(keys::calendar_sk(id)))])
    });
    let mut e = Expr::new();
    e.key_eq(attr::PK, s(&pk)).key_begins_with(attr::SK, keys::CALENDAR_SK_PREFIX);
    let page =
        one_page(ddb.query().table_name(table).expr(e).limit(limit), start, "Query(calendars)").await?;
    let items = page.items.iter().map(from_item).collect::<Result<Vec<_>, _>>()?;
    let next = page
        .last_key
        .as_ref()
        .and_then(|k| k.get(attr::SK))
        .and_then(|v| v.as_s().ok())
        .and_then(|sk| sk.strip_prefix(keys::CALENDAR_SK_PREFIX))
        .map(str::to_string);
    Ok(super::QueryPage { items, next })
}
