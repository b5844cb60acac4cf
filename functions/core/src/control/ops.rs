//! The operations audit log: who changed what, when, from which version to which.
//!
//! One partition per tenant in the jobs table (`pk = T#{tenant}#OPS`), sorted by time
//! (`sk = O#{ms}#{job}#{action}#{subject}#{nonce}`), so "what happened lately" is one Query,
//! newest first, and no other tenant's entries share the partition. The subject (new version,
//! execution id or range) and a random nonce make two entries in the same millisecond distinct. Definition
//! changes write their entry in the same transaction as the change ([`crate::store::jobs::put_job_change`]);
//! execution operations write it right after their conditional write (the execution's own
//! timeline already holds the authoritative record of who moved it). Entries expire after
//! [`super::ControlSettings::ops_retention_secs`].

use super::page::{self, Page};
use super::{Caller, Control, ControlError};
use crate::keys;
use crate::store::items::{attr, ms_to_dt, n, Item};
use crate::store::StoreError;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// What was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpsAction {
    /// Job created (version 1).
    Create,
    /// Definition edited.
    Update,
    /// Job paused.
    Pause,
    /// Job resumed.
    Resume,
    /// Job soft-deleted.
    Delete,
    /// Manual run.
    Trigger,
    /// Past range backfilled.
    Backfill,
    /// Execution cancelled.
    Cancel,
    /// Dead execution replayed.
    Replay,
}

impl OpsAction {
    /// The stored (and API) name.
    pub fn as_str(self) -> &'static str {
        match self {
            OpsAction::Create => "create",
            OpsAction::Update => "update",
            OpsAction::Pause => "pause",
            OpsAction::Resume => "resume",
            OpsAction::Delete => "delete",
            OpsAction::Trigger => "trigger",
            OpsAction::Backfill => "backfill",
            OpsAction::Cancel => "cancel",
            OpsAction::Replay => "replay",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        use OpsAction::*;
        [Create, Update, Pause, Resume, Delete, Trigger, Backfill, Cancel, Replay]
            .into_iter()
            .find(|a| a.as_str() == s)
    }
}

/// One entry of the operations log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpsEntry {
    /// When.
    pub at: DateTime<Utc>,
    /// Who (`api:<principal>`).
    pub actor: String,
    /// What.
    pub action: OpsAction,
    /// The job.
    pub job_id: String,
    /// Definition version before the change (none for create and execution operations).
    pub from_version: Option<u64>,
    /// Definition version after the change (or the version an execution was created with).
    pub to_version: Option<u64>,
    /// The execution concerned (cancel, replay, trigger).
    pub execution_id: Option<String>,
    /// Free-form detail (backfill range and counts, cancelled executions, ...).
    pub detail: Option<String>,
}

impl OpsEntry {
    /// An entry by `caller` at `now`.
    pub fn new(caller: &Caller, action: OpsAction, job_id: &str, now: DateTime<Utc>) -> Self {
        OpsEntry {
            at: now,
            actor: caller.actor(),
            action,
            job_id: job_id.to_string(),
            from_version: None,
            to_version: None,
            execution_id: None,
            detail: None,
        }
    }

    /// Sets the versions.
    pub fn versions(mut self, from: Option<u64>, to: Option<u64>) -> Self {
        self.from_version = from;
        self.to_version = to;
        self
    }

    /// Sets the execution.
    pub fn execution(mut self, id: impl Into<String>) -> Self {
        self.execution_id = Some(id.into());
        self
    }

    /// Sets the detail.
    pub fn detail(mut self, d: impl Into<String>) -> Self {
        self.detail = Some(d.into());
        self
    }
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

/// Sort key of an entry.
pub fn ops_sk(e: &OpsEntry) -> String {
    let subject = match (&e.execution_id, e.to_version, &e.detail) {
        (Some(x), _, _) => x.clone(),
        (None, Some(v), _) => format!("v{v}"),
        (None, None, Some(d)) => d.chars().filter(|c| c.is_ascii_alphanumeric()).take(40).collect(),
        (None, None, None) => String::new(),
    };
    format!("O#{:015}#{}#{}#{subject}#{:016x}", e.at.timestamp_millis(), e.job_id, e.action.as_str(), nonce())
}

/// A per-call random suffix, so two identical operations in the same millisecond (a request
/// repeated by a client) stay two entries. `RandomState` is seeded randomly per process and
/// advanced per instance, which is all this needs.
fn nonce() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new().build_hasher().finish()
}

/// The item of an entry, expiring `retention_secs` after it was written.
pub fn ops_item(tenant: &str, e: &OpsEntry, retention_secs: i64) -> Item {
    let mut item: Item = HashMap::from([
        (attr::PK.into(), s(keys::ops_pk(tenant))),
        (attr::SK.into(), s(ops_sk(e))),
        (attr::TENANT.into(), s(tenant)),
        (attr::JOB.into(), s(&e.job_id)),
        ("at".into(), n(e.at.timestamp_millis())),
        ("by".into(), s(&e.actor)),
        ("op".into(), s(e.action.as_str())),
        (attr::EXPIRES.into(), n(e.at.timestamp() + retention_secs)),
    ]);
    if let Some(v) = e.from_version {
        item.insert("fv".into(), n(v));
    }
    if let Some(v) = e.to_version {
        item.insert("tv".into(), n(v));
    }
    if let Some(x) = &e.execution_id {
        item.insert("ex".into(), s(x));
    }
    if let Some(d) = &e.detail {
        item.insert("dt".into(), s(d));
    }
    item
}

fn entry_of(item: &Item) -> Option<OpsEntry> {
    let str_of = |k: &str| item.get(k).and_then(|v| v.as_s().ok()).cloned();
    let num_of = |k: &str| item.get(k).and_then(|v| v.as_n().ok()).and_then(|v| v.parse::<i64>().ok());
    Some(OpsEntry {
        at: ms_to_dt(num_of("at")?),
        actor: str_of("by")?,
        action: OpsAction::parse(&str_of("op")?)?,
        job_id: str_of(attr::JOB)?,
        from_version: num_of("fv").map(|v| v as u64),
        to_version: num_of("tv").map(|v| v as u64),
        execution_id: str_of("ex"),
        detail: str_of("dt"),
    })
}

/// Appends an entry (for operations whose authoritative record is elsewhere, see module doc).
pub async fn record(ctl: &Control, tenant: &str, e: &OpsEntry) -> Result<(), StoreError> {
    ctl.ddb()
        .put_item()
        .table_name(&ctl.cfg().jobs_table)
        .set_item(Some(ops_item(tenant, e, ctl.settings.ops_retention_secs)))
        .send()
        .await
        .map_err(|e| StoreError::from_sdk("PutItem(ops)", e))?;
    Ok(())
}

/// Lists the caller's operations, newest first, optionally for one job.
pub async fn list(
    ctl: &Control,
    caller: &Caller,
    job_id: Option<&str>,
    limit: Option<u32>,
    cursor: Option<&str>,
) -> Result<Page<OpsEntry>, ControlError> {
    if let Some(j) = job_id {
        keys::validate_id("jobId", j).map_err(|e| ControlError::invalid(e.field, e.reason))?;
    }
    let pk = keys::ops_pk(&caller.tenant);
    let start = match cursor {
        Some(c) => {
            let sk = page::decode("ops", c)?;
            if !sk.starts_with("O#") {
                return Err(ControlError::invalid("cursor", "not a cursor returned by this list"));
            }
            Some(HashMap::from([(attr::PK.to_string(), s(&pk)), (attr::SK.to_string(), s(sk))]))
        }
        None => None,
    };
    let mut req = ctl
        .ddb()
        .query()
        .table_name(&ctl.cfg().jobs_table)
        .key_condition_expression("#pk = :pk AND begins_with(#sk, :o)")
        .expression_attribute_names("#pk", attr::PK)
        .expression_attribute_names("#sk", attr::SK)
        .expression_attribute_values(":pk", s(&pk))
        .expression_attribute_values(":o", s("O#"))
        .scan_index_forward(false)
        .limit(page::limit(limit, ctl.settings.max_page))
        .set_exclusive_start_key(start);
    if let Some(j) = job_id {
        req = req
            .filter_expression("#job = :job")
            .expression_attribute_names("#job", attr::JOB)
            .expression_attribute_values(":job", s(j));
    }
    let out = req.send().await.map_err(|e| StoreError::from_sdk("Query(ops)", e))?;
    let items = out.items().iter().filter_map(entry_of).collect();
    let next = out
        .last_evaluated_key()
        .and_then(|k| k.get(attr::SK))
        .and_then(|v| v.as_s().ok())
        .map(|sk| page::encode("ops", sk));
    Ok(Page { items, next })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_sort_by_time() {
        let caller = Caller { tenant: "acme".into(), principal: "alice".into() };
        let t0 = ms_to_dt(1_764_469_800_000);
        let e = OpsEntry::new(&caller, OpsAction::Update, "nightly", t0).versions(Some(3), Some(4));
        let item = ops_item("acme", &e, 60);
        assert_eq!(entry_of(&item).unwrap(), e);
        assert_eq!(item[attr::PK].as_s().unwrap(), "T#acme#OPS");
        let later = OpsEntry::new(&caller, OpsAction::Pause, "a", ms_to_dt(1_764_469_800_001));
        assert!(ops_sk(&e) < ops_sk(&later));
        // Two replays in the same millisecond are distinct entries.
        let r1 = OpsEntry::new(&caller, OpsAction::Replay, "j", t0).execution("j@1");
        let r2 = OpsEntry::new(&caller, OpsAction::Replay, "j", t0).execution("j@2");
        assert_ne!(ops_sk(&r1), ops_sk(&r2));
        // And so are two identical ones.
        assert_ne!(ops_sk(&r1), ops_sk(&r1.clone()));
    }
}
