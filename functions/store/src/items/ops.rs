//! The codec of operations-log entries.

use super::{attr, ms_to_dt, n, s, Item};
use std::collections::HashMap;
use sundial_model::keys;
use sundial_model::{OpsAction, OpsEntry};

/// Sort key of an operations-log entry (see [`keys::ops_sk`]): the subject is the execution,
/// else the new version, else the detail's first 40 alphanumerics.
pub fn ops_sk(e: &OpsEntry) -> String {
    let subject = match (&e.execution_id, e.to_version, &e.detail) {
        (Some(x), _, _) => x.clone(),
        (None, Some(v), _) => format!("v{v}"),
        (None, None, Some(d)) => d.chars().filter(|c| c.is_ascii_alphanumeric()).take(40).collect(),
        (None, None, None) => String::new(),
    };
    keys::ops_sk(e.at.timestamp_millis(), &e.job_id, e.action.as_str(), &subject, nonce())
}

/// A per-call random suffix, so two identical operations in the same millisecond (a request
/// repeated by a client) stay two entries. `RandomState` is seeded randomly per process and
/// advanced per instance, which is all this needs.
fn nonce() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new().build_hasher().finish()
}

/// Encodes an operations-log entry of `tenant`, expiring `retention_secs` after it was written.
pub fn ops_item(tenant: &str, e: &OpsEntry, retention_secs: i64) -> Item {
    use attr::ops;
    let mut item: Item = HashMap::from([
        (attr::PK.into(), s(keys::ops_pk(tenant))),
        (attr::SK.into(), s(ops_sk(e))),
        (attr::TENANT.into(), s(tenant)),
        (attr::JOB.into(), s(&e.job_id)),
        (ops::AT.into(), n(e.at.timestamp_millis())),
        (ops::ACTOR.into(), s(&e.actor)),
        (ops::ACTION.into(), s(e.action.as_str())),
        (attr::EXPIRES.into(), n(e.at.timestamp() + retention_secs)),
    ]);
    if let Some(v) = e.from_version {
        item.insert(ops::FROM_VERSION.into(), n(v));
    }
    if let Some(v) = e.to_version {
        item.insert(ops::TO_VERSION.into(), n(v));
    }
    if let Some(x) = &e.execution_id {
        item.insert(ops::EXECUTION.into(), s(x));
    }
    if let Some(d) = &e.detail {
        item.insert(ops::DETAIL.into(), s(d));
    }
    item
}

/// Decodes an operations-log entry (`None` for an item that is not one).
pub fn ops_from_item(item: &Item) -> Option<OpsEntry> {
    use attr::ops;
    let str_of = |k: &str| item.get(k).and_then(|v| v.as_s().ok()).cloned();
    let num_of = |k: &str| item.get(k).and_then(|v| v.as_n().ok()).and_then(|v| v.parse::<i64>().ok());
    Some(OpsEntry {
        at: ms_to_dt(num_of(ops::AT)?),
        actor: str_of(ops::ACTOR)?,
        action: OpsAction::parse(&str_of(ops::ACTION)?)?,
        job_id: str_of(attr::JOB)?,
        from_version: num_of(ops::FROM_VERSION).map(|v| v as u64),
        to_version: num_of(ops::TO_VERSION).map(|v| v as u64),
        execution_id: str_of(ops::EXECUTION),
        detail: str_of(ops::DETAIL),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::items::{attr, ms_to_dt};
    use sundial_model::keys;

    #[test]
    fn ops_entries_round_trip_and_sort_by_time() {
        let t0 = ms_to_dt(1_764_469_800_000);
        let e = OpsEntry::new("api:alice", OpsAction::Update, "nightly", t0).versions(Some(3), Some(4));
        let item = ops_item("acme", &e, 60);
        assert_eq!(ops_from_item(&item).unwrap(), e);
        assert_eq!(item[attr::PK].as_s().unwrap(), &keys::ops_pk("acme"));
        let later = OpsEntry::new("api:alice", OpsAction::Pause, "a", ms_to_dt(1_764_469_800_001));
        assert!(ops_sk(&e) < ops_sk(&later));
        // Two replays in the same millisecond are distinct entries.
        let r1 = OpsEntry::new("api:alice", OpsAction::Replay, "j", t0).execution("j@1");
        let r2 = OpsEntry::new("api:alice", OpsAction::Replay, "j", t0).execution("j@2");
        assert_ne!(ops_sk(&r1), ops_sk(&r2));
        // And so are two identical ones.
        assert_ne!(ops_sk(&r1), ops_sk(&r1.clone()));
    }
}
