//! DynamoDB item codecs for [`Job`] and [`Execution`].
//!
//! Attribute names are short on purpose: DynamoDB bills each write per started KiB of the whole
//! item (and an UpdateItem bills the larger of the before and after images), so an execution
//! whose audit timeline and snapshot stay under 1 KiB costs one write unit per transition.

use super::executions::Snapshot;
use super::slots::{RunningSet, Slot};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, TimeZone, Utc};
use std::collections::HashMap;
use sundial_model::keys;
use sundial_model::{
    AuditEvent, DueClass, ExecStatus, Execution, Job, JobDefinition, JobState, OpsAction, OpsEntry,
};

/// A DynamoDB item.
pub type Item = HashMap<String, AttributeValue>;

/// Attribute names shared by the codecs and the conditional expressions.
pub mod attr {
    #![allow(missing_docs)]
    pub const PK: &str = "pk";
    pub const SK: &str = "sk";
    pub const TENANT: &str = "tenant";
    pub const JOB: &str = "job";
    pub const VERSION: &str = "ver";
    pub const STATE: &str = "state";
    pub const DEF: &str = "def";
    pub const ANCHOR: &str = "anchor";
    pub const NEXT: &str = "next";
    pub const SHARD: &str = "shard";
    pub const EVERY: &str = "every";
    pub const DUE_PK: &str = "due_pk";
    pub const DUE_SK: &str = "due_sk";
    pub const TENANT_PK: &str = "tenant_pk";
    pub const TENANT_SK: &str = "tenant_sk";
    pub const CREATED: &str = "created";
    pub const UPDATED: &str = "updated";
    pub const TZDB: &str = "tzdb";
    /// The business calendar chain a job's trigger position was computed with.
    pub const CALENDARS: &str = "calv";
    pub const SCHED: &str = "sched";
    pub const FIRE: &str = "fire";
    pub const STATUS: &str = "st";
    pub const ATTEMPT: &str = "att";
    pub const TOKEN: &str = "tok";
    pub const LEASE_OWNER: &str = "lo";
    pub const LEASE_UNTIL: &str = "lu";
    pub const AVAILABLE: &str = "avail";
    pub const MISSED_FROM: &str = "mf";
    pub const MISSED_TO: &str = "mt";
    pub const ERR_CODE: &str = "ec";
    pub const ERR_MSG: &str = "em";
    pub const CANCEL: &str = "cx";
    pub const TIMELINE: &str = "tl";
    pub const ATT_PK: &str = "att_pk";
    pub const ATT_SK: &str = "att_sk";
    pub const EXPIRES: &str = "expires_at";
    /// A quota counter's count.
    pub const QUOTA_USED: &str = "used";
    /// Idempotency record: request fingerprint.
    pub const IDEM_FP: &str = "idem_fp";
    /// Idempotency record: 0 running, -1 released, else the stored answer's status.
    pub const IDEM_STATE: &str = "idem_state";
    /// Idempotency record: the instant (ms) the request ran at.
    pub const IDEM_AT: &str = "idem_at";
    /// Idempotency record: lease end (ms).
    pub const IDEM_LEASE: &str = "idem_lease";
    /// Idempotency record: the lease holder's nonce.
    pub const IDEM_OWNER: &str = "idem_owner";
    /// Idempotency record: the stored answer's headers (JSON).
    pub const IDEM_HEADERS: &str = "idem_headers";
    /// Idempotency record: the stored answer's body (JSON).
    pub const IDEM_BODY: &str = "idem_body";
    pub const THROUGH: &str = "through";
    /// The last checkpoint of an execution (JSON text).
    pub const CHECKPOINT: &str = "ck";
    /// Run time of an execution's finished attempts so far (ms), for the run-time budget.
    pub const RUN_MS: &str = "rt";
    /// SHA-256 prefix of an execution's input, stored when it goes DEAD.
    pub const DIGEST: &str = "dg";
    /// A job slot's holder (the scheduled ms of the execution holding it).
    pub const SLOT_HOLDER: &str = "h";
    /// A job slot's latest released execution (scheduled ms).
    pub const SLOT_RELEASED: &str = "dn";
    /// A tenant gate's running executions: a map of execution id to lease end (ms).
    pub const RUNNING: &str = "hs";
    /// A tenant gate's version, checked by every rewrite of its map.
    pub const GATE_VERSION: &str = "v";
    /// When a job's current definition took effect (ms).
    pub const EDITED: &str = "edited";
    /// A job's last pause: its start (ms).
    pub const PAUSED_FROM: &str = "pf";
    /// A job's last pause: its end, once resumed (ms).
    pub const PAUSED_UNTIL: &str = "pu";
    /// `open` index partition key (`OPEN#{part}`), present while an execution is not final.
    pub const OPEN_PK: &str = "open_pk";
    /// `open` index sort key: when the reconciler should look at the execution (ms).
    pub const OPEN_DUE: &str = "open_due";
    /// Shard watermark item: the last minute the verification pass checked.
    pub const VERIFIED: &str = "vf";
    /// How many times the reconciler re-sent the execution's message.
    pub const RESENDS: &str = "rs";
    /// Set while a pause holds a queued-ahead execution (the pausing job version).
    pub const HELD: &str = "hd";
    /// When the execution was found not started past its start deadline (ms). Set once, by a
    /// conditional write: whoever sets it (the reconciler or a late worker) reports the miss.
    pub const MISSED: &str = "ms";
    /// A parent execution's child count, set by its fan-out (`docs/children.md`).
    pub const CHILDREN: &str = "kn";
    /// A parent execution's tally: a map of child tag to that child's final status.
    pub const CHILD_RESULTS: &str = "kc";
    /// A child execution's tag (`s3`, `m-eu-west-1`): marks children, so a job's listing
    /// can leave them out (a filter cannot read the sort key).
    pub const CHILD: &str = "ch";
    /// A map-reduce parent's phase (`MAP`, `WAIT`, `REDUCE`; `docs/mapreduce.md`).
    pub const MAP_PHASE: &str = "xp";
    /// A map-reduce parent's count of item children created (added by each emit transaction).
    pub const MAP_EMITTED: &str = "xe";
    /// A map-reduce parent's count of item children final (added by each child's final finish).
    pub const MAP_DONE: &str = "xd";
    /// Of those, the ones that did not succeed.
    pub const MAP_FAILED: &str = "xf";
    /// An item child's input (JSON text).
    pub const ITEM_INPUT: &str = "xi";
    /// An item child's result (JSON text), set by its succeeded finish.
    pub const ITEM_RESULT: &str = "xr";

    /// Attributes of an operations-log entry.
    pub mod ops {
        pub const AT: &str = "at";
        pub const ACTOR: &str = "by";
        pub const ACTION: &str = "op";
        pub const FROM_VERSION: &str = "fv";
        pub const TO_VERSION: &str = "tv";
        pub const EXECUTION: &str = "ex";
        pub const DETAIL: &str = "dt";
    }

    /// Keys of one audit event (a map in an execution's timeline `tl`).
    pub mod event {
        pub const AT: &str = "a";
        pub const ACTOR: &str = "by";
        pub const FROM: &str = "f";
        pub const TO: &str = "t";
        pub const ATTEMPT: &str = "n";
        pub const TOKEN: &str = "k";
        pub const CODE: &str = "c";
    }
}

/// Index names, from `resources.json` through [`sundial_model::resources`]. Each is found by its
/// partition key attribute, which the codec names anyway, so no index name is a literal here.
pub mod index {
    use super::attr;
    use crate::StoreError;
    use sundial_model::resources::Resources;

    fn keyed_by(pk_attr: &str) -> Result<&'static str, StoreError> {
        Resources::get()
            .tables
            .values()
            .flat_map(|t| &t.indexes)
            .find(|ix| ix.partition_key.name == pk_attr)
            .map(|ix| ix.name.as_str())
            .ok_or_else(|| StoreError::Permanent {
                op: "Query",
                message: format!("resources.json defines no index keyed by {pk_attr}"),
            })
    }

    /// The jobs table's sparse index of enabled jobs by time bucket (`due_pk`, `due_sk`).
    pub fn due() -> Result<&'static str, StoreError> {
        keyed_by(attr::DUE_PK)
    }

    /// The jobs table's keys-only index of a tenant's jobs (`tenant_pk`, `tenant_sk`).
    pub fn by_tenant() -> Result<&'static str, StoreError> {
        keyed_by(attr::TENANT_PK)
    }

    /// The executions table's sparse index of off-happy-path executions (`att_pk`, `att_sk`).
    pub fn attention() -> Result<&'static str, StoreError> {
        keyed_by(attr::ATT_PK)
    }

    /// Open executions by the instant the reconciler should look at them.
    pub fn open() -> Result<&'static str, StoreError> {
        keyed_by(attr::OPEN_PK)
    }
}

/// A stored item that does not decode: a bug or a hand edit, never user input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("stored item attribute {attr}: {reason}")]
pub struct DecodeError {
    /// The attribute.
    pub attr: &'static str,
    /// Why.
    pub reason: String,
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}
/// A number attribute.
pub fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn get_s<'a>(item: &'a Item, a: &'static str) -> Result<&'a str, DecodeError> {
    item.get(a)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
        .ok_or(DecodeError { attr: a, reason: "missing or not a string".into() })
}
pub(super) fn get_n_opt(item: &Item, a: &'static str) -> Result<Option<i64>, DecodeError> {
    match item.get(a) {
        None | Some(AttributeValue::Null(_)) => Ok(None),
        Some(v) => v
            .as_n()
            .ok()
            .and_then(|x| x.parse::<i64>().ok())
            .map(Some)
            .ok_or(DecodeError { attr: a, reason: "not an integer".into() }),
    }
}
fn get_n(item: &Item, a: &'static str) -> Result<i64, DecodeError> {
    get_n_opt(item, a)?.ok_or(DecodeError { attr: a, reason: "missing".into() })
}
/// Epoch ms to an instant.
pub fn ms_to_dt(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).single().unwrap_or(DateTime::<Utc>::MIN_UTC)
}
fn def_of(item: &Item) -> Result<JobDefinition, DecodeError> {
    serde_json::from_str(get_s(item, attr::DEF)?)
        .map_err(|e| DecodeError { attr: attr::DEF, reason: e.to_string() })
}
/// The stored name of a job state.
pub fn state_str(s: JobState) -> &'static str {
    match s {
        JobState::Enabled => "ENABLED",
        JobState::Paused => "PAUSED",
        JobState::Deleted => "DELETED",
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
    })
}

/// Encodes one audit event.
pub fn audit_to_av(e: &AuditEvent) -> AttributeValue {
    use attr::event;
    let mut m = HashMap::from([
        (event::AT.to_string(), n(e.at)),
        (event::ACTOR.to_string(), s(&e.actor)),
        (event::TO.to_string(), s(e.to.as_str())),
        (event::ATTEMPT.to_string(), n(e.attempt)),
        (event::TOKEN.to_string(), n(e.token)),
    ]);
    if let Some(f) = e.from {
        m.insert(event::FROM.into(), s(f.as_str()));
    }
    if let Some(c) = &e.code {
        m.insert(event::CODE.into(), s(c));
    }
    AttributeValue::M(m)
}

fn audit_from_av(v: &AttributeValue) -> Result<AuditEvent, DecodeError> {
    let bad = |r: &str| DecodeError { attr: attr::TIMELINE, reason: r.to_string() };
    let m = v.as_m().map_err(|_| bad("entry is not a map"))?;
    let status = |k: &str| -> Result<Option<ExecStatus>, DecodeError> {
        match m.get(k).and_then(|v| v.as_s().ok()) {
            None => Ok(None),
            Some(x) => ExecStatus::parse(x).map(Some).ok_or_else(|| bad("unknown status")),
        }
    };
    let num = |k: &str| m.get(k).and_then(|v| v.as_n().ok()).and_then(|x| x.parse::<i64>().ok());
    use attr::event;
    Ok(AuditEvent {
        at: num(event::AT).ok_or_else(|| bad(&format!("missing {}", event::AT)))?,
        actor: m.get(event::ACTOR).and_then(|v| v.as_s().ok()).cloned().unwrap_or_default(),
        from: status(event::FROM)?,
        to: status(event::TO)?.ok_or_else(|| bad(&format!("missing {}", event::TO)))?,
        attempt: num(event::ATTEMPT).unwrap_or(0) as u32,
        token: num(event::TOKEN).unwrap_or(0) as u64,
        code: m.get(event::CODE).and_then(|v| v.as_s().ok()).cloned(),
    })
}

/// Encodes a new execution item.
pub fn execution_to_item(e: &Execution, retention_secs: i64) -> Item {
    let sched = e.scheduled_at.timestamp_millis();
    let mut item: Item = HashMap::from([
        (attr::PK.into(), s(keys::job_pk(&e.tenant, &e.job_id))),
        (
            attr::SK.into(),
            s(match &e.child {
                None => keys::exec_sk(sched),
                Some(c) => keys::exec_child_sk(sched, c),
            }),
        ),
        (attr::TENANT.into(), s(&e.tenant)),
        (attr::JOB.into(), s(&e.job_id)),
        (attr::SCHED.into(), n(sched)),
        (attr::FIRE.into(), n(e.fire_at.timestamp_millis())),
        (attr::CREATED.into(), n(e.created_at.timestamp_millis())),
        (attr::STATUS.into(), s(e.status.as_str())),
        (attr::ATTEMPT.into(), n(e.attempt)),
        (attr::TOKEN.into(), n(e.fencing_token)),
        (attr::AVAILABLE.into(), n(e.available_at)),
        (attr::VERSION.into(), n(e.def_version)),
        (attr::DEF.into(), s(serde_json::to_string(&e.definition).unwrap_or_default())),
        (attr::TIMELINE.into(), AttributeValue::L(e.timeline.iter().map(audit_to_av).collect())),
        (attr::EXPIRES.into(), n(e.created_at.timestamp() + retention_secs)),
    ]);
    if let Some((a, b)) = e.missed_range {
        item.insert(attr::MISSED_FROM.into(), n(a.timestamp_millis()));
        item.insert(attr::MISSED_TO.into(), n(b.timestamp_millis()));
    }
    if let Some(o) = &e.lease_owner {
        item.insert(attr::LEASE_OWNER.into(), s(o));
    }
    if let Some(l) = e.lease_until {
        item.insert(attr::LEASE_UNTIL.into(), n(l));
    }
    if let Some((c, m)) = &e.last_error {
        item.insert(attr::ERR_CODE.into(), s(c));
        item.insert(attr::ERR_MSG.into(), s(m));
    }
    if e.cancel_requested {
        item.insert(attr::CANCEL.into(), AttributeValue::Bool(true));
    }
    if e.status.needs_attention() {
        item.insert(attr::ATT_PK.into(), s(keys::attention_pk(&e.tenant, e.status.as_str())));
        item.insert(attr::ATT_SK.into(), s(keys::attention_sk(sched, &e.job_id)));
    }
    if let Some(c) = &e.child {
        item.insert(attr::CHILD.into(), s(c.tag()));
    }
    if let Some(t) = &e.children {
        item.insert(attr::CHILDREN.into(), n(t.total));
        item.insert(
            attr::CHILD_RESULTS.into(),
            AttributeValue::M(t.finished.iter().map(|(k, st)| (k.clone(), s(st.as_str()))).collect()),
        );
    }
    match &e.map_reduce {
        None => {}
        Some(MapState::Parent { phase, emitted, done, failed }) => {
            item.insert(attr::MAP_PHASE.into(), s(phase_str(*phase)));
            item.insert(attr::MAP_EMITTED.into(), n(*emitted));
            item.insert(attr::MAP_DONE.into(), n(*done));
            item.insert(attr::MAP_FAILED.into(), n(*failed));
        }
        Some(MapState::Item { input, result }) => {
            item.insert(attr::ITEM_INPUT.into(), s(input.to_string()));
            if let Some(r) = result {
                item.insert(attr::ITEM_RESULT.into(), s(r.to_string()));
            }
        }
    }
    if let Some(at) = sundial_model::reconcile::first_look(e) {
        item.insert(attr::OPEN_PK.into(), s(keys::open_partition(keys::open_part(&e.tenant, &e.job_id))));
        item.insert(attr::OPEN_DUE.into(), n(at));
    }
    item
}

/// The status of an execution item, if it has a known one.
pub fn status_of(item: &Item) -> Option<ExecStatus> {
    item.get(attr::STATUS).and_then(|v| v.as_s().ok()).and_then(|s| ExecStatus::parse(s))
}

/// Decodes a whole execution item: the execution and the attributes only the execution plane
/// writes (checkpoint, run time, input digest).
pub fn snapshot_from_item(item: &Item) -> Result<Snapshot, DecodeError> {
    let exec = execution_from_item(item)?;
    let checkpoint =
        item.get(attr::CHECKPOINT).and_then(|v| v.as_s().ok()).and_then(|s| serde_json::from_str(s).ok());
    let total_run_ms = get_n_opt(item, attr::RUN_MS).ok().flatten().unwrap_or(0);
    let digest = item.get(attr::DIGEST).and_then(|v| v.as_s().ok()).cloned();
    let open_due = get_n_opt(item, attr::OPEN_DUE).ok().flatten();
    let resends =
        get_n_opt(item, attr::RESENDS).ok().flatten().unwrap_or(0).clamp(0, i64::from(u32::MAX)) as u32;
    let held = get_n_opt(item, attr::HELD).ok().flatten().map(|v| v.max(0) as u64);
    let missed_at = get_n_opt(item, attr::MISSED).ok().flatten();
    Ok(Snapshot { exec, checkpoint, total_run_ms, digest, open_due, resends, held, missed_at })
}

/// Decodes an execution item.
pub fn execution_from_item(item: &Item) -> Result<Execution, DecodeError> {
    let status = get_s(item, attr::STATUS)?;
    let status = ExecStatus::parse(status)
        .ok_or(DecodeError { attr: attr::STATUS, reason: format!("unknown status {status:?}") })?;
    let timeline = match item.get(attr::TIMELINE) {
        None => Vec::new(),
        Some(v) => v
            .as_l()
            .map_err(|_| DecodeError { attr: attr::TIMELINE, reason: "not a list".into() })?
            .iter()
            .map(audit_from_av)
            .collect::<Result<_, _>>()?,
    };
    let missed = match (get_n_opt(item, attr::MISSED_FROM)?, get_n_opt(item, attr::MISSED_TO)?) {
        (Some(a), Some(b)) => Some((ms_to_dt(a), ms_to_dt(b))),
        _ => None,
    };
    let last_error = match (item.get(attr::ERR_CODE), item.get(attr::ERR_MSG)) {
        (Some(AttributeValue::S(c)), m) => {
            Some((c.clone(), m.and_then(|m| m.as_s().ok()).cloned().unwrap_or_default()))
        }
        _ => None,
    };
    Ok(Execution {
        tenant: get_s(item, attr::TENANT)?.to_string(),
        job_id: get_s(item, attr::JOB)?.to_string(),
        scheduled_at: ms_to_dt(get_n(item, attr::SCHED)?),
        fire_at: ms_to_dt(get_n(item, attr::FIRE)?),
        created_at: ms_to_dt(get_n(item, attr::CREATED)?),
        status,
        attempt: get_n(item, attr::ATTEMPT)? as u32,
        fencing_token: get_n(item, attr::TOKEN)? as u64,
        lease_owner: item.get(attr::LEASE_OWNER).and_then(|v| v.as_s().ok()).cloned(),
        lease_until: get_n_opt(item, attr::LEASE_UNTIL)?,
        available_at: get_n(item, attr::AVAILABLE)?,
        def_version: get_n(item, attr::VERSION)? as u64,
        definition: def_of(item)?,
        missed_range: missed,
        last_error,
        cancel_requested: item.get(attr::CANCEL).and_then(|v| v.as_bool().ok()).copied().unwrap_or(false),
        timeline,
        child: item
            .get(attr::SK)
            .and_then(|v| v.as_s().ok())
            .and_then(|sk| keys::parse_any_exec_sk(sk))
            .and_then(|(_, c)| c),
        children: tally_of(item),
        map_reduce: map_state_of(item),
    })
}

use sundial_model::mapreduce::{MapState, Phase};

/// The stored name of a map-reduce phase.
pub fn phase_str(p: Phase) -> &'static str {
    match p {
        Phase::Map => "MAP",
        Phase::Wait => "WAIT",
        Phase::Reduce => "REDUCE",
    }
}

/// A map-reduce parent's or item child's state ([`MapState`]), if it is one.
pub fn map_state_of(item: &Item) -> Option<MapState> {
    let num = |a: &'static str| get_n_opt(item, a).ok().flatten().unwrap_or(0).max(0) as u64;
    let json = |a: &str| {
        item.get(a)
            .and_then(|v| v.as_s().ok())
            .map(|t| serde_json::from_str(t).unwrap_or(serde_json::Value::Null))
    };
    if let Some(p) = item.get(attr::MAP_PHASE).and_then(|v| v.as_s().ok()) {
        let phase = match p.as_str() {
            "WAIT" => Phase::Wait,
            "REDUCE" => Phase::Reduce,
            _ => Phase::Map,
        };
        return Some(MapState::Parent {
            phase,
            emitted: num(attr::MAP_EMITTED),
            done: num(attr::MAP_DONE),
            failed: num(attr::MAP_FAILED),
        });
    }
    let input = json(attr::ITEM_INPUT)?;
    Some(MapState::Item { input, result: json(attr::ITEM_RESULT) })
}

/// A parent's tally ([`sundial_model::children::Tally`]), if it fanned out.
pub fn tally_of(item: &Item) -> Option<sundial_model::children::Tally> {
    let total = get_n_opt(item, attr::CHILDREN).ok().flatten()?;
    let finished = item
        .get(attr::CHILD_RESULTS)
        .and_then(|v| v.as_m().ok())
        .map(|m| {
            m.iter().filter_map(|(k, v)| Some((k.clone(), ExecStatus::parse(v.as_s().ok()?)?))).collect()
        })
        .unwrap_or_default();
    Some(sundial_model::children::Tally { total: total.clamp(0, i64::from(u32::MAX)) as u32, finished })
}

/// Decodes a job slot item (an absent item is a free slot).
pub fn slot_from_item(item: &Item) -> Slot {
    Slot {
        holder: get_n_opt(item, attr::SLOT_HOLDER).ok().flatten(),
        released: get_n_opt(item, attr::SLOT_RELEASED).ok().flatten(),
    }
}

/// Decodes a tenant gate item (an absent item is an empty set with no version).
pub fn running_from_item(item: &Item) -> RunningSet {
    let leases = item
        .get(attr::RUNNING)
        .and_then(|v| v.as_m().ok())
        .map(|m| {
            m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_n().ok()?.parse::<i64>().ok()?))).collect()
        })
        .unwrap_or_default();
    RunningSet { leases, version: get_n_opt(item, attr::GATE_VERSION).ok().flatten() }
}

/// The scanned-through minute of a shard watermark item.
pub fn watermark_from_item(item: &Item) -> Option<i64> {
    get_n_opt(item, attr::THROUGH).ok().flatten()
}

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

    #[test]
    fn index_names_come_from_resources_json_by_their_key_attributes() {
        use sundial_model::resources::Resources;
        let indexes: Vec<_> = Resources::get().tables.values().flat_map(|t| &t.indexes).collect();
        for (name, pk, sk) in [
            (index::due(), attr::DUE_PK, attr::DUE_SK),
            (index::by_tenant(), attr::TENANT_PK, attr::TENANT_SK),
            (index::attention(), attr::ATT_PK, attr::ATT_SK),
            (index::open(), attr::OPEN_PK, attr::OPEN_DUE),
        ] {
            let name = name.unwrap_or_else(|e| panic!("{e}"));
            let ix = indexes.iter().find(|i| i.name == name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!((ix.partition_key.name.as_str(), ix.sort_key.name.as_str()), (pk, sk));
        }
        assert_eq!(indexes.len(), 4, "an index without an accessor in store::items::index");
    }

    #[test]
    fn key_and_ttl_attributes_match_resources_json() {
        use sundial_model::resources::Resources;
        for t in Resources::get().tables.values() {
            assert_eq!((t.partition_key.name.as_str(), t.sort_key.name.as_str()), (attr::PK, attr::SK));
            assert_eq!(t.ttl_attribute, attr::EXPIRES);
        }
    }
}
