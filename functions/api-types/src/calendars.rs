//! Business calendars and resource limits.

use crate::time;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sundial_schedule::BusinessCalendarSpec;
use utoipa::ToSchema;

/// A business calendar version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BusinessCalendar {
    /// Id.
    #[schema(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub calendar_id: String,
    /// Version (1 on create, +1 on each edit).
    #[schema(minimum = 1)]
    pub version: u64,
    /// `"{version}"`, for `If-Match`.
    #[schema(example = "\"3\"")]
    pub etag: String,
    /// The calendar.
    #[serde(deserialize_with = "crate::lenient::strict")]
    pub definition: BusinessCalendarSpec,
    /// Created.
    #[serde(serialize_with = "time::one")]
    pub created_at: DateTime<Utc>,
    /// This version written.
    #[serde(serialize_with = "time::one")]
    pub updated_at: DateTime<Utc>,
}

/// A calendar after a put, with the jobs it re-planned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BusinessCalendarChange {
    /// The calendar as written.
    pub calendar: BusinessCalendar,
    /// The jobs using it whose next fires were planned again.
    #[serde(default)]
    #[schema(required = true)]
    pub replanned_jobs: Vec<String>,
}

/// `DELETE /v1/calendars/{calendarId}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletedCalendar {
    /// The calendar.
    pub calendar_id: String,
    /// Its last version.
    pub version: u64,
    /// Always true.
    pub deleted: bool,
}

/// `PUT /v1/resources/{resource}`: set a platform-wide resource limit (operators only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceLimitRequest {
    /// Executions that may hold the resource at once, across all tenants (0-10000; 0 stops new
    /// starts).
    #[schema(minimum = 0, maximum = 10000)]
    pub limit: i64,
    /// Most units one tenant may hold at once (1 to `limit`; absent: half the limit rounded up;
    /// `null` is refused, like every other optional field).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "sundial_model::not_null")]
    #[schema(minimum = 1, maximum = 10000, nullable = false)]
    pub per_tenant: Option<i64>,
}

/// A live holder of a resource (operators only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceHolder {
    /// `{tenant}:{job}@{ms}`: the holding execution, of any tenant.
    pub execution_id: String,
    /// When its lease ends (it gives the unit back at its attempt's end, or the lease does).
    #[serde(serialize_with = "time::one")]
    pub lease_until: DateTime<Utc>,
}

/// A resource limit; operators also see who set it and its holders.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLimit {
    /// Its name.
    #[schema(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub resource: String,
    /// Units across all tenants.
    #[schema(minimum = 0, maximum = 10000)]
    pub limit: u32,
    /// Units one tenant may hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 10000)]
    pub per_tenant: Option<u32>,
    /// Version (+1 on each change).
    #[schema(minimum = 1)]
    pub version: u64,
    /// Last changed.
    #[serde(serialize_with = "time::one")]
    pub updated_at: DateTime<Utc>,
    /// Who set it (operators only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<String>,
    /// Units held now (operators only, `GET /v1/resources/{resource}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0)]
    pub holding: Option<u32>,
    /// The holders (operators only, `GET /v1/resources/{resource}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holders: Option<Vec<ResourceHolder>>,
}

/// `DELETE /v1/resources/{resource}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletedResource {
    /// The resource.
    pub resource: String,
    /// Always true.
    pub deleted: bool,
}
