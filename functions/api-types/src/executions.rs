//! Executions: one as lists show it, one with its timeline, trigger-now and backfill, dead-letter
//! replays, and the worker log lines of one.

use crate::time;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sundial_model::{ExecStatus, JobDefinition};
use utoipa::ToSchema;

/// The instants of a `fireOnce` execution's missed range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MissedRange {
    /// First missed fire.
    #[serde(serialize_with = "time::one")]
    pub from: DateTime<Utc>,
    /// Last missed fire.
    #[serde(serialize_with = "time::one")]
    pub to: DateTime<Utc>,
    /// Instants of the range this execution does not stand for: each ran (or was decided) as a
    /// fire of its own (docs/execution.md, "A batch's first claim"). Left out when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty", serialize_with = "time::many")]
    pub except: Vec<DateTime<Utc>>,
}

/// An execution's last error (generic; details are in the worker's logs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LastError {
    /// The error code (`Timeout`, `HttpStatus`, `TargetNotAllowed`, ...).
    pub code: String,
    /// Generic; details are in the worker's logs.
    pub message: String,
}

/// What kind of child an execution is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChildKind {
    /// A shard of a sharded job.
    Shard,
    /// A member of a broadcast job.
    Member,
    /// An item of a map-reduce fire.
    Item,
    /// A kind this document does not name yet.
    #[serde(other)]
    Other,
}

impl ChildKind {
    /// The kind as sent.
    pub fn as_str(self) -> &'static str {
        match self {
            ChildKind::Shard => "shard",
            ChildKind::Member => "member",
            ChildKind::Item => "item",
            ChildKind::Other => "other",
        }
    }
}

/// Which child an execution is (`Execution.child`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChildPosition {
    /// Shard, member or item.
    pub kind: ChildKind,
    /// The child part of its id (`s3`, `m-eu-west-1`, `i-<key>`).
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
    /// A map-reduce item's key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<String>,
}

/// A parent that fanned out: its children's count and the final ones so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChildrenSummary {
    /// Children created.
    pub total: u32,
    /// Children final so far.
    pub finished: u32,
    /// Of those, succeeded.
    pub succeeded: u32,
    /// The tags of the final children that did not succeed.
    pub failed: Vec<String>,
}

/// A map-reduce parent's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum MapPhase {
    /// Its map runs.
    Map,
    /// Its items run.
    Wait,
    /// Its reduce runs.
    Reduce,
}

/// Map-reduce (docs/mapreduce.md): a parent's phase and counts, or an item's input and result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MapReduceView {
    /// A parent's phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<MapPhase>,
    /// Items created so far (a parent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emitted: Option<u64>,
    /// Items final so far (a parent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done: Option<u64>,
    /// Of those, not succeeded (a parent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<u64>,
    /// The input the map emitted (an item).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<serde_json::Value>,
    /// What its run returned, once it succeeded (an item; `null` before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
}

/// An execution, as lists return it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Execution {
    /// `{jobId}@{scheduled epoch ms}`, or a child's `{jobId}@{ms}.{tag}`.
    #[schema(
        pattern = "^[A-Za-z0-9_-]{1,64}@[0-9]{1,15}(\\.(s[0-9]{1,5}|m-[A-Za-z0-9_-]{1,64}|i-[A-Za-z0-9_-]{1,64}))?$"
    )]
    pub execution_id: String,
    /// The job.
    #[schema(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub job_id: String,
    /// Status.
    pub status: ExecStatus,
    /// The schedule's instant.
    #[serde(serialize_with = "time::one")]
    pub scheduled_at: DateTime<Utc>,
    /// When it is dispatched (scheduled plus jitter).
    #[serde(serialize_with = "time::one")]
    pub fire_at: DateTime<Utc>,
    /// Created.
    #[serde(serialize_with = "time::one")]
    pub created_at: DateTime<Utc>,
    /// First start.
    #[serde(serialize_with = "time::opt")]
    #[schema(required = true)]
    pub started_at: Option<DateTime<Utc>>,
    /// End of the last attempt (final statuses).
    #[serde(serialize_with = "time::opt")]
    #[schema(required = true)]
    pub finished_at: Option<DateTime<Utc>>,
    /// First start minus `fireAt` (ms).
    #[schema(required = true)]
    pub start_lag_ms: Option<i64>,
    /// Attempt number.
    pub attempt: u32,
    /// Fencing token of the latest claim (0 until the first).
    pub fencing_token: u64,
    /// The definition version it runs.
    pub definition_version: u64,
    /// The worker holding its lease.
    #[schema(required = true)]
    pub lease_owner: Option<String>,
    /// End of that lease.
    #[serde(serialize_with = "time::opt")]
    #[schema(required = true)]
    pub lease_until: Option<DateTime<Utc>>,
    /// Claimable from.
    #[serde(serialize_with = "time::one")]
    pub available_at: DateTime<Utc>,
    /// A cancel was asked for while it ran.
    pub cancel_requested: bool,
    /// The missed fires a `fireOnce` execution stands for.
    #[schema(required = true)]
    pub missed_range: Option<MissedRange>,
    /// The last attempt's error.
    #[schema(required = true)]
    pub last_error: Option<LastError>,
    /// A child of a sharded, broadcast or map-reduce fire: its parent's id (docs/children.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^[A-Za-z0-9_-]{1,64}@[0-9]{1,15}$")]
    pub parent_execution_id: Option<String>,
    /// A child: which one it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<ChildPosition>,
    /// A parent that fanned out: its children's count and the final ones so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children: Option<ChildrenSummary>,
    /// Map-reduce state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map_reduce: Option<MapReduceView>,
    /// What the business calendar did to this fire, computed by the schedule of the definition
    /// version that made it (`definitionVersion`, with the calendar versions that version
    /// recorded). Present only for a fire of a schedule with a business calendar (a scheduled
    /// or backfilled fire, not a manual run, an event's or a child); absent also when that
    /// version or its calendar is no longer stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub business_calendar: Option<FireCalendar>,
    /// For a fire of a schedule with several expressions (`schedule.expressions`): the text of
    /// the expression that made it, the first in index order when several fire at that instant.
    /// Computed, like `businessCalendar`, by the schedule of the definition version that made
    /// the fire; absent for a schedule of one expression and for anything but a scheduled or
    /// backfilled fire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
    /// The index of `expression` among the schedule's expressions: 0 for `expression`, i + 1
    /// for `expressions[i]`. Present with `expression`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression_index: Option<u32>,
}

/// What a business calendar did to one fire: moved it (`rolledFrom`, `reason`), and which of
/// the schedule's instants since its previous fire it removed (`skippedBefore`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FireCalendar {
    /// Where the schedule put the fire before the calendar moved it; absent when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "time::opt")]
    pub rolled_from: Option<DateTime<Utc>>,
    /// Why it moved (`holiday 2026-12-25 in holidays v2; following`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The schedule's instants after its previous fire and before this one that the calendar
    /// removed (skipped, or rolled onto an instant that fires anyway), ascending: the first 10.
    pub skipped_before: Vec<SkippedFire>,
    /// How many such instants there were in all (at most 10,000 are looked at).
    pub skipped_before_count: u32,
}

/// A fire a business calendar dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkippedFire {
    /// Where the schedule put it.
    #[serde(serialize_with = "time::one")]
    pub at: DateTime<Utc>,
    /// Why.
    pub reason: String,
}

/// One transition of an execution's audit trail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TimelineEvent {
    /// When.
    #[serde(serialize_with = "time::one")]
    pub at: DateTime<Utc>,
    /// Who (`tick`, `worker:{id}`, `api:{principal}`, `reconciler`, `source:sqs:{queue}`,
    /// `source:events:{bus}`, ...).
    pub actor: String,
    /// The status before (`null`: created).
    #[schema(required = true)]
    pub from: Option<ExecStatus>,
    /// The status after.
    pub to: ExecStatus,
    /// The attempt.
    pub attempt: u32,
    /// The fencing token of the writer.
    pub token: u64,
    /// Why (an error or reason code).
    #[schema(required = true)]
    pub code: Option<String>,
}

/// One execution with its definition snapshot and its audit trail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionDetail {
    /// The execution.
    #[serde(flatten)]
    pub execution: Execution,
    /// The definition it runs (its snapshot).
    #[serde(deserialize_with = "crate::lenient::definition")]
    #[schema(value_type = sundial_model::openapi::StoredDefinition)]
    pub definition: JobDefinition,
    /// Every transition, oldest first.
    pub timeline: Vec<TimelineEvent>,
    /// Its last checkpoint (`GET /v1/executions/{id}` only; `null` when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<serde_json::Value>,
    /// Run time of all its attempts so far (ms; `GET /v1/executions/{id}` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_run_ms: Option<i64>,
    /// A READY fire of a job with `after` (`GET /v1/executions/{id}` only): each upstream run it
    /// waits for, looked up now (docs/dependencies.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<Vec<WaitingFor>>,
    /// When it started waiting for its upstreams (its `WaitingForUpstream` note), if it has.
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "time::opt")]
    pub waiting_since: Option<DateTime<Utc>>,
}

/// One upstream run a waiting fire waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitingFor {
    /// The upstream job.
    pub job: String,
    /// The upstream run's execution id; absent when the upstream has no fire for the period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_id: Option<String>,
    /// Its status; absent when it is not put yet (or has no fire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ExecStatus>,
    /// Whether it satisfies the dependency.
    pub met: bool,
}

/// `GET /v1/jobs/{jobId}/dependencies`: what the job's fires wait for, and who waits for them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobDependencies {
    /// Its own `after`, each with the upstream job's state (absent: the job does not exist).
    pub upstreams: Vec<DependencyEdge>,
    /// The caller's jobs whose `after` names this job.
    pub downstreams: Vec<DependencyEdge>,
    /// False when the tenant has more jobs than one lookup reads (5,000) and some were not read.
    pub downstreams_complete: bool,
}

/// One edge of a job's dependency graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DependencyEdge {
    /// The other job.
    pub job: String,
    /// The dependency as the downstream declares it.
    pub dependency: sundial_model::dependency::Dependency,
    /// The other job's state; absent when it does not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<sundial_model::JobState>,
}

/// `POST /v1/jobs/{jobId}/trigger`: the optional body of a run now.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TriggerRequest {
    /// Per-run parameters, merged over the job's `params` as a JSON Merge Patch (RFC 7396: a key
    /// replaces the job's, nested objects merge, `null` removes a key; a non-object replaces the
    /// whole value). At most 4096 bytes once merged, else 400 on `params`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Value>,
}

/// `POST /v1/jobs/{jobId}/events`: one event for a job whose definition sets `events`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventRequest {
    /// Deduplication key (1-200 of A-Z a-z 0-9 _ . - : / = @ +, e.g. the file's name): an event
    /// with a key seen in the last 7 days is the same execution as the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 200, pattern = "^[A-Za-z0-9_.:/=@+-]{1,200}$")]
    pub key: Option<String>,
    /// Per-run parameters, merged over the job's `params` like a trigger's (RFC 7396).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Value>,
    /// When the event happened (RFC 3339; at most a day ago, at most 5 minutes ahead). Default:
    /// its arrival. Without `oncePerPeriod` it is the execution's instant.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "time::opt",
        deserialize_with = "sundial_schedule::instant::bounded_opt"
    )]
    #[schema(pattern = "^(19[7-9][0-9]|20[0-9][0-9]|2100)-", example = "2026-12-01T05:42:00Z")]
    pub at: Option<DateTime<Utc>>,
}

/// What an event did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventAccepted {
    /// False when the event was deduplicated onto an execution that existed (a repeated key,
    /// or with `oncePerPeriod` a fire already made by the schedule or an earlier event).
    pub created: bool,
    /// The execution the event is.
    pub execution: ExecutionDetail,
}

/// `POST /v1/jobs/{jobId}/backfill`: create the fires of a past range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackfillRequest {
    /// First instant (inclusive). RFC 3339, between 1970 and 2100, and at most 7 days ago (an
    /// execution that succeeded is kept 7 days; an older fire may have run already).
    #[serde(serialize_with = "time::one", deserialize_with = "sundial_schedule::instant::bounded")]
    #[schema(pattern = "^(19[7-9][0-9]|20[0-9][0-9]|2100)-", example = "2026-12-01T09:00:00Z")]
    pub from: DateTime<Utc>,
    /// Last instant (inclusive). RFC 3339, between 1970 and 2100.
    #[serde(serialize_with = "time::one", deserialize_with = "sundial_schedule::instant::bounded")]
    #[schema(pattern = "^(19[7-9][0-9]|20[0-9][0-9]|2100)-", example = "2026-12-01T09:00:00Z")]
    pub to: DateTime<Utc>,
    /// Seconds between two backfilled executions' starts (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 3600, default = 1)]
    pub pace_secs: Option<u32>,
    /// Per-run parameters for every execution of the backfill, merged over the job's `params`
    /// like a trigger's (RFC 7396); at most 4096 bytes once merged, else 400 on `params`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<serde_json::Value>,
}

/// A backfill's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackfillReport {
    /// Fires in the range.
    pub fires: u64,
    /// Executions created.
    pub created: u64,
    /// Fires that already had their execution (left as it is).
    pub existing: u64,
    /// Fires whose execution was queued ahead of the job's pause and kept from running by it
    /// (held): taken over and run like the created ones, paced with them. Neither created nor
    /// existing.
    #[serde(default)]
    pub released: u64,
    /// When the last created or released one starts (paced).
    #[serde(serialize_with = "time::opt")]
    #[schema(required = true)]
    pub last_start_at: Option<DateTime<Utc>>,
}

/// `POST /v1/dlq/replay`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplayRequest {
    /// The dead executions to replay (1-25).
    #[schema(min_items = 1, max_items = 25, value_type = Vec<ExecutionIdOfFire>)]
    pub execution_ids: Vec<String>,
    /// Why (recorded in each replay's operations-log entry, `detail`; at most 500 characters).
    /// Absent or a string: `null` is refused like any other wrong type.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "some_string")]
    #[schema(max_length = 500, nullable = false)]
    pub reason: Option<String>,
}

/// A fire's execution id (`{jobId}@{scheduled epoch ms}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(transparent)]
#[schema(pattern = "^[A-Za-z0-9_-]{1,64}@[0-9]{1,15}$")]
pub struct ExecutionIdOfFire(pub String);

fn some_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d).map(Some)
}

/// What a replay did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReplayOutcome {
    /// Back to READY with a fresh retry budget.
    Replayed,
    /// Already replayed; its message was sent again.
    Resent,
    /// No such execution for this tenant.
    NotFound,
    /// Not DEAD.
    NotDead,
    /// Older than its job's `retry.maxAgeSecs`.
    TooOld,
}

impl ReplayOutcome {
    /// The outcome as sent.
    pub fn as_str(self) -> &'static str {
        match self {
            ReplayOutcome::Replayed => "replayed",
            ReplayOutcome::Resent => "resent",
            ReplayOutcome::NotFound => "not_found",
            ReplayOutcome::NotDead => "not_dead",
            ReplayOutcome::TooOld => "too_old",
        }
    }
}

/// One replay's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplayResult {
    /// The execution.
    pub execution_id: String,
    /// What happened.
    pub outcome: ReplayOutcome,
}

/// The answer of a batch replay: one outcome per execution, in the request's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ReplayResults {
    /// The outcomes.
    pub results: Vec<ReplayResult>,
}

/// One worker log line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogLine {
    /// When.
    #[serde(serialize_with = "time::one")]
    pub at: DateTime<Utc>,
    /// `INFO`, `WARN`, `ERROR`, ...
    pub level: String,
    /// The line.
    pub message: String,
}

/// `GET /v1/executions/{executionId}/logs`: the local run's worker lines, or (deployed) a link to
/// CloudWatch Logs Insights.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionLogs {
    /// The execution.
    pub execution_id: String,
    /// Whether this API keeps lines at all (the local run does).
    pub captured: bool,
    /// The lines (at most 200, newest last).
    #[schema(max_items = 200)]
    pub lines: Vec<LogLine>,
    /// A Logs Insights query for the execution (deployed).
    #[schema(required = true)]
    pub logs_insights_url: Option<String>,
}
