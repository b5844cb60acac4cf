//! The domain's values as the API's wire types ([`sundial_api_types`]).
//!
//! Answers are built here rather than by deriving `Serialize` on the model, so the stored
//! shapes and the public ones can change independently; the wire types are the contract.

use chrono::{DateTime, Utc};
use sundial_api_types as wire;
use sundial_core::control::calendars::CalendarView;
use sundial_core::control::fire_calendar::FireFacts;
use sundial_core::control::jobs::JobView;
use sundial_core::execution::mapreduce::{MapState, Phase};
use sundial_model::children::ChildKey;
use sundial_model::{ExecStatus, Execution, Job, JobState, OpsEntry};
use sundial_schedule::{FireOrigin, PreviewFire, ScheduleSpec};
use sundial_store::calendars::StoredCalendar;
use sundial_store::items::ms_to_dt;

/// The ETag of a version: `"{version}"`.
pub fn etag(version: u64) -> String {
    format!("\"{version}\"")
}

/// A job as read at `now`: its `nextFireAt` is the real next fire
/// ([`sundial_core::control::upcoming::next_fire`]), also for jobs whose stored position lags.
pub fn job_at(j: &Job, now: DateTime<Utc>) -> wire::Job {
    let schedule = sundial_core::trigger::cache::schedule_of(j).ok();
    let mut v = job(j);
    v.next_fire_at = sundial_core::control::upcoming::next_fire(j, schedule.as_deref(), now);
    v
}

/// A job as stored (a version snapshot, or a job just written, whose position is fresh).
pub fn job(j: &Job) -> wire::Job {
    wire::Job {
        job_id: j.job_id.clone(),
        version: j.version,
        etag: etag(j.version),
        state: j.state,
        definition: j.definition.clone(),
        next_fire_at: if j.state == JobState::Enabled { j.next_fire_at } else { None },
        created_at: j.created_at,
        updated_at: j.updated_at,
        tzdb_version: j.tzdb_version.clone(),
        calendar_versions: j
            .calendar_versions
            .iter()
            .map(|(c, n)| wire::CalendarVersion { calendar: c.clone(), version: *n })
            .collect(),
        runs: None,
    }
}

/// A job after a change, with its next fires (and what the change did to queued fires).
pub fn job_view(v: &JobView) -> wire::JobChange {
    wire::JobChange {
        job: job(&v.job),
        next_fires: v.next_fires.clone(),
        canceled_executions: v.canceled.clone(),
        held_executions: v.held.clone(),
        amended_executions: v.amended.clone(),
        released_executions: v.released.clone(),
        catch_up: None,
    }
}

/// A backfill's (or a resume's catch-up's) report.
pub fn backfill_report(r: &sundial_core::control::executions::BackfillReport) -> wire::BackfillReport {
    wire::BackfillReport {
        fires: r.fires as u64,
        created: r.created as u64,
        existing: r.existing as u64,
        released: r.released as u64,
        last_start_at: r.last_start_at,
    }
}

/// A business calendar version.
pub fn calendar(c: &StoredCalendar) -> wire::BusinessCalendar {
    wire::BusinessCalendar {
        calendar_id: c.id.clone(),
        version: c.version,
        etag: etag(c.version),
        definition: c.spec.clone(),
        created_at: c.created_at,
        updated_at: c.updated_at,
    }
}

/// A calendar after a put, with the jobs it re-planned.
pub fn calendar_view(v: &CalendarView) -> wire::BusinessCalendarChange {
    wire::BusinessCalendarChange { calendar: calendar(&v.calendar), replanned_jobs: v.replanned.clone() }
}

/// A preview's answer; `explained` (a draft with a business calendar) adds the rolled and the
/// skipped fires.
pub fn preview(fires: &[PreviewFire], explained: bool) -> wire::Preview {
    let (mut at, mut rolled, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
    for f in fires {
        match f {
            PreviewFire::Fire { at: t, rolled_from, reason } => {
                at.push(*t);
                if let (Some(from), Some(r)) = (rolled_from, reason) {
                    rolled.push(wire::RolledFire { at: *t, rolled_from: *from, reason: r.clone() });
                }
            }
            PreviewFire::Skipped { at: t, reason } => {
                skipped.push(wire::SkippedFire { at: *t, reason: reason.clone() })
            }
        }
    }
    let (rolled, skipped) = if explained { (Some(rolled), Some(skipped)) } else { (None, None) };
    wire::Preview { fires: at, rolled, skipped, fire_expressions: None }
}

/// The expression of each fire, by index into `spec`'s expressions (0: `expression`).
pub fn fire_expressions(spec: &ScheduleSpec, indexes: &[usize]) -> Vec<wire::FireExpression> {
    indexes
        .iter()
        .map(|i| wire::FireExpression {
            expression_index: u32::try_from(*i).unwrap_or(u32::MAX),
            expression: spec.expression_at(*i).unwrap_or_default().to_string(),
        })
        .collect()
}

/// When the first attempt started and the last one ended (from the timeline).
fn started_finished(e: &Execution) -> (Option<i64>, Option<i64>) {
    let started = e.timeline.iter().find(|ev| ev.to == ExecStatus::Running).map(|ev| ev.at);
    let finished = if e.status.is_terminal() { e.timeline.last().map(|ev| ev.at) } else { None };
    (started, finished)
}

/// An execution, as lists show it.
pub fn execution(e: &Execution) -> wire::Execution {
    let (started, finished) = started_finished(e);
    wire::Execution {
        execution_id: e.id(),
        job_id: e.job_id.clone(),
        status: e.status,
        scheduled_at: e.scheduled_at,
        fire_at: e.fire_at,
        created_at: e.created_at,
        started_at: started.map(ms_to_dt),
        finished_at: finished.map(ms_to_dt),
        start_lag_ms: started.map(|s| s - e.fire_at.timestamp_millis()),
        attempt: e.attempt,
        fencing_token: e.fencing_token,
        definition_version: e.def_version,
        lease_owner: e.lease_owner.clone(),
        lease_until: e.lease_until.map(ms_to_dt),
        available_at: ms_to_dt(e.available_at),
        cancel_requested: e.cancel_requested,
        missed_range: e.missed_range.map(|(from, to)| wire::MissedRange {
            from,
            to,
            except: e.missed_except.clone(),
        }),
        last_error: e
            .last_error
            .as_ref()
            .map(|(c, m)| wire::LastError { code: c.clone(), message: m.clone() }),
        parent_execution_id: e
            .child
            .as_ref()
            .map(|_| sundial_model::keys::execution_id(&e.job_id, e.scheduled_at.timestamp_millis())),
        child: e.child.as_ref().map(|c| child(c, e.definition.shards)),
        children: e.children.as_ref().map(|t| wire::ChildrenSummary {
            total: t.total,
            finished: u32::try_from(t.finished.len()).unwrap_or(u32::MAX),
            succeeded: u32::try_from(t.finished.values().filter(|st| **st == ExecStatus::Succeeded).count())
                .unwrap_or(u32::MAX),
            failed: t
                .finished
                .iter()
                .filter(|(_, st)| **st != ExecStatus::Succeeded)
                .map(|(tag, _)| tag.clone())
                .collect(),
        }),
        map_reduce: e.map_reduce.as_ref().map(map_reduce),
        business_calendar: None,
        expression: None,
        expression_index: None,
    }
}

/// Executions as lists show them, each with what its business calendar did to its fire and
/// which expression made it (`facts`, in the same order, from
/// [`sundial_core::control::fire_calendar::explain`]).
pub fn executions_explained(execs: &[Execution], facts: &[FireFacts]) -> Vec<wire::Execution> {
    execs.iter().zip(facts).map(|(e, f)| execution_explained(e, f)).collect()
}

/// An execution with what its schedule says about its fire (see [`executions_explained`]).
pub fn execution_explained(e: &Execution, f: &FireFacts) -> wire::Execution {
    let mut v = execution(e);
    v.business_calendar = f.calendar.as_ref().map(fire_calendar);
    // The text from the execution's own definition snapshot: the version that made the fire.
    if let Some(text) = f.expression.and_then(|i| e.definition.schedule.expression_at(i)) {
        v.expression = Some(text.to_string());
        v.expression_index = f.expression.and_then(|i| u32::try_from(i).ok());
    }
    v
}

/// What a business calendar did to one fire.
pub fn fire_calendar(o: &FireOrigin) -> wire::FireCalendar {
    wire::FireCalendar {
        rolled_from: o.rolled_from,
        reason: o.reason.clone(),
        skipped_before: o
            .skipped_before
            .iter()
            .map(|(at, reason)| wire::SkippedFire { at: *at, reason: reason.clone() })
            .collect(),
        skipped_before_count: u32::try_from(o.skipped_count).unwrap_or(u32::MAX),
    }
}

/// An execution with its definition snapshot and audit trail.
pub fn execution_detail(e: &Execution) -> wire::ExecutionDetail {
    wire::ExecutionDetail {
        execution: execution(e),
        definition: e.definition.clone(),
        timeline: e
            .timeline
            .iter()
            .map(|ev| wire::TimelineEvent {
                at: ms_to_dt(ev.at),
                actor: ev.actor.clone(),
                from: ev.from,
                to: ev.to,
                attempt: ev.attempt,
                token: ev.token,
                code: ev.code.clone(),
            })
            .collect(),
        checkpoint: None,
        total_run_ms: None,
        waiting_for: None,
        waiting_since: None,
    }
}

fn map_reduce(m: &MapState) -> wire::MapReduceView {
    let none = wire::MapReduceView {
        phase: None,
        emitted: None,
        done: None,
        failed: None,
        input: None,
        result: None,
    };
    match m {
        MapState::Parent { phase, emitted, done, failed } => wire::MapReduceView {
            phase: Some(match phase {
                Phase::Map => wire::MapPhase::Map,
                Phase::Wait => wire::MapPhase::Wait,
                Phase::Reduce => wire::MapPhase::Reduce,
            }),
            emitted: Some(*emitted),
            done: Some(*done),
            failed: Some(*failed),
            ..none
        },
        MapState::Item { input, result } => wire::MapReduceView {
            input: Some(input.clone()),
            result: Some(result.clone().unwrap_or(serde_json::Value::Null)),
            ..none
        },
    }
}

/// Which child an execution is: its kind and position.
fn child(c: &ChildKey, shards: Option<u32>) -> wire::ChildPosition {
    let base = wire::ChildPosition {
        kind: wire::ChildKind::Other,
        tag: c.tag(),
        shard_index: None,
        shard_total: None,
        member: None,
        item: None,
    };
    match c {
        ChildKey::Shard(i) => wire::ChildPosition {
            kind: wire::ChildKind::Shard,
            shard_index: Some(*i),
            shard_total: shards,
            ..base
        },
        ChildKey::Member(m) => {
            wire::ChildPosition { kind: wire::ChildKind::Member, member: Some(m.clone()), ..base }
        }
        ChildKey::Item(k) => {
            wire::ChildPosition { kind: wire::ChildKind::Item, item: Some(k.clone()), ..base }
        }
        _ => base,
    }
}

/// An operations-log entry.
pub fn ops(e: &OpsEntry) -> wire::Operation {
    wire::Operation {
        at: e.at,
        actor: e.actor.clone(),
        action: e.action.as_str().to_string(),
        job_id: e.job_id.clone(),
        from_version: e.from_version,
        to_version: e.to_version,
        execution_id: e.execution_id.clone(),
        detail: e.detail.clone(),
    }
}

/// One page of the tzdb upgrade report.
pub fn tz_report(r: &sundial_core::control::tzreport::TzReport) -> wire::TzReport {
    use sundial_core::control::tzreport::TzStatus;
    let local = |t: chrono::NaiveDateTime| t.format("%Y-%m-%dT%H:%M:%S").to_string();
    let items = r
        .page
        .items
        .iter()
        .map(|j| wire::TzReportJob {
            job_id: j.job_id.clone(),
            timezone: j.timezone.clone(),
            recorded_tzdb_version: j.recorded.clone(),
            status: match j.status {
                TzStatus::Changed => wire::TzReportStatus::Changed,
                // A status added later than this build knows of: nothing is known of its fires.
                _ => wire::TzReportStatus::RulesUnavailable,
            },
            reason: j.reason.clone(),
            changes: j
                .changes
                .iter()
                .map(|c| wire::TzFireChange {
                    local_time: local(c.local_time),
                    old_at: c.old_at,
                    new_at: c.new_at,
                    shift_secs: c.shift_secs(),
                })
                .collect(),
        })
        .collect();
    wire::TzReport {
        compiled_tzdb_version: r.compiled.clone(),
        fires: u32::try_from(r.fires).unwrap_or(u32::MAX),
        examined: r.examined as u64,
        items,
        next_cursor: r.page.next.clone(),
    }
}

/// `GET /v1/jobs/{jobId}/upcoming`: the fires of a window and the transitions they cross.
pub fn upcoming(
    u: &sundial_core::control::upcoming::Upcoming,
    spec: &ScheduleSpec,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> wire::UpcomingFires {
    use sundial_core::control::upcoming::Shift;
    let local = |t: chrono::NaiveDateTime| t.format("%Y-%m-%dT%H:%M:%S").to_string();
    let explained = u.explained.as_ref().map(|lines| preview(lines, true));
    wire::UpcomingFires {
        timezone: spec.timezone.clone(),
        from,
        to,
        fires: u.fires.clone(),
        truncated: u.truncated,
        transitions: u
            .transitions
            .iter()
            .map(|t| wire::DstTransition {
                at: t.at,
                kind: match t.kind {
                    Shift::Gap => wire::ShiftKind::Gap,
                    Shift::Overlap => wire::ShiftKind::Overlap,
                },
                offset_before_secs: t.offset_before,
                offset_after_secs: t.offset_after,
                local_from: local(t.local_from),
                local_to: local(t.local_to),
                note: t.note.clone(),
                affected: t
                    .affected
                    .iter()
                    .map(|a| wire::DstAffected { local_time: local(a.local), at: a.at, note: a.note.clone() })
                    .collect(),
            })
            .collect(),
        rolled: explained.as_ref().and_then(|p| p.rolled.clone()),
        skipped: explained.and_then(|p| p.skipped),
        fire_expressions: u.expressions.as_deref().map(|ix| fire_expressions(spec, ix)),
    }
}

/// A resource limit. `operator`: the caller is an operator (sees who set it).
pub fn resource(r: &sundial_store::resource_limits::ResourceLimit, operator: bool) -> wire::ResourceLimit {
    wire::ResourceLimit {
        resource: r.name.clone(),
        limit: r.limit,
        per_tenant: Some(r.share()),
        version: r.version,
        updated_at: r.updated_at,
        updated_by: operator.then(|| r.updated_by.clone()),
        holding: None,
        holders: None,
    }
}

/// A resource limit with its live holders, for operators only: their count and execution ids
/// (other tenants' included; even the count would show other tenants' activity).
pub fn resource_view(v: &sundial_core::control::resource_limits::ResourceView) -> wire::ResourceLimit {
    let mut out = resource(&v.limit, v.operator);
    if v.operator {
        out.holding = Some(u32::try_from(v.holders.len()).unwrap_or(u32::MAX));
        out.holders = Some(
            v.holders
                .iter()
                .map(|(id, lu)| wire::ResourceHolder { execution_id: id.clone(), lease_until: ms_to_dt(*lu) })
                .collect(),
        );
    }
    out
}

/// An execution's worker log lines: `captured` says whether this API keeps lines at all (the
/// local run does; the Lambda answers the Insights link).
pub fn exec_logs(
    id: &str,
    captured: bool,
    lines: &[crate::exec_logs::LogLine],
    insights: Option<String>,
) -> wire::ExecutionLogs {
    wire::ExecutionLogs {
        execution_id: id.to_string(),
        captured,
        lines: lines
            .iter()
            .map(|l| wire::LogLine { at: l.at, level: l.level.clone(), message: l.message.clone() })
            .collect(),
        logs_insights_url: insights,
    }
}
