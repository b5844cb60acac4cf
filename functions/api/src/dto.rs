//! JSON views of the domain types (camelCase, RFC 3339 UTC instants), and request bodies.
//!
//! Responses are built here rather than by deriving `Serialize` on the model, so the stored
//! shapes and the public ones can change independently.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Deserialize;
use serde_json::{json, Value};
use sundial_core::control::calendars::CalendarView;
use sundial_core::control::jobs::JobView;
use sundial_core::model::OpsEntry;
use sundial_core::model::{ExecStatus, Execution, Job, JobState};
use sundial_core::schedule::{PreviewFire, ScheduleSpec};
use sundial_core::store::calendars::StoredCalendar;
use sundial_core::store::items::ms_to_dt;

/// An instant as RFC 3339 UTC with milliseconds.
pub fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn time_ms(ms: i64) -> String {
    time(ms_to_dt(ms))
}

/// The stored state's public name.
pub fn state(s: JobState) -> &'static str {
    match s {
        JobState::Enabled => "ENABLED",
        JobState::Paused => "PAUSED",
        JobState::Deleted => "DELETED",
    }
}

/// The ETag of a job version: `"{version}"`.
pub fn etag(version: u64) -> String {
    format!("\"{version}\"")
}

/// A job as read at `now`: its `nextFireAt` is the real next fire
/// ([`sundial_core::control::upcoming::next_fire`]), also for jobs whose stored position lags.
pub fn job_at(j: &Job, now: DateTime<Utc>) -> Value {
    let schedule = sundial_core::trigger::cache::schedule_of(j).ok();
    let mut v = job(j);
    v["nextFireAt"] =
        sundial_core::control::upcoming::next_fire(j, schedule.as_deref(), now).map(time).into();
    v
}

/// A job as stored (a version snapshot, or a job just written, whose position is fresh).
pub fn job(j: &Job) -> Value {
    let mut v = json!({
        "jobId": j.job_id,
        "version": j.version,
        "etag": etag(j.version),
        "state": state(j.state),
        "definition": j.definition,
        "nextFireAt": if j.state == JobState::Enabled { j.next_fire_at.map(time) } else { None },
        "createdAt": time(j.created_at),
        "updatedAt": time(j.updated_at),
        "tzdbVersion": j.tzdb_version,
    });
    if !j.calendar_versions.is_empty() {
        v["calendarVersions"] = j
            .calendar_versions
            .iter()
            .map(|(c, n)| json!({"calendar": c, "version": n}))
            .collect::<Vec<_>>()
            .into();
    }
    v
}

/// A business calendar version.
pub fn calendar(c: &StoredCalendar) -> Value {
    json!({
        "calendarId": c.id,
        "version": c.version,
        "etag": etag(c.version),
        "definition": c.spec,
        "createdAt": time(c.created_at),
        "updatedAt": time(c.updated_at),
    })
}

/// One page of the tzdb upgrade report.
pub fn tz_report(r: &sundial_core::control::tzreport::TzReport) -> Value {
    let items: Vec<Value> = r
        .page
        .items
        .iter()
        .map(|j| {
            json!({
                "jobId": j.job_id,
                "timezone": j.timezone,
                "recordedTzdbVersion": j.recorded,
                "status": j.status.as_str(),
                "reason": j.reason,
                "changes": j.changes.iter().map(|c| json!({
                    "localTime": c.local_time.format("%Y-%m-%dT%H:%M:%S").to_string(),
                    "oldAt": c.old_at.map(time),
                    "newAt": c.new_at.map(time),
                    "shiftSecs": c.shift_secs(),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "compiledTzdbVersion": r.compiled,
        "fires": r.fires,
        "examined": r.examined,
        "items": items,
        "nextCursor": r.page.next,
    })
}

/// A calendar after a put, with the jobs it re-planned.
pub fn calendar_view(v: &CalendarView) -> Value {
    json!({"calendar": calendar(&v.calendar), "replannedJobs": v.replanned})
}

/// The answer of a preview: the fires, and (for a draft with a business calendar) the rolled
/// and the skipped ones with their reasons.
pub fn preview(fires: &[PreviewFire], explained: bool) -> Value {
    let mut at = Vec::new();
    let mut rolled = Vec::new();
    let mut skipped = Vec::new();
    for f in fires {
        match f {
            PreviewFire::Fire { at: t, rolled_from, reason } => {
                at.push(time(*t));
                if let (Some(from), Some(r)) = (rolled_from, reason) {
                    rolled.push(json!({"at": time(*t), "rolledFrom": time(*from), "reason": r}));
                }
            }
            PreviewFire::Skipped { at: t, reason } => skipped.push(json!({"at": time(*t), "reason": reason})),
        }
    }
    if explained {
        json!({"fires": at, "rolled": rolled, "skipped": skipped})
    } else {
        json!({"fires": at})
    }
}

/// A job after a change, with its next fires (and what the change cancelled).
pub fn job_view(v: &JobView) -> Value {
    json!({
        "job": job(&v.job),
        "nextFires": v.next_fires.iter().map(|t| time(*t)).collect::<Vec<_>>(),
        "canceledExecutions": v.canceled,
        "heldExecutions": v.held,
        "amendedExecutions": v.amended,
        "releasedExecutions": v.released,
    })
}

/// When the first attempt started and the last one ended (from the timeline).
fn started_finished(e: &Execution) -> (Option<i64>, Option<i64>) {
    let started = e.timeline.iter().find(|ev| ev.to == ExecStatus::Running).map(|ev| ev.at);
    let finished = if e.status.is_terminal() { e.timeline.last().map(|ev| ev.at) } else { None };
    (started, finished)
}

/// An execution's worker log lines (`GET /v1/executions/{id}/logs`): `captured` says whether
/// this API keeps lines at all (the local run does; the Lambda answers the Insights link).
pub fn exec_logs(
    id: &str,
    captured: bool,
    lines: &[crate::exec_logs::LogLine],
    insights: Option<String>,
) -> Value {
    json!({
        "executionId": id,
        "captured": captured,
        "lines": lines.iter().map(|l| json!({
            "at": l.at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "level": l.level,
            "message": l.message,
        })).collect::<Vec<_>>(),
        "logsInsightsUrl": insights,
    })
}

/// An execution; with `timeline`, its full audit trail.
pub fn execution(e: &Execution, timeline: bool) -> Value {
    let (started, finished) = started_finished(e);
    let mut v = json!({
        "executionId": e.id(),
        "jobId": e.job_id,
        "status": e.status.as_str(),
        "scheduledAt": time(e.scheduled_at),
        "fireAt": time(e.fire_at),
        "createdAt": time(e.created_at),
        "startedAt": started.map(time_ms),
        "finishedAt": finished.map(time_ms),
        "startLagMs": started.map(|s| s - e.fire_at.timestamp_millis()),
        "attempt": e.attempt,
        "fencingToken": e.fencing_token,
        "definitionVersion": e.def_version,
        "leaseOwner": e.lease_owner,
        "leaseUntil": e.lease_until.map(time_ms),
        "availableAt": time_ms(e.available_at),
        "cancelRequested": e.cancel_requested,
        "missedRange": e.missed_range.map(|(a, b)| json!({"from": time(a), "to": time(b)})),
        "lastError": e.last_error.as_ref().map(|(c, m)| json!({"code": c, "message": m})),
    });
    // Parents and children (docs/children.md): only on the executions they concern.
    if let Some(c) = &e.child {
        v["parentExecutionId"] =
            json!(sundial_core::keys::execution_id(&e.job_id, e.scheduled_at.timestamp_millis()));
        v["child"] = child(c, e.definition.shards);
    }
    if let Some(t) = &e.children {
        let failed: Vec<&String> =
            t.finished.iter().filter(|(_, st)| **st != ExecStatus::Succeeded).map(|(tag, _)| tag).collect();
        v["children"] = json!({
            "total": t.total,
            "finished": t.finished.len(),
            "succeeded": t.finished.values().filter(|st| **st == ExecStatus::Succeeded).count(),
            "failed": failed,
        });
    }
    // Map-reduce (docs/mapreduce.md): a parent's phase and counts, an item's input and result.
    match &e.map_reduce {
        Some(MapState::Parent { phase, emitted, done, failed }) => {
            v["mapReduce"] = json!({"phase": phase, "emitted": emitted, "done": done, "failed": failed});
        }
        Some(MapState::Item { input, result }) => {
            v["mapReduce"] = json!({"input": input, "result": result});
        }
        None => {}
    }
    if timeline {
        v["definition"] = json!(e.definition);
        v["timeline"] = Value::Array(
            e.timeline
                .iter()
                .map(|ev| {
                    json!({
                        "at": time_ms(ev.at),
                        "actor": ev.actor,
                        "from": ev.from.map(|s| s.as_str()),
                        "to": ev.to.as_str(),
                        "attempt": ev.attempt,
                        "token": ev.token,
                        "code": ev.code,
                    })
                })
                .collect(),
        );
    }
    v
}

use sundial_core::execution::mapreduce::MapState;

/// Which child an execution is: its kind and position.
fn child(c: &sundial_core::execution::children::ChildKey, shards: Option<u32>) -> Value {
    use sundial_core::execution::children::ChildKey;
    match c {
        ChildKey::Shard(i) => json!({"kind": "shard", "tag": c.tag(), "shardIndex": i, "shardTotal": shards}),
        ChildKey::Member(m) => json!({"kind": "member", "tag": c.tag(), "member": m}),
        ChildKey::Item(k) => json!({"kind": "item", "tag": c.tag(), "item": k}),
        _ => json!({"kind": "other", "tag": c.tag()}),
    }
}

/// An operations-log entry.
pub fn ops(e: &OpsEntry) -> Value {
    json!({
        "at": time(e.at),
        "actor": e.actor,
        "action": e.action.as_str(),
        "jobId": e.job_id,
        "fromVersion": e.from_version,
        "toVersion": e.to_version,
        "executionId": e.execution_id,
        "detail": e.detail,
    })
}

/// A page of a list.
pub fn page(items: Vec<Value>, next: Option<String>) -> Value {
    json!({"items": items, "nextCursor": next})
}

/// `POST /v1/preview`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreviewBody {
    /// The draft schedule.
    pub schedule: ScheduleSpec,
    /// How many fires (1-1000, default 10).
    #[serde(default)]
    pub count: Option<u32>,
    /// Fires strictly after this instant (default: now).
    #[serde(default, deserialize_with = "sundial_core::instant::bounded_opt")]
    pub after: Option<DateTime<Utc>>,
}

/// `POST /v1/jobs/{jobId}/backfill`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackfillBody {
    /// First instant (inclusive).
    #[serde(deserialize_with = "sundial_core::instant::bounded")]
    pub from: DateTime<Utc>,
    /// Last instant (inclusive).
    #[serde(deserialize_with = "sundial_core::instant::bounded")]
    pub to: DateTime<Utc>,
    /// Seconds between two backfilled executions (default 1).
    #[serde(default)]
    pub pace_secs: Option<u32>,
}

/// `POST /v1/dlq/replay`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplayBody {
    /// The executions to replay.
    pub execution_ids: Vec<String>,
    /// Why (recorded in each replay's operations log entry, `detail`). Absent or a string; `null`
    /// is refused like any other wrong type.
    #[serde(default, deserialize_with = "some_string")]
    pub reason: Option<String>,
}

fn some_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d).map(Some)
}

/// `GET /v1/jobs/{jobId}/upcoming`: the fires of a window and the transitions they cross.
pub fn upcoming(
    u: &sundial_core::control::upcoming::Upcoming,
    timezone: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Value {
    use sundial_core::control::upcoming::Shift;
    let local = |t: chrono::NaiveDateTime| t.format("%Y-%m-%dT%H:%M:%S").to_string();
    json!({
        "timezone": timezone,
        "from": time(from),
        "to": time(to),
        "fires": u.fires.iter().map(|t| time(*t)).collect::<Vec<_>>(),
        "truncated": u.truncated,
        "transitions": u.transitions.iter().map(|t| json!({
            "at": time(t.at),
            "kind": match t.kind { Shift::Gap => "gap", Shift::Overlap => "overlap" },
            "offsetBeforeSecs": t.offset_before,
            "offsetAfterSecs": t.offset_after,
            "localFrom": local(t.local_from),
            "localTo": local(t.local_to),
            "note": t.note,
            "affected": t.affected.iter().map(|a| json!({
                "localTime": local(a.local),
                "at": a.at.map(time),
                "note": a.note,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// `PUT /v1/resources/{resource}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceBody {
    /// Executions that may hold the resource at once, across all tenants (0-10000; checked by
    /// the control plane, so a negative number is named by its field too).
    pub limit: i64,
    /// Most units one tenant may hold at once (1 to `limit`; absent: half the limit rounded up;
    /// `null` is refused, like every other optional field).
    #[serde(default, deserialize_with = "sundial_core::model::not_null")]
    pub per_tenant: Option<i64>,
}

/// A resource limit. `operator`: the caller is an operator (sees who set it).
pub fn resource(r: &sundial_core::store::resource_limits::ResourceLimit, operator: bool) -> Value {
    let mut v = json!({
        "resource": r.name, "limit": r.limit, "perTenant": r.share(), "version": r.version,
        "updatedAt": time(r.updated_at),
    });
    if operator {
        v["updatedBy"] = json!(r.updated_by);
    }
    v
}

/// A resource limit with its live holders, for operators only: their count and execution ids
/// (other tenants' included; even the count would show other tenants' activity).
pub fn resource_view(v: &sundial_core::control::resource_limits::ResourceView) -> Value {
    let mut out = resource(&v.limit, v.operator);
    if v.operator {
        out["holding"] = json!(v.holders.len());
        out["holders"] =
            v.holders.iter().map(|(id, lu)| json!({"executionId": id, "leaseUntil": time_ms(*lu)})).collect();
    }
    out
}
