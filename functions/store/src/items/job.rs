//! The codec of job items: the definition item (with its trigger position and `due` index
//! keys) and its immutable version snapshots.

use super::{attr, get_n, get_n_opt, get_s, ms_to_dt, n, s, DecodeError, Item};
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use sundial_model::keys;
use sundial_model::{DueClass, Job, JobDefinition, JobState};

pub(super) fn def_of(item: &Item) -> Result<JobDefinition, DecodeError> {
    serde_json::from_str(get_s(item, attr::DEF)?)
        .map_err(|e| DecodeError { attr: attr::DEF, reason: e.to_string() })
}
/// The stored name of a job state.
pub fn state_str(s: JobState) -> &'static str {
    match s {
        JobState::Enabled => "ENABLED",
        JobState::Paused => "PAUSED",
        JobState::Deleted => "DELETED",
        JobState::Completed => "COMPLETED",
    }
}

/// Encodes a job's definition item. The `due` index attributes are present only while the
/// job is enabled and has a next fire: paused, deleted and exhausted jobs drop out of it.
pub fn job_to_item(job: &Job) -> Item {
    let def = serde_json::to_string(&job.definition).unwrap_or_default();
    let mut item: Item = HashMap::from([
        (attr::PK.into(), s(keys::job_pk(&job.tenant, &job.job_id))),
        (attr::SK.into(), s(keys::JOB_DEF_SK)),
        (attr::TENANT.into(), s(&job.tenant)),
        (attr::JOB.into(), s(&job.job_id)),
        (attr::VERSION.into(), n(job.version)),
        (attr::STATE.into(), s(state_str(job.state))),
        (attr::DEF.into(), s(def)),
        (attr::ANCHOR.into(), n(job.anchor.timestamp_millis())),
        (attr::SHARD.into(), n(job.shard)),
        (attr::EVERY.into(), s(job.due_class.code())),
        (attr::TENANT_PK.into(), s(keys::tenant_pk(&job.tenant))),
        (attr::TENANT_SK.into(), s(keys::tenant_job_sk(&job.job_id))),
        (attr::CREATED.into(), n(job.created_at.timestamp_millis())),
        (attr::UPDATED.into(), n(job.updated_at.timestamp_millis())),
        (attr::TZDB.into(), s(&job.tzdb_version)),
        (attr::EDITED.into(), n(job.edited_at.timestamp_millis())),
    ]);
    if !job.calendar_versions.is_empty() {
        item.insert(attr::CALENDARS.into(), s(encode_calendar_versions(&job.calendar_versions)));
    }
    if job.committed_per_hour > 0 {
        item.insert(attr::COMMITTED.into(), n(job.committed_per_hour));
    }
    if let Some(at) = job.replanned_at {
        item.insert(attr::REPLANNED.into(), n(at.timestamp_millis()));
    }
    if let Some((from, until)) = job.paused {
        item.insert(attr::PAUSED_FROM.into(), n(from.timestamp_millis()));
        if let Some(u) = until {
            item.insert(attr::PAUSED_UNTIL.into(), n(u.timestamp_millis()));
        }
    }
    if let Some(next) = job.next_fire_at {
        item.insert(attr::NEXT.into(), n(next.timestamp_millis()));
        if job.state == JobState::Enabled {
            let (pk, sk) = due_keys(job, next);
            item.insert(attr::DUE_PK.into(), s(pk));
            item.insert(attr::DUE_SK.into(), s(sk));
        }
    }
    item
}

/// `cn-holidays@3,acme@1`: a job's business calendar chain, root first (ids never hold `@`
/// or `,`).
pub fn encode_calendar_versions(chain: &[(String, u64)]) -> String {
    chain.iter().map(|(id, v)| format!("{id}@{v}")).collect::<Vec<_>>().join(",")
}

/// The chain of [`encode_calendar_versions`].
pub fn decode_calendar_versions(text: &str) -> Option<Vec<(String, u64)>> {
    text.split(',')
        .map(|p| {
            let (id, v) = p.split_once('@')?;
            Some((id.to_string(), v.parse().ok()?))
        })
        .collect()
}

/// The immutable snapshot item of a job's current version (`sk = V#{version}`): the definition
/// without the trigger position and index keys, so no index holds snapshots.
pub fn job_version_item(job: &Job) -> Item {
    let mut item = job_to_item(job);
    item.insert(attr::SK.into(), s(keys::job_version_sk(job.version)));
    for a in [attr::DUE_PK, attr::DUE_SK, attr::TENANT_PK, attr::TENANT_SK, attr::NEXT] {
        item.remove(a);
    }
    item
}

/// The `due` index keys of a job whose next fire is `next`.
pub fn due_keys(job: &Job, next: DateTime<Utc>) -> (String, String) {
    let pk = match job.due_class {
        DueClass::Admission => keys::admission_bucket(job.shard),
        DueClass::Every => keys::every_bucket(job.shard),
        DueClass::Bucket => keys::due_bucket(keys::minute_of(next), job.shard),
        DueClass::Daily(minute_of_day) => keys::daily_bucket(minute_of_day, job.shard),
    };
    (pk, keys::due_sk(next.timestamp_millis(), &job.tenant, &job.job_id))
}

/// Decodes a job's definition item.
pub fn job_from_item(item: &Item) -> Result<Job, DecodeError> {
    let state = match get_s(item, attr::STATE)? {
        "ENABLED" => JobState::Enabled,
        "PAUSED" => JobState::Paused,
        "DELETED" => JobState::Deleted,
        "COMPLETED" => JobState::Completed,
        other => return Err(DecodeError { attr: attr::STATE, reason: format!("unknown state {other:?}") }),
    };
    Ok(Job {
        tenant: get_s(item, attr::TENANT)?.to_string(),
        job_id: get_s(item, attr::JOB)?.to_string(),
        version: get_n(item, attr::VERSION)? as u64,
        state,
        definition: def_of(item)?,
        anchor: ms_to_dt(get_n(item, attr::ANCHOR)?),
        next_fire_at: get_n_opt(item, attr::NEXT)?.map(ms_to_dt),
        shard: get_n(item, attr::SHARD)? as u32,
        due_class: match item.get(attr::EVERY).and_then(|v| v.as_s().ok()).map(String::as_str) {
            Some("E") => DueClass::Every,
            Some("B") => DueClass::Bucket,
            // The slot is the UTC minute of day of the stored next fire (set together).
            Some("D") => match get_n_opt(item, attr::NEXT)? {
                Some(next) => DueClass::Daily(keys::minute_of_day(next.div_euclid(60_000))),
                None => DueClass::Admission,
            },
            _ => DueClass::Admission,
        },
        created_at: ms_to_dt(get_n(item, attr::CREATED)?),
        updated_at: ms_to_dt(get_n(item, attr::UPDATED)?),
        // Items written before these attributes existed: the definition dates from creation.
        edited_at: ms_to_dt(get_n_opt(item, attr::EDITED)?.unwrap_or(get_n(item, attr::CREATED)?)),
        // Every job item has carried the release since the first one; "unknown" keeps an item
        // readable (the report lists it as a release it has no rules for) should one lack it.
        tzdb_version: match item.get(attr::TZDB) {
            Some(v) => {
                v.as_s().map_err(|_| DecodeError { attr: attr::TZDB, reason: "not a string".into() })?.clone()
            }
            None => "unknown".into(),
        },
        paused: get_n_opt(item, attr::PAUSED_FROM)?
            .map(|f| Ok::<_, DecodeError>((ms_to_dt(f), get_n_opt(item, attr::PAUSED_UNTIL)?.map(ms_to_dt))))
            .transpose()?,
        calendar_versions: match item.get(attr::CALENDARS).and_then(|v| v.as_s().ok()) {
            Some(text) => decode_calendar_versions(text).ok_or(DecodeError {
                attr: attr::CALENDARS,
                reason: format!("not id@version,...: {text:?}"),
            })?,
            None => Vec::new(),
        },
        replanned_at: get_n_opt(item, attr::REPLANNED)?.map(ms_to_dt),
        committed_per_hour: get_n_opt(item, attr::COMMITTED)?.map_or(0, |v| v.max(0) as u64),
    })
}

/// A `fireOnce` batch's cover item (`DEF#B#{first ms}` on its job's partition, in the jobs
/// table): `cth` its last instant (ms), `expires_at` its TTL (epoch seconds).
pub fn batch_cover_item(
    tenant: &str,
    job_id: &str,
    cover: sundial_model::BatchCover,
    expires_at: i64,
) -> Item {
    let mut item = Item::new();
    item.insert(attr::PK.into(), s(keys::job_pk(tenant, job_id)));
    item.insert(attr::SK.into(), s(keys::batch_cover_sk(cover.first.timestamp_millis())));
    item.insert(attr::COVER_THROUGH.into(), n(cover.through.timestamp_millis()));
    item.insert(attr::EXPIRES.into(), n(expires_at));
    item
}

/// Decodes a cover item; `None` for any other item (none other sorts under `DEF#`).
pub fn batch_cover_from_item(item: &Item) -> Result<Option<sundial_model::BatchCover>, DecodeError> {
    let sk = get_s(item, attr::SK)?;
    let Some(first) = sk.strip_prefix(keys::JOB_DEF_SK).and_then(|r| r.strip_prefix("#B#")) else {
        return Ok(None);
    };
    let first = first
        .parse::<i64>()
        .map_err(|_| DecodeError { attr: attr::SK, reason: format!("not a batch cover key: {sk:?}") })?;
    let through = get_n(item, attr::COVER_THROUGH)?;
    Ok(Some(sundial_model::BatchCover { first: ms_to_dt(first), through: ms_to_dt(through) }))
}

/// A job's batch registry (`keys::BATCH_REGISTRY_SK`): its version and its batches in the order
/// they settled, each with the epoch second until which it is kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchRegistry {
    /// 0 when there is no registry item yet.
    pub version: u64,
    /// In registration order.
    pub batches: Vec<(sundial_model::BatchCover, i64)>,
}

/// Encodes a registry at `version` for `tenant`'s `job_id`.
pub fn batch_registry_item(
    tenant: &str,
    job_id: &str,
    version: u64,
    batches: &[(sundial_model::BatchCover, i64)],
) -> Item {
    use aws_sdk_dynamodb::types::AttributeValue;
    let list = batches
        .iter()
        .map(|(c, x)| {
            AttributeValue::M(HashMap::from([
                ("f".to_string(), n(c.first.timestamp_millis())),
                ("t".to_string(), n(c.through.timestamp_millis())),
                ("x".to_string(), n(*x)),
            ]))
        })
        .collect();
    HashMap::from([
        (attr::PK.into(), s(keys::job_pk(tenant, job_id))),
        (attr::SK.into(), s(keys::BATCH_REGISTRY_SK)),
        (attr::REGISTRY_VERSION.into(), n(version)),
        (attr::REGISTERED.into(), AttributeValue::L(list)),
    ])
}

/// Decodes a registry item.
pub fn batch_registry_from_item(item: &Item) -> Result<BatchRegistry, DecodeError> {
    let version = u64::try_from(get_n(item, attr::REGISTRY_VERSION)?)
        .map_err(|_| DecodeError { attr: attr::REGISTRY_VERSION, reason: "negative".into() })?;
    let bad = |reason: &str| DecodeError { attr: attr::REGISTERED, reason: reason.into() };
    let list =
        item.get(attr::REGISTERED).and_then(|v| v.as_l().ok()).ok_or_else(|| bad("missing or not a list"))?;
    let mut batches = Vec::with_capacity(list.len());
    for entry in list {
        let m = entry.as_m().map_err(|_| bad("an entry is not a map"))?;
        let num = |k: &str| {
            m.get(k)
                .and_then(|v| v.as_n().ok())
                .and_then(|v| v.parse::<i64>().ok())
                .ok_or_else(|| bad("an entry lacks f, t or x"))
        };
        let cover = sundial_model::BatchCover { first: ms_to_dt(num("f")?), through: ms_to_dt(num("t")?) };
        batches.push((cover, num("x")?));
    }
    Ok(BatchRegistry { version, batches })
}

#[cfg(test)]
mod registry_tests {
    use super::*;

    #[test]
    fn a_batch_registry_round_trips_in_order_and_a_bad_one_names_its_attribute() {
        let c = |f: i64, t: i64| sundial_model::BatchCover { first: ms_to_dt(f), through: ms_to_dt(t) };
        let batches = vec![(c(120_000, 600_000), 99), (c(0, 240_000), 98)];
        let item = batch_registry_item("acme", "j", 3, &batches);
        assert_eq!(batch_registry_from_item(&item).ok(), Some(BatchRegistry { version: 3, batches }));
        let mut bad = item.clone();
        bad.insert(attr::REGISTERED.into(), s("x"));
        assert_eq!(batch_registry_from_item(&bad).err().map(|e| e.attr), Some(attr::REGISTERED));
    }
}
