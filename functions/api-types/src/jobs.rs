//! Jobs: create and edit bodies, a job, a job after a change, schedule previews, upcoming fires
//! and the tzdb upgrade report.

use crate::executions::SkippedFire;
use crate::time;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use sundial_model::{JobDefinition, JobState};
use sundial_schedule::ScheduleSpec;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

/// `^[A-Za-z0-9_-]{1,64}$`: a job, calendar, pool or resource id.
pub const ID_PATTERN: &str = "^[A-Za-z0-9_-]{1,64}$";
/// An execution id of a fire: `{jobId}@{scheduled epoch ms}`.
pub const FIRE_ID_PATTERN: &str = "^[A-Za-z0-9_-]{1,64}@[0-9]{1,15}$";

/// `POST /v1/jobs`: a job id and its definition, in one object. The server reads `jobId` first,
/// then the rest as a [`JobDefinition`], so an error names the definition's field by its path.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateJob {
    /// `^[A-Za-z0-9_-]{1,64}$`.
    pub job_id: String,
    /// The definition.
    #[serde(flatten)]
    pub definition: JobDefinition,
}

/// `PUT /v1/jobs/{jobId}`: a definition. A job read back may be sent as it is: its `jobId` (which
/// must match the path), `version`, `etag` and `state` are ignored (the version to replace is
/// `If-Match`, the state changes by pause/resume/delete).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct UpdateJob {
    /// The new definition.
    pub definition: JobDefinition,
}

/// A property to add in front of the definition's own (the create and edit bodies).
struct Extra {
    name: &'static str,
    schema: Schema,
    required: bool,
}

fn string(pattern: Option<&str>, max: Option<usize>, description: &str) -> Schema {
    let mut b = ObjectBuilder::new().schema_type(Type::String).description(Some(description));
    if let Some(p) = pattern {
        b = b.pattern(Some(p));
    }
    if let Some(m) = max {
        b = b.max_length(Some(m));
    }
    Schema::Object(b.build())
}

/// The definition's schema with `extra` properties first: one flat object, so that the
/// document's `additionalProperties: false` holds for the whole body (an `allOf` of two closed
/// objects would refuse every body).
fn definition_with(extra: Vec<Extra>) -> RefOr<Schema> {
    let RefOr::T(Schema::Object(def)) = JobDefinition::schema() else {
        return JobDefinition::schema();
    };
    let mut out = def.clone();
    out.properties = extra.iter().map(|e| (e.name.to_string(), RefOr::T(e.schema.clone()))).collect();
    out.properties.extend(def.properties.clone());
    let mut required: Vec<String> = extra.iter().filter(|e| e.required).map(|e| e.name.to_string()).collect();
    required.extend(def.required.clone());
    out.required = required;
    RefOr::T(Schema::Object(out))
}

impl PartialSchema for CreateJob {
    fn schema() -> RefOr<Schema> {
        definition_with(vec![Extra {
            name: "jobId",
            schema: string(
                Some(ID_PATTERN),
                None,
                "The job's id, unique in the tenant (deleted jobs keep theirs for the retention period).",
            ),
            required: true,
        }])
    }
}

impl ToSchema for CreateJob {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("CreateJob")
    }
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        <JobDefinition as ToSchema>::schemas(schemas);
    }
}

impl PartialSchema for UpdateJob {
    fn schema() -> RefOr<Schema> {
        let version = ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(1))
            .description(Some("ignored (the version to replace is If-Match)"));
        let state = ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(["ENABLED", "PAUSED", "DELETED"]))
            .description(Some("ignored (pause, resume and delete change it)"));
        definition_with(vec![
            Extra {
                name: "jobId",
                schema: string(Some(ID_PATTERN), None, "must be the job in the path when sent"),
                required: false,
            },
            Extra { name: "version", schema: Schema::Object(version.build()), required: false },
            Extra { name: "etag", schema: string(None, Some(24), "ignored"), required: false },
            Extra { name: "state", schema: Schema::Object(state.build()), required: false },
        ])
    }
}

impl ToSchema for UpdateJob {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("UpdateJob")
    }
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        <JobDefinition as ToSchema>::schemas(schemas);
    }
}

/// The business-calendar version a job's next fires were planned with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CalendarVersion {
    /// The calendar's id.
    pub calendar: String,
    /// Its version.
    #[schema(minimum = 1)]
    pub version: u64,
}

/// A job: its current definition, or a version snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    /// Id.
    #[schema(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub job_id: String,
    /// Version (1 on create, +1 on each change).
    #[schema(minimum = 1)]
    pub version: u64,
    /// `"{version}"`, for `If-Match`.
    #[schema(example = "\"3\"")]
    pub etag: String,
    /// ENABLED, PAUSED, DELETED, or COMPLETED (its `maxRuns` scheduled fires were created).
    pub state: JobState,
    /// The definition with every default filled in.
    #[serde(deserialize_with = "crate::lenient::definition")]
    #[schema(value_type = sundial_model::openapi::StoredDefinition)]
    pub definition: JobDefinition,
    /// The next fire (enabled jobs; `null` otherwise, or when the schedule has no more).
    #[serde(serialize_with = "time::opt")]
    #[schema(required = true)]
    pub next_fire_at: Option<DateTime<Utc>>,
    /// Created.
    #[serde(serialize_with = "time::one")]
    pub created_at: DateTime<Utc>,
    /// Last changed (for a version: when that version was written).
    #[serde(serialize_with = "time::one")]
    pub updated_at: DateTime<Utc>,
    /// The tz database release `nextFireAt` was computed with (`"2025b"`); empty from a server
    /// older than the field.
    #[serde(default)]
    #[schema(example = "2025b")]
    pub tzdb_version: String,
    /// The business-calendar versions its planned fires used (jobs with a business calendar).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calendar_versions: Vec<CalendarVersion>,
    /// Scheduled fires created so far, counted against `maxRuns` (jobs with `maxRuns`, on `GET
    /// /v1/jobs/{jobId}`; absent elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub runs: Option<u64>,
}

/// A job after a change: create, update, delete, pause, resume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobChange {
    /// The job as changed.
    pub job: Job,
    /// Its next fires (empty unless enabled).
    #[serde(serialize_with = "time::many")]
    pub next_fires: Vec<DateTime<Utc>>,
    /// Queued-ahead executions the change canceled.
    #[serde(default)]
    #[schema(required = true)]
    pub canceled_executions: Vec<String>,
    /// Queued-ahead executions a pause held.
    #[serde(default)]
    #[schema(required = true)]
    pub held_executions: Vec<String>,
    /// Queued-ahead executions an edit moved to the new definition.
    #[serde(default)]
    #[schema(required = true)]
    pub amended_executions: Vec<String>,
    /// Held executions a resume released.
    #[serde(default)]
    #[schema(required = true)]
    pub released_executions: Vec<String>,
    /// What a resume with `catchUp` replayed of the paused window (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up: Option<crate::executions::BackfillReport>,
}

/// `POST /v1/jobs/{jobId}/resume`: the optional body of a resume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResumeRequest {
    /// What to replay of the paused window (`[paused at, resumed at)`), in the same call:
    /// `none` (default: fire again from the next instant), `all` (each fire the pause skipped,
    /// at most the backfill limit) or `last` (the latest one only). Replayed fires are
    /// backfilled executions: paced, with the current definition, within the job's
    /// `retry.maxAgeSecs`; a window they cannot cover is refused (400 on `catchUp`) and the job
    /// stays paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, pattern = "^(none|all|last)$", example = "last")]
    pub catch_up: Option<String>,
    /// Seconds between two replayed fires' starts (0-3600, default 0: all at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 3600)]
    pub pace_secs: Option<u32>,
}

/// `POST /v1/preview`: a draft schedule's next fires.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreviewRequest {
    /// The draft schedule.
    pub schedule: ScheduleSpec,
    /// How many fires (1-1000, default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 1000, default = 10)]
    pub count: Option<u32>,
    /// Fires strictly after this instant (default: now). RFC 3339, between 1970 and 2100.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "time::opt",
        deserialize_with = "sundial_schedule::instant::bounded_opt"
    )]
    #[schema(pattern = "^(19[7-9][0-9]|20[0-9][0-9]|2100)-", example = "2026-12-01T09:00:00Z")]
    pub after: Option<DateTime<Utc>>,
}

/// A preview's answer: the fires, and for a draft with a business calendar the rolled and the
/// skipped ones with their reasons.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    /// The fires, in order.
    #[serde(serialize_with = "time::many")]
    pub fires: Vec<DateTime<Utc>>,
    /// Fires a business calendar moved (drafts with a business calendar only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolled: Option<Vec<RolledFire>>,
    /// Fires a business calendar dropped (drafts with a business calendar only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<Vec<SkippedFire>>,
    /// The expression that makes each fire, in the order of `fires` (drafts with several
    /// expressions only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fire_expressions: Option<Vec<FireExpression>>,
}

/// Which of a schedule's expressions makes one fire: the first in index order when several
/// fire at the same instant (they make one fire).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FireExpression {
    /// 0 for `expression`, i + 1 for `expressions[i]`.
    pub expression_index: u32,
    /// Its text, as the definition has it.
    pub expression: String,
}

/// A fire a business calendar moved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolledFire {
    /// Where it fires.
    #[serde(serialize_with = "time::one")]
    pub at: DateTime<Utc>,
    /// Where the schedule put it.
    #[serde(serialize_with = "time::one")]
    pub rolled_from: DateTime<Utc>,
    /// Why (`holiday 2026-12-25 (Christmas)`).
    pub reason: String,
}

/// `GET /v1/jobs/{jobId}/upcoming`: the fires of a window and the daylight-saving transitions
/// they cross.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpcomingFires {
    /// The job's zone.
    pub timezone: String,
    /// Window start.
    #[serde(serialize_with = "time::one")]
    pub from: DateTime<Utc>,
    /// Window end.
    #[serde(serialize_with = "time::one")]
    pub to: DateTime<Utc>,
    /// The fires in the window (at most 1,000; see `truncated`).
    #[serde(serialize_with = "time::many")]
    pub fires: Vec<DateTime<Utc>>,
    /// More fires than listed fall in the window.
    pub truncated: bool,
    /// The zone's transitions in the window.
    pub transitions: Vec<DstTransition>,
    /// Fires of the window a business calendar moved (jobs with a business calendar only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolled: Option<Vec<RolledFire>>,
    /// The schedule's instants of the window, up to its last listed fire, that a business
    /// calendar removed (jobs with a business calendar only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<Vec<SkippedFire>>,
    /// The expression that makes each fire, in the order of `fires` (jobs with several
    /// expressions only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fire_expressions: Option<Vec<FireExpression>>,
}

/// What kind of transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ShiftKind {
    /// Clocks go forward: some local times do not exist.
    Gap,
    /// Clocks go back: some local times happen twice.
    Overlap,
}

impl ShiftKind {
    /// The kind as sent.
    pub fn as_str(self) -> &'static str {
        match self {
            ShiftKind::Gap => "gap",
            ShiftKind::Overlap => "overlap",
        }
    }
}

/// A daylight-saving (or other offset) transition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DstTransition {
    /// The instant of the change.
    #[serde(serialize_with = "time::one")]
    pub at: DateTime<Utc>,
    /// Gap or overlap.
    pub kind: ShiftKind,
    /// UTC offset before (seconds).
    pub offset_before_secs: i32,
    /// UTC offset after (seconds).
    pub offset_after_secs: i32,
    /// First local time affected.
    #[schema(example = "2026-03-29T01:00:00")]
    pub local_from: String,
    /// Last local time affected.
    #[schema(example = "2026-03-29T02:00:00")]
    pub local_to: String,
    /// What the job's policy does there.
    pub note: String,
    /// The schedule's local times in the affected range and where they fire.
    pub affected: Vec<DstAffected>,
}

/// A local time of the schedule inside a transition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DstAffected {
    /// The wall-clock time.
    pub local_time: String,
    /// Where it fires (`null`: skipped).
    #[serde(serialize_with = "time::opt")]
    #[schema(required = true)]
    pub at: Option<DateTime<Utc>>,
    /// What happened to it.
    pub note: String,
}

/// `GET /v1/tz-report`: jobs whose fires the tz database upgrade moves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TzReport {
    /// The release this build carries.
    #[schema(example = "2025b")]
    pub compiled_tzdb_version: String,
    /// Fires compared per job.
    pub fires: u32,
    /// Jobs examined on this page.
    pub examined: u64,
    /// The jobs whose fires move (or cannot be compared).
    pub items: Vec<TzReportJob>,
    /// The next page, if any.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// Whether a job's fires moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum TzReportStatus {
    /// Some fires move.
    Changed,
    /// The recorded release's rules are not available to compare with.
    RulesUnavailable,
}

impl TzReportStatus {
    /// The status as sent.
    pub fn as_str(self) -> &'static str {
        match self {
            TzReportStatus::Changed => "changed",
            TzReportStatus::RulesUnavailable => "rulesUnavailable",
        }
    }
}

/// One job of the tz report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TzReportJob {
    /// The job.
    #[schema(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub job_id: String,
    /// Its zone.
    #[schema(example = "America/Mexico_City")]
    pub timezone: String,
    /// The release its fires were computed with.
    #[schema(example = "2022a")]
    pub recorded_tzdb_version: String,
    /// Changed, or rules unavailable.
    pub status: TzReportStatus,
    /// Why the rules are unavailable.
    #[schema(required = true)]
    pub reason: Option<String>,
    /// The fires that move.
    pub changes: Vec<TzFireChange>,
}

/// A fire the upgrade moves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TzFireChange {
    /// The wall-clock time.
    #[schema(example = "2023-04-02T09:00:00", pattern = "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}$")]
    pub local_time: String,
    /// Where it fired under the recorded release.
    #[serde(serialize_with = "time::opt")]
    #[schema(required = true)]
    pub old_at: Option<DateTime<Utc>>,
    /// Where it fires under the compiled release.
    #[serde(serialize_with = "time::opt")]
    #[schema(required = true)]
    pub new_at: Option<DateTime<Utc>>,
    /// `newAt - oldAt` (seconds).
    #[schema(required = true, example = 3600)]
    pub shift_secs: Option<i64>,
}
