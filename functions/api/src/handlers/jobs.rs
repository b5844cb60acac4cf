//! Jobs: create, list, read, edit, pause, resume, delete, and their definition versions.

use super::Cx;
use crate::dto;
use crate::error::ApiError;
use crate::router::{ok, parse_body, ApiResponse, Res};
use lambda_http::http::header::{ETAG, LOCATION};
use lambda_http::http::StatusCode;
use serde_json::Value;
use sundial_core::control;
use sundial_core::model::{JobDefinition, JobState};

/// `POST /v1/jobs`: the body is a definition with its `jobId`.
pub(crate) async fn create(cx: &Cx<'_>) -> Res {
    let mut map: serde_json::Map<String, Value> = parse_body(&cx.req.body)?;
    let job_id = match map.remove("jobId") {
        Some(Value::String(s)) => s,
        Some(_) => return Err(ApiError::invalid("jobId", "must be a string")),
        None => return Err(ApiError::invalid("jobId", "required")),
    };
    let bytes = serde_json::to_vec(&Value::Object(map))
        .map_err(|_| ApiError::invalid("body", "not a JSON object"))?;
    let def: JobDefinition = parse_body(&bytes)?;
    let v = control::jobs::create(cx.ctl, cx.caller, &job_id, def, cx.now).await?;
    Ok(ApiResponse::json(StatusCode::CREATED, dto::job_view(&v))
        .header(LOCATION, format!("/v1/jobs/{job_id}"))
        .header(ETAG, dto::etag(v.job.version)))
}

/// `GET /v1/jobs`.
pub(crate) async fn list(cx: &Cx<'_>) -> Res {
    let q = &cx.q;
    let page = control::jobs::list(cx.ctl, cx.caller, q.limit()?, q.str("cursor"), q.bool("includeDeleted")?)
        .await?;
    ok(dto::page(page.items.iter().map(|j| dto::job_at(j, cx.now)).collect(), page.next))
}

/// `GET /v1/jobs/{jobId}`.
pub(crate) async fn get(cx: &Cx<'_>) -> Res {
    let j = control::jobs::get(cx.ctl, cx.caller, cx.p(0)).await?;
    Ok(ApiResponse::json(StatusCode::OK, dto::job_at(&j, cx.now)).header(ETAG, dto::etag(j.version)))
}

/// `PUT /v1/jobs/{jobId}`: If-Match is required.
pub(crate) async fn update(cx: &Cx<'_>) -> Res {
    let expected = cx.if_match()?.ok_or_else(|| {
        ApiError::new(
            StatusCode::PRECONDITION_REQUIRED,
            "precondition_required",
            "send If-Match with the job's ETag or version",
        )
        .field("If-Match")
    })?;
    let def = definition_body(&cx.req.body, Some(cx.p(0)))?;
    let v = control::jobs::update(cx.ctl, cx.caller, cx.p(0), expected, def, cx.now).await?;
    Ok(ApiResponse::json(StatusCode::OK, dto::job_view(&v)).header(ETAG, dto::etag(v.job.version)))
}

/// Delete, pause or resume (`state`): If-Match is optional.
pub(crate) async fn set_state(cx: &Cx<'_>, state: JobState) -> Res {
    let v = control::jobs::set_state(cx.ctl, cx.caller, cx.p(0), state, cx.if_match()?, cx.now).await?;
    Ok(ApiResponse::json(StatusCode::OK, dto::job_view(&v)).header(ETAG, dto::etag(v.job.version)))
}

/// `GET /v1/jobs/{jobId}/versions/{version}`.
pub(crate) async fn get_version(cx: &Cx<'_>) -> Res {
    let v: u64 = cx.p(1).parse().map_err(|_| ApiError::invalid("version", "must be a positive integer"))?;
    let j = control::jobs::get_version(cx.ctl, cx.caller, cx.p(0), v).await?;
    ok(dto::job(&j))
}

/// `GET /v1/jobs/{jobId}/versions`, newest first.
pub(crate) async fn list_versions(cx: &Cx<'_>) -> Res {
    let (q, id) = (&cx.q, cx.p(0));
    let page = control::jobs::list_versions(cx.ctl, cx.caller, id, q.limit()?, q.str("cursor")).await?;
    ok(dto::page(page.items.iter().map(dto::job).collect(), page.next))
}

/// The definition in an update body (a `jobId` in it must match the path).
fn definition_body(body: &[u8], path_job: Option<&str>) -> Result<JobDefinition, ApiError> {
    let mut map: serde_json::Map<String, Value> = parse_body(body)?;
    match (map.remove("jobId"), path_job) {
        (Some(Value::String(s)), Some(p)) if s != p => {
            return Err(ApiError::invalid("jobId", "does not match the job in the path (ids cannot change)"))
        }
        (Some(Value::String(_)), _) | (None, _) => {}
        (Some(_), _) => return Err(ApiError::invalid("jobId", "must be a string")),
    }
    for k in ["version", "etag", "state"] {
        map.remove(k);
    }
    let bytes = serde_json::to_vec(&Value::Object(map))
        .map_err(|_| ApiError::invalid("body", "not a JSON object"))?;
    parse_body(&bytes)
}
