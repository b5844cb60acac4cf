//! The codec of execution items: the execution, its audit timeline, the attributes only the
//! execution plane writes ([`Snapshot`]), a parent's tally and a map-reduce state.

use super::{attr, get_n, get_n_opt, get_s, job::def_of, ms_to_dt, n, s, DecodeError, Item};
use crate::executions::Snapshot;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use sundial_model::keys;
use sundial_model::mapreduce::{MapState, Phase};
use sundial_model::{AuditEvent, ExecStatus, Execution};

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
    if !e.missed_except.is_empty() {
        item.insert(
            attr::MISSED_EXCEPT.into(),
            AttributeValue::Ns(e.missed_except.iter().map(|t| t.timestamp_millis().to_string()).collect()),
        );
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
    family_attrs(&mut item, e);
    if let Some(at) = sundial_model::reconcile::first_look(e) {
        item.insert(attr::OPEN_PK.into(), s(keys::open_partition(keys::open_part(&e.tenant, &e.job_id))));
        item.insert(attr::OPEN_DUE.into(), n(at));
    }
    item
}

/// The attributes of an execution's place in a fan-out (`docs/children.md`) or a map-reduce
/// (`docs/mapreduce.md`): a child's tag, a parent's tally, a map-reduce state.
fn family_attrs(item: &mut Item, e: &Execution) {
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
    let wait_gen = get_n_opt(item, attr::WAIT_GEN).ok().flatten().map_or(0, |v| v.max(0) as u64);
    let wait_gen_sent =
        get_n_opt(item, attr::WAIT_GEN_SENT).ok().flatten().map_or(wait_gen, |v| v.max(0) as u64);
    let looked_done = get_n_opt(item, attr::MAP_LOOKED).ok().flatten().map(|v| v.max(0) as u64);
    let checked_through = item.get(attr::MAP_CHECKED).and_then(|v| v.as_s().ok()).cloned();
    let mut outbox: Vec<String> =
        item.get(attr::OUTBOX).and_then(|v| v.as_ss().ok()).cloned().unwrap_or_default();
    outbox.sort();
    Ok(Snapshot {
        exec,
        checkpoint,
        total_run_ms,
        digest,
        open_due,
        resends,
        held,
        missed_at,
        wait_gen,
        wait_gen_sent,
        looked_done,
        checked_through,
        outbox,
        finish_missed_at: get_n_opt(item, attr::FINISH_MISSED).ok().flatten(),
    })
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
        missed_except: missed_except_of(item),
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

/// A batch's excepted instants (`mx`), ascending.
fn missed_except_of(item: &Item) -> Vec<DateTime<Utc>> {
    let mut v: Vec<i64> = match item.get(attr::MISSED_EXCEPT) {
        Some(AttributeValue::Ns(ns)) => ns.iter().filter_map(|x| x.parse().ok()).collect(),
        _ => Vec::new(),
    };
    v.sort_unstable();
    v.into_iter().map(ms_to_dt).collect()
}

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
