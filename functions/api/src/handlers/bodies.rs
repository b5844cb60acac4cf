//! How each request body is read ([`FromBody`]): the plain ones by [`parse_body`], which names
//! the offending field; a create and an edit carry a job id beside the definition, read first,
//! so a definition error still names its own field (`retry.maxAttempts`, not `.`).

use crate::error::ApiError;
use crate::extract::{parse_body, FromBody};
use serde_json::Value;
use sundial_api_types as wire;
use sundial_model::JobDefinition;
use sundial_schedule::BusinessCalendarSpec;

macro_rules! plain {
    ($($t:ty),* $(,)?) => {$(
        impl FromBody for $t {
            fn from_body(body: &[u8]) -> Result<Self, ApiError> {
                parse_body(body)
            }
        }
    )*};
}

plain!(
    wire::PreviewRequest,
    wire::BackfillRequest,
    wire::EventRequest,
    wire::ReplayRequest,
    wire::ResourceLimitRequest,
    BusinessCalendarSpec
);

/// `POST /v1/jobs/{jobId}/resume`: the body is optional (a plain resume).
impl FromBody for wire::ResumeRequest {
    fn from_body(body: &[u8]) -> Result<Self, ApiError> {
        if absent(body) {
            return Ok(wire::ResumeRequest::default());
        }
        parse_body(body)
    }
}

/// An optional body left out: empty, or JSON `null` (the OpenAPI document's `null | object`).
fn absent(body: &[u8]) -> bool {
    let s = std::str::from_utf8(body).map(str::trim).unwrap_or("x");
    s.is_empty() || s == "null"
}

/// `POST /v1/jobs/{jobId}/trigger`: the body is optional (a run with the job's own parameters);
/// one that is there is read like any other.
impl FromBody for wire::TriggerRequest {
    fn from_body(body: &[u8]) -> Result<Self, ApiError> {
        if absent(body) {
            return Ok(wire::TriggerRequest::default());
        }
        parse_body(body)
    }
}

/// `POST /v1/jobs` (the document's `CreateJob`).
pub(crate) struct NewJob {
    pub(crate) job_id: String,
    pub(crate) definition: JobDefinition,
}

/// `PUT /v1/jobs/{jobId}` (the document's `UpdateJob`): the definition, and the `jobId` it
/// named, if any (it must match the path).
pub(crate) struct EditedJob {
    pub(crate) job_id: Option<String>,
    pub(crate) definition: JobDefinition,
}

fn definition_of(map: serde_json::Map<String, Value>) -> Result<JobDefinition, ApiError> {
    let bytes = serde_json::to_vec(&Value::Object(map))
        .map_err(|_| ApiError::invalid("body", "not a JSON object"))?;
    parse_body(&bytes)
}

fn job_id_of(v: Option<Value>) -> Result<Option<String>, ApiError> {
    match v {
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ApiError::invalid("jobId", "must be a string")),
        None => Ok(None),
    }
}

impl FromBody for NewJob {
    fn from_body(body: &[u8]) -> Result<Self, ApiError> {
        let mut map: serde_json::Map<String, Value> = parse_body(body)?;
        let job_id = job_id_of(map.remove("jobId"))?.ok_or_else(|| ApiError::invalid("jobId", "required"))?;
        Ok(NewJob { job_id, definition: definition_of(map)? })
    }
}

impl FromBody for EditedJob {
    fn from_body(body: &[u8]) -> Result<Self, ApiError> {
        let mut map: serde_json::Map<String, Value> = parse_body(body)?;
        let job_id = job_id_of(map.remove("jobId"))?;
        // A job read back may be sent as it is: these describe it, they do not change it.
        for k in ["version", "etag", "state"] {
            map.remove(k);
        }
        Ok(EditedJob { job_id, definition: definition_of(map)? })
    }
}
