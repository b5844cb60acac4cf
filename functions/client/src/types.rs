//! The API's request and response bodies (functions/api/openapi.json), as Rust types.
//!
//! Definitions are `sundial-model`'s own [`JobDefinition`] (the type the API validates and
//! stores), so a definition read from the API can be edited and written back without a second
//! copy of the schema drifting from the first. Responses are read leniently (unknown fields are
//! ignored, so a newer server does not break an older client) and written back with the API's
//! own instant format (RFC 3339 UTC with milliseconds), so `--output json` prints what the API
//! sent.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
pub use sundial_model::{ConcurrencyPolicy, ExecStatus, JobDefinition, JobState, RetryPolicy, Target};
pub use sundial_schedule::{BusinessCalendarRef, BusinessCalendarSpec, MisfirePolicy, Roll, ScheduleSpec};

/// Instants as the API writes them.
mod ts {
    use chrono::{DateTime, SecondsFormat, Utc};
    use serde::Serializer;

    fn text(t: &DateTime<Utc>) -> String {
        t.to_rfc3339_opts(SecondsFormat::Millis, true)
    }
    pub(super) fn one<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&text(t))
    }
    pub(super) fn opt<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_some(&text(t)),
            None => s.serialize_none(),
        }
    }
    pub(super) fn many<S: Serializer>(ts: &[DateTime<Utc>], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(ts.iter().map(text))
    }
}

/// `POST /v1/jobs`: a job id and its definition.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateJob {
    /// `^[A-Za-z0-9_-]{1,64}$`.
    pub job_id: String,
    /// The definition.
    #[serde(flatten)]
    pub definition: JobDefinition,
}

/// A job (`Job` in openapi.json): its current definition, or a version snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Job {
    /// Id.
    pub job_id: String,
    /// Version (1 on create, +1 on each change).
    pub version: u64,
    /// `"{version}"`, for `If-Match`.
    pub etag: String,
    /// ENABLED, PAUSED, DELETED.
    pub state: JobState,
    /// The definition with every default filled in.
    pub definition: JobDefinition,
    /// The next fire (enabled jobs).
    #[serde(serialize_with = "ts::opt")]
    pub next_fire_at: Option<DateTime<Utc>>,
    /// Created.
    #[serde(serialize_with = "ts::one")]
    pub created_at: DateTime<Utc>,
    /// Last changed (for a version: when that version was written).
    #[serde(serialize_with = "ts::one")]
    pub updated_at: DateTime<Utc>,
    /// The tz database release `next_fire_at` was computed with (`"2025b"`); empty from a
    /// server older than the field.
    #[serde(default)]
    pub tzdb_version: String,
}

/// A job after a change (`JobChange`): create, update, delete, pause, resume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct JobChange {
    /// The job as changed.
    pub job: Job,
    /// Its next fires.
    #[serde(serialize_with = "ts::many")]
    pub next_fires: Vec<DateTime<Utc>>,
    /// Queued-ahead executions the change canceled.
    #[serde(default)]
    pub canceled_executions: Vec<String>,
    /// Queued-ahead executions a pause held.
    #[serde(default)]
    pub held_executions: Vec<String>,
    /// Queued-ahead executions an edit moved to the new definition.
    #[serde(default)]
    pub amended_executions: Vec<String>,
    /// Held executions a resume released.
    #[serde(default)]
    pub released_executions: Vec<String>,
}

/// The instants of a `fireOnce` execution's missed range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MissedRange {
    /// First missed fire.
    #[serde(serialize_with = "ts::one")]
    pub from: DateTime<Utc>,
    /// Last missed fire.
    #[serde(serialize_with = "ts::one")]
    pub to: DateTime<Utc>,
}

/// An execution's last error (generic; details are in the worker's logs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LastError {
    /// `Timeout`, `HttpStatus`, `TargetNotAllowed`, ...
    pub code: String,
    /// Message.
    pub message: String,
}

/// An execution (`Execution`), as lists return it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Execution {
    /// `{jobId}@{scheduled epoch ms}`.
    pub execution_id: String,
    /// The job.
    pub job_id: String,
    /// Status.
    pub status: ExecStatus,
    /// The schedule's instant.
    #[serde(serialize_with = "ts::one")]
    pub scheduled_at: DateTime<Utc>,
    /// When it is dispatched (scheduled plus jitter).
    #[serde(serialize_with = "ts::one")]
    pub fire_at: DateTime<Utc>,
    /// Created.
    #[serde(serialize_with = "ts::one")]
    pub created_at: DateTime<Utc>,
    /// First start.
    #[serde(serialize_with = "ts::opt")]
    pub started_at: Option<DateTime<Utc>>,
    /// End of the last attempt (final statuses).
    #[serde(serialize_with = "ts::opt")]
    pub finished_at: Option<DateTime<Utc>>,
    /// First start minus `fireAt`.
    pub start_lag_ms: Option<i64>,
    /// Attempt number.
    pub attempt: u32,
    /// Fencing token of the latest claim.
    pub fencing_token: u64,
    /// The definition version it runs.
    pub definition_version: u64,
    /// The worker holding its lease.
    pub lease_owner: Option<String>,
    /// End of that lease.
    #[serde(serialize_with = "ts::opt")]
    pub lease_until: Option<DateTime<Utc>>,
    /// Claimable from.
    #[serde(serialize_with = "ts::one")]
    pub available_at: DateTime<Utc>,
    /// A cancel was asked for while it ran.
    pub cancel_requested: bool,
    /// The missed fires a `fireOnce` execution stands for.
    pub missed_range: Option<MissedRange>,
    /// The last attempt's error.
    pub last_error: Option<LastError>,
    /// A child of a sharded or broadcast fire: its parent's id (`docs/children.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_execution_id: Option<String>,
    /// A child: which shard or member it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<ChildPosition>,
    /// A parent that fanned out: its children's count and the final ones so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children: Option<ChildrenSummary>,
}

/// Which child an execution is (`Execution.child`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ChildPosition {
    /// `shard`, `member` (or `item`, reserved).
    pub kind: String,
    /// The child part of its id (`s3`, `m-eu-west-1`).
    pub tag: String,
    /// A shard's index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_index: Option<u32>,
    /// A shard's total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_total: Option<u32>,
    /// A broadcast member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
}

/// A parent's children (`Execution.children`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ChildrenSummary {
    /// Children in all.
    pub total: u32,
    /// Counted final.
    pub finished: u32,
    /// Of which SUCCEEDED.
    pub succeeded: u32,
    /// Tags of those final but not SUCCEEDED.
    pub failed: Vec<String>,
}

/// One transition of an execution's timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TimelineEvent {
    /// When.
    #[serde(serialize_with = "ts::one")]
    pub at: DateTime<Utc>,
    /// `tick:<id>`, `worker:<id>` or `api:<principal>`.
    pub actor: String,
    /// From (none for the creation).
    pub from: Option<ExecStatus>,
    /// To.
    pub to: ExecStatus,
    /// Attempt.
    pub attempt: u32,
    /// Fencing token.
    pub token: u64,
    /// Reason code.
    pub code: Option<String>,
}

/// One execution with its definition and timeline (`ExecutionDetail`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ExecutionDetail {
    /// The execution.
    #[serde(flatten)]
    pub execution: Execution,
    /// The definition it runs (a snapshot).
    pub definition: JobDefinition,
    /// Every transition, oldest first.
    pub timeline: Vec<TimelineEvent>,
    /// A parent's children, as servers before issue 28 sent them; now always `None` (the
    /// server sends only the counts, in `children`): page them with [`crate::ListChildren`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_executions: Option<Vec<Execution>>,
}

/// An entry of the operations audit log (`Operation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Operation {
    /// When.
    #[serde(serialize_with = "ts::one")]
    pub at: DateTime<Utc>,
    /// Who (`api:<principal>`).
    pub actor: String,
    /// `create`, `update`, `pause`, `resume`, `delete`, `trigger`, `backfill`, `cancel`, `replay`,
    /// `fire_missed`, `calendar_create`, `calendar_update`, `calendar_delete` (a string, not an
    /// enum: a client keeps reading the log when a newer server adds an action).
    pub action: String,
    /// The job.
    pub job_id: String,
    /// Version before.
    pub from_version: Option<u64>,
    /// Version after.
    pub to_version: Option<u64>,
    /// The execution (cancel, replay, trigger).
    pub execution_id: Option<String>,
    /// More.
    pub detail: Option<String>,
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Page<T> {
    /// The items.
    pub items: Vec<T>,
    /// The cursor of the next page; none on the last.
    pub next_cursor: Option<String>,
}

/// `POST /v1/jobs/{jobId}/backfill`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackfillRequest {
    /// First instant.
    #[serde(serialize_with = "ts::one")]
    pub from: DateTime<Utc>,
    /// Last instant (not in the future).
    #[serde(serialize_with = "ts::one")]
    pub to: DateTime<Utc>,
    /// Seconds between two created executions (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pace_secs: Option<u32>,
}

/// What a backfill did (`BackfillReport`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BackfillReport {
    /// Fires in the range.
    pub fires: u64,
    /// Executions created.
    pub created: u64,
    /// Fires that already had one.
    pub existing: u64,
    /// When the last one starts.
    #[serde(serialize_with = "ts::opt")]
    pub last_start_at: Option<DateTime<Utc>>,
}

/// The outcome of one replayed dead letter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ReplayResult {
    /// The execution.
    pub execution_id: String,
    /// `replayed`, `resent`, `not_found`, `not_dead`, `too_old`.
    pub outcome: String,
}

/// `POST /v1/dlq/replay`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReplayResults {
    /// One per requested id, in order.
    pub results: Vec<ReplayResult>,
}

/// `POST /v1/preview`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PreviewRequest {
    /// The draft schedule.
    pub schedule: ScheduleSpec,
    /// How many fires (1-1000, default 10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// Fires strictly after this instant (default: now).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ts::opt")]
    pub after: Option<DateTime<Utc>>,
}

/// `GET /v1/tz-report`: one page of the tzdb upgrade report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TzReport {
    /// The release compiled into the server, compared with each job's recorded one.
    pub compiled_tzdb_version: String,
    /// Fires compared per job.
    pub fires: u32,
    /// Jobs of this page looked at (the listed ones are among them).
    pub examined: u64,
    /// Jobs whose fires change, or whose recorded release the server cannot read.
    pub items: Vec<TzReportJob>,
    /// The next page's cursor; none on the last.
    pub next_cursor: Option<String>,
}

/// One job of the tz report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TzReportJob {
    /// The job.
    pub job_id: String,
    /// Its zone.
    pub timezone: String,
    /// The release its position was computed with.
    pub recorded_tzdb_version: String,
    /// `changed` or `rulesUnavailable`.
    pub status: String,
    /// Why `rulesUnavailable`.
    pub reason: Option<String>,
    /// The fires that differ, in time order.
    pub changes: Vec<TzFireChange>,
}

/// One fire that differs between the recorded and the compiled release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TzFireChange {
    /// Wall-clock time in the job's zone, `YYYY-MM-DDTHH:MM:SS`.
    pub local_time: String,
    /// Under the recorded release; none: a fire the compiled rules add.
    #[serde(serialize_with = "ts::opt")]
    pub old_at: Option<DateTime<Utc>>,
    /// Under the compiled release; none: a fire they remove.
    #[serde(serialize_with = "ts::opt")]
    pub new_at: Option<DateTime<Utc>>,
    /// `new_at - old_at` in seconds.
    pub shift_secs: Option<i64>,
}

/// `POST /v1/preview`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Preview {
    /// The next fires.
    #[serde(serialize_with = "ts::many")]
    pub fires: Vec<DateTime<Utc>>,
    /// With a business calendar: the fires it moved, with the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolled: Option<Vec<RolledFire>>,
    /// With a business calendar: the fires it removed, with the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<Vec<SkippedFire>>,
}

/// A fire a business calendar moved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RolledFire {
    /// Where it fires.
    #[serde(serialize_with = "ts::one")]
    pub at: DateTime<Utc>,
    /// Where it would have fired without the calendar.
    #[serde(serialize_with = "ts::one")]
    pub rolled_from: DateTime<Utc>,
    /// `holiday 2026-10-01 in cn-holidays v3; following`.
    pub reason: String,
}

/// A fire a business calendar removed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SkippedFire {
    /// Where it would have fired.
    #[serde(serialize_with = "ts::one")]
    pub at: DateTime<Utc>,
    /// Why not.
    pub reason: String,
}

/// A business calendar version (`BusinessCalendar` in openapi.json).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BusinessCalendar {
    /// Id.
    pub calendar_id: String,
    /// Version.
    pub version: u64,
    /// `"{version}"`, for `If-Match`.
    pub etag: String,
    /// The definition.
    pub definition: BusinessCalendarSpec,
    /// Created.
    #[serde(serialize_with = "ts::one")]
    pub created_at: DateTime<Utc>,
    /// This version written.
    #[serde(serialize_with = "ts::one")]
    pub updated_at: DateTime<Utc>,
}

/// A calendar after a put (`BusinessCalendarChange`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BusinessCalendarChange {
    /// The calendar as stored.
    pub calendar: BusinessCalendar,
    /// Jobs re-planned with the new version.
    #[serde(default)]
    pub replanned_jobs: Vec<String>,
}

/// A deleted calendar.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DeletedCalendar {
    /// Id.
    pub calendar_id: String,
    /// The tombstone's version.
    pub version: u64,
    /// Always true.
    pub deleted: bool,
}

/// A platform-wide resource limit (`ResourceLimit` in openapi.json; docs/resources.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceLimit {
    /// Its name (`legacy-db`).
    pub resource: String,
    /// Executions that may hold it at once, across every tenant.
    pub limit: u32,
    /// Most units one tenant may hold at once (the operator's setting, or half the limit
    /// rounded up). Absent from servers before issue 28.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_tenant: Option<u32>,
    /// +1 on every change.
    pub version: u64,
    /// Last changed.
    #[serde(serialize_with = "ts::one")]
    pub updated_at: DateTime<Utc>,
    /// Who changed it (shown to operators only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<String>,
    /// Executions holding it now (`get_resource`, operators only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holding: Option<u32>,
    /// Which executions hold it (`get_resource`, operators only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holders: Option<Vec<ResourceHolder>>,
}

/// An execution holding a resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceHolder {
    /// `{tenant}:{job}@{scheduled ms}`.
    pub execution_id: String,
    /// Its unit comes back then unless a heartbeat extends it.
    #[serde(serialize_with = "ts::one")]
    pub lease_until: DateTime<Utc>,
}

/// A deleted resource limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DeletedResource {
    /// Its name.
    pub resource: String,
    /// Always true.
    pub deleted: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_read_back_and_write_out_as_the_api_sent_them() {
        // GIVEN a JobChange as the API writes it (functions/api/src/dto.rs)
        let sent = json!({
            "job": {
                "jobId": "a", "version": 2, "etag": "\"2\"", "state": "ENABLED",
                "definition": {
                    "schedule": {"expression": "0 30 2 * * *", "timezone": "UTC", "onGap": "shift",
                        "onOverlap": "first", "start": null, "end": null,
                        "exclusions": {"dates": [], "weekdays": []}, "jitterWindowSecs": 0},
                    "pool": "default", "target": {"type": "http", "url": "https://h.example/run"},
                    "params": {"v": 1}, "misfire": {"policy": "fireOnce"}, "misfireThresholdSecs": 60,
                    "concurrency": "ALLOW",
                    "retry": {"maxAttempts": 3, "baseDelaySecs": 2, "maxDelaySecs": 300, "maxAgeSecs": 86400},
                    "timeoutSecs": 300
                },
                "nextFireAt": "2026-12-02T02:30:00.000Z",
                "createdAt": "2026-12-01T10:00:00.000Z", "updatedAt": "2026-12-01T10:00:00.123Z"
            },
            "nextFires": ["2026-12-02T02:30:00.000Z"],
            "canceledExecutions": [], "heldExecutions": [], "amendedExecutions": [], "releasedExecutions": []
        });
        // WHEN read and written again
        let change: JobChange = serde_json::from_value(sent.clone()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(change.job.state, JobState::Enabled);
        let back = serde_json::to_value(&change).unwrap_or_else(|e| panic!("{e}"));
        // THEN the instants keep the API's format
        assert_eq!(back["job"]["updatedAt"], "2026-12-01T10:00:00.123Z");
        assert_eq!(back["nextFires"][0], "2026-12-02T02:30:00.000Z");
        assert_eq!(back["job"]["definition"]["target"], sent["job"]["definition"]["target"]);
    }
}

/// `GET /v1/jobs/{jobId}/upcoming` (`UpcomingFires`): a job's fires over a window and the
/// daylight-saving transitions of its zone in it, with what its gap / overlap policy does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UpcomingFires {
    /// The job's zone.
    pub timezone: String,
    /// Start of the window.
    #[serde(serialize_with = "ts::one")]
    pub from: DateTime<Utc>,
    /// End of the window.
    #[serde(serialize_with = "ts::one")]
    pub to: DateTime<Utc>,
    /// The fires, ascending (at most 500).
    #[serde(serialize_with = "ts::many")]
    pub fires: Vec<DateTime<Utc>>,
    /// More fires were left out.
    pub truncated: bool,
    /// The zone's transitions in the window.
    pub transitions: Vec<DstTransition>,
}

/// A change of the zone's UTC offset (`UpcomingFires.transitions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DstTransition {
    /// The first instant under the new offset.
    #[serde(serialize_with = "ts::one")]
    pub at: DateTime<Utc>,
    /// `gap` (clocks forward) or `overlap` (clocks back).
    pub kind: String,
    /// Offset before (seconds east of UTC).
    pub offset_before_secs: i32,
    /// Offset after.
    pub offset_after_secs: i32,
    /// First missing or repeated wall time.
    pub local_from: String,
    /// End of that range (exclusive).
    pub local_to: String,
    /// In words.
    pub note: String,
    /// The scheduled wall times it touches.
    pub affected: Vec<DstAffected>,
}

/// A scheduled wall time in a gap or a repeated hour, and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DstAffected {
    /// The wall time the schedule names.
    pub local_time: String,
    /// The fire it became; `None` when skipped.
    #[serde(serialize_with = "ts::opt")]
    pub at: Option<DateTime<Utc>>,
    /// In words.
    pub note: String,
}

/// `GET /v1/executions/{executionId}/logs` (`ExecutionLogs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ExecutionLogs {
    /// The execution.
    pub execution_id: String,
    /// Whether the API keeps log lines at all (the local run does; the deployed API does not).
    pub captured: bool,
    /// The last lines (at most 200), oldest first.
    pub lines: Vec<LogLine>,
    /// Deployed: a CloudWatch Logs Insights query over the workers' log groups.
    pub logs_insights_url: Option<String>,
}

/// One worker log line (`ExecutionLogs.lines`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct LogLine {
    /// When it was logged.
    #[serde(serialize_with = "ts::one")]
    pub at: DateTime<Utc>,
    /// `ERROR`, `WARN`, `INFO`, `DEBUG` or `TRACE`.
    pub level: String,
    /// The message, then the line's other fields as `name=value`.
    pub message: String,
}
