//! Path and query parameters, one struct per operation family. Each value is a type that parses
//! and checks itself, with the message the API has always given (`limit`: "must be an integer
//! between 1 and 100"), so [`crate::extract::Q`] and [`crate::extract::P`] name the parameter and
//! the handlers get checked values. The same structs document the parameters (`IntoParams`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer};
use sundial_model::ExecStatus;
use utoipa::IntoParams;

/// Reads a parameter's text and checks it with `parse`, or fails with `msg`.
fn text<'de, D: Deserializer<'de>, T>(
    d: D,
    parse: impl Fn(&str) -> Option<T>,
    msg: &str,
) -> Result<T, D::Error> {
    let s = String::deserialize(d)?;
    parse(&s).ok_or_else(|| serde::de::Error::custom(msg))
}

/// An integer parameter within `MIN..=MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Int<const MIN: u64, const MAX: u64>(pub u64);

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Int<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let msg = format!("must be an integer between {MIN} and {MAX}");
        text(d, |s| s.parse::<u64>().ok().filter(|n| (MIN..=MAX).contains(n)).map(Int), &msg)
    }
}

impl<const MIN: u64, const MAX: u64> Int<MIN, MAX> {
    /// As `u32` (every `MAX` used here fits).
    pub fn get(self) -> u32 {
        u32::try_from(self.0).unwrap_or(u32::MAX)
    }
}

/// A page size: 1-100.
pub type PageLimit = Int<1, 100>;
/// A children page size: 1-1000 (`control::executions::CHILDREN_PAGE_MAX`).
pub type ChildrenLimit = Int<1, { sundial_core::control::executions::CHILDREN_PAGE_MAX as u64 }>;
/// Days of upcoming fires: 1-90.
pub type Days = Int<1, 90>;
/// Fires the tz report compares per job (`control::tzreport::MAX_REPORT_FIRES`).
pub type ReportFires = Int<1, { sundial_core::control::tzreport::MAX_REPORT_FIRES as u64 }>;

/// `true` or `false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let parse = |s: &str| match s {
            "true" => Some(Flag(true)),
            "false" => Some(Flag(false)),
            _ => None,
        };
        text(d, parse, "must be true or false")
    }
}

/// An execution status, in any case (`dead`, `DEAD`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status(pub ExecStatus);

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(
            d,
            |s| ExecStatus::parse(&s.to_ascii_uppercase()).map(Status),
            "must be one of READY, RUNNING, RETRY_WAIT, SUCCEEDED, FAILED, DEAD, CANCELED, SKIPPED, WAITING",
        )
    }
}

/// `asc` or `desc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OldestFirst(pub bool);

impl<'de> Deserialize<'de> for OldestFirst {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let parse = |s: &str| match s {
            "asc" => Some(OldestFirst(true)),
            "desc" => Some(OldestFirst(false)),
            _ => None,
        };
        text(d, parse, "must be asc or desc")
    }
}

/// An RFC 3339 instant between 1970 and 2100.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instant(pub DateTime<Utc>);

impl<'de> Deserialize<'de> for Instant {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let parse = |s: &str| {
            DateTime::parse_from_rfc3339(s)
                .map(|t| t.with_timezone(&Utc))
                .ok()
                .filter(|t| sundial_schedule::instant::in_range(*t))
                .map(Instant)
        };
        text(d, parse, sundial_schedule::instant::RANGE_MESSAGE)
    }
}

/// An id (`^[A-Za-z0-9_-]{1,64}$`) in a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Id(pub String);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        sundial_model::keys::validate_id("id", &s).map_err(|e| serde::de::Error::custom(e.reason))?;
        Ok(Id(s))
    }
}

/// A definition version in a path: a positive integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version(pub u64);

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, |s| s.parse::<u64>().ok().filter(|v| *v > 0).map(Version), "must be a positive integer")
    }
}

/// `?limit=&cursor=`: a page of a list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Page size.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100, default = 50)]
    pub limit: Option<PageLimit>,
    /// Opaque: `nextCursor` of the previous page of the same list (another string is 400 on
    /// `cursor`).
    #[param(min_length = 2, max_length = 1024, pattern = "^([0-9a-f]{2})+$")]
    pub cursor: Option<String>,
}

impl ListQuery {
    /// The page size, if sent.
    pub fn limit(&self) -> Option<u32> {
        self.limit.map(Int::get)
    }
}

/// `GET /v1/jobs`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct ListJobsQuery {
    /// Page size.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100, default = 50)]
    pub limit: Option<PageLimit>,
    /// Opaque: `nextCursor` of the previous page of the same list (another string is 400 on
    /// `cursor`).
    #[param(min_length = 2, max_length = 1024, pattern = "^([0-9a-f]{2})+$")]
    pub cursor: Option<String>,
    /// Also deleted jobs (kept for the retention period).
    #[param(value_type = Option<bool>, default = false)]
    pub include_deleted: Option<Flag>,
}

/// `GET /v1/jobs/{jobId}/executions`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct JobExecutionsQuery {
    /// Only executions in this status.
    #[param(value_type = Option<ExecStatus>)]
    pub status: Option<Status>,
    /// `desc` (newest first, the default) or `asc`.
    #[param(value_type = Option<String>, pattern = "^(asc|desc)$", default = "desc")]
    pub order: Option<OldestFirst>,
    /// Page size.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100, default = 50)]
    pub limit: Option<PageLimit>,
    /// Opaque: `nextCursor` of the previous page of the same list (another string is 400 on
    /// `cursor`).
    #[param(min_length = 2, max_length = 1024, pattern = "^([0-9a-f]{2})+$")]
    pub cursor: Option<String>,
    /// Only executions scheduled at or before this instant: with `until=` now, the newest is
    /// the job's last run, not a fire the tick has already planned for the coming minutes.
    /// RFC 3339, 1970-2100.
    #[param(value_type = Option<String>, format = DateTime, pattern = "^(19[7-9][0-9]|20[0-9][0-9]|2100)-")]
    pub until: Option<Instant>,
}

/// `GET /v1/executions?status=`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExecutionsQuery {
    /// Required: RETRY_WAIT, FAILED, DEAD or CANCELED (per job: `/v1/jobs/{jobId}/executions`).
    #[param(value_type = ExecStatus, required = true)]
    pub status: Option<Status>,
    /// Page size.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100, default = 50)]
    pub limit: Option<PageLimit>,
    /// Opaque: `nextCursor` of the previous page of the same list (another string is 400 on
    /// `cursor`).
    #[param(min_length = 2, max_length = 1024, pattern = "^([0-9a-f]{2})+$")]
    pub cursor: Option<String>,
}

/// `GET /v1/executions/{executionId}/children`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChildrenQuery {
    /// Children per page: DynamoDB reads no more (a map-reduce fire has up to 100,000 children).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000, default = 100)]
    pub limit: Option<ChildrenLimit>,
    /// Opaque: `nextCursor` of the previous page of the same list (another string is 400 on
    /// `cursor`).
    #[param(min_length = 2, max_length = 1024, pattern = "^([0-9a-f]{2})+$")]
    pub cursor: Option<String>,
}

/// `GET /v1/operations`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct OperationsQuery {
    /// Only this job's entries.
    #[param(value_type = Option<String>, pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub job_id: Option<Id>,
    /// Page size.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100, default = 50)]
    pub limit: Option<PageLimit>,
    /// Opaque: `nextCursor` of the previous page of the same list (another string is 400 on
    /// `cursor`).
    #[param(min_length = 2, max_length = 1024, pattern = "^([0-9a-f]{2})+$")]
    pub cursor: Option<String>,
}

/// `GET /v1/tz-report`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TzReportQuery {
    /// Fires compared per job (default 50).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000, default = 50)]
    pub fires: Option<ReportFires>,
    /// Page size.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100, default = 50)]
    pub limit: Option<PageLimit>,
    /// Opaque: `nextCursor` of the previous page of the same list (another string is 400 on
    /// `cursor`).
    #[param(min_length = 2, max_length = 1024, pattern = "^([0-9a-f]{2})+$")]
    pub cursor: Option<String>,
}

/// `GET /v1/jobs/{jobId}/upcoming`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UpcomingQuery {
    /// Window start (default: now, or the schedule's start when later). RFC 3339, 1970-2100.
    #[param(value_type = Option<String>, format = DateTime, pattern = "^(19[7-9][0-9]|20[0-9][0-9]|2100)-")]
    pub from: Option<Instant>,
    /// Window length in days (1-90, default 28).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 90, default = 28)]
    pub days: Option<Days>,
}

/// `{jobId}`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
#[serde(rename_all = "camelCase")]
pub struct JobPath {
    /// The job.
    #[param(pattern = "^[A-Za-z0-9_-]{1,64}$", example = "nightly-settlement")]
    pub job_id: String,
}

/// `{jobId}/versions/{version}`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
#[serde(rename_all = "camelCase")]
pub struct JobVersionPath {
    /// The job.
    #[param(pattern = "^[A-Za-z0-9_-]{1,64}$", example = "nightly-settlement")]
    pub job_id: String,
    /// The version.
    #[param(value_type = u64, minimum = 1, maximum = 9007199254740991_u64)]
    pub version: Version,
}

/// `{executionId}`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionPath {
    /// `{jobId}@{scheduled epoch ms}`, or a child's `{jobId}@{scheduled epoch ms}.{child}`
    /// (`.s3`: shard 3; `.m-eu-west-1`: broadcast member `eu-west-1`; `.i-{key}`: map item).
    #[param(
        pattern = "^[A-Za-z0-9_-]{1,64}@[0-9]{1,15}(\\.(s[0-9]{1,5}|m-[A-Za-z0-9_-]{1,64}|i-[A-Za-z0-9_-]{1,64}))?$",
        example = "nightly-settlement@1796095800000"
    )]
    pub execution_id: String,
}

/// `{calendarId}`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
#[serde(rename_all = "camelCase")]
pub struct CalendarPath {
    /// The calendar.
    #[param(pattern = "^[A-Za-z0-9_-]{1,64}$", example = "uk-banking")]
    pub calendar_id: String,
}

/// `{calendarId}/versions/{version}`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
#[serde(rename_all = "camelCase")]
pub struct CalendarVersionPath {
    /// The calendar.
    #[param(pattern = "^[A-Za-z0-9_-]{1,64}$", example = "uk-banking")]
    pub calendar_id: String,
    /// The version.
    #[param(value_type = u64, minimum = 1, maximum = 9007199254740991_u64)]
    pub version: Version,
}

/// `{resource}`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ResourcePath {
    /// The resource limit's name.
    #[param(pattern = "^[A-Za-z0-9_-]{1,64}$", example = "legacy-db")]
    pub resource: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_checked_with_the_api_s_messages() {
        let q: Result<ListJobsQuery, _> = serde_json::from_value(serde_json::json!({"limit": "0"}));
        assert!(q.unwrap_err().to_string().contains("between 1 and 100"));
        let q: ListJobsQuery =
            serde_json::from_value(serde_json::json!({"limit": "7", "includeDeleted": "true"})).unwrap();
        assert_eq!((q.limit.map(Int::get), q.include_deleted), (Some(7), Some(Flag(true))));
        let v: Result<JobVersionPath, _> =
            serde_json::from_value(serde_json::json!({"jobId": "a", "version": "0"}));
        assert!(v.unwrap_err().to_string().contains("positive integer"));
    }
}
