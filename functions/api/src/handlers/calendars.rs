//! Business calendars: put (create or edit with If-Match), read, delete, list, read a version.

use super::Cx;
use crate::dto;
use crate::error::ApiError;
use crate::router::{ok, parse_body, ApiResponse, Res};
use lambda_http::http::header::ETAG;
use lambda_http::http::StatusCode;
use serde_json::json;
use sundial_core::control;

/// `PUT /v1/calendars/{calendarId}`: 201 when created, 200 when edited.
pub(crate) async fn put(cx: &Cx<'_>) -> Res {
    let spec: sundial_core::schedule::BusinessCalendarSpec = parse_body(&cx.req.body)?;
    let v = control::calendars::put(cx.ctl, cx.caller, cx.p(0), cx.if_match()?, spec, cx.now).await?;
    let status = if v.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok(ApiResponse::json(status, dto::calendar_view(&v)).header(ETAG, dto::etag(v.calendar.version)))
}

/// `GET /v1/calendars/{calendarId}`.
pub(crate) async fn get(cx: &Cx<'_>) -> Res {
    let c = control::calendars::get(cx.ctl, cx.caller, cx.p(0)).await?;
    Ok(ApiResponse::json(StatusCode::OK, dto::calendar(&c)).header(ETAG, dto::etag(c.version)))
}

/// `DELETE /v1/calendars/{calendarId}` (refused while in use).
pub(crate) async fn delete(cx: &Cx<'_>) -> Res {
    let c = control::calendars::delete(cx.ctl, cx.caller, cx.p(0), cx.if_match()?, cx.now).await?;
    ok(json!({"calendarId": c.id, "version": c.version, "deleted": true}))
}

/// `GET /v1/calendars`.
pub(crate) async fn list(cx: &Cx<'_>) -> Res {
    let page = control::calendars::list(cx.ctl, cx.caller, cx.q.limit()?, cx.q.str("cursor")).await?;
    ok(dto::page(page.items.iter().map(dto::calendar).collect(), page.next))
}

/// `GET /v1/calendars/{calendarId}/versions/{version}`.
pub(crate) async fn get_version(cx: &Cx<'_>) -> Res {
    let v: u64 = cx
        .p(1)
        .parse()
        .ok()
        .filter(|v| *v > 0)
        .ok_or_else(|| ApiError::invalid("version", "must be a positive integer"))?;
    let c = control::calendars::get_version(cx.ctl, cx.caller, cx.p(0), v).await?;
    ok(dto::calendar(&c))
}
