//! Business calendars: put (create or edit with If-Match), read, delete, list, read a version.

use super::{headers, Res};
use crate::dto;
use crate::extract::{Auth, Body, IfMatch, Now, P, Q};
use crate::params::{CalendarPath, CalendarVersionPath, ListQuery};
use crate::Api;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use sundial_api_types::{BusinessCalendar, BusinessCalendarChange, DeletedCalendar, ErrorBody, Page};
use sundial_core::control;
use sundial_schedule::BusinessCalendarSpec;

/// Create a business calendar, or edit it (If-Match): 201 when created, 200 when edited; the
/// jobs using it are planned again.
#[utoipa::path(put, path = "/v1/calendars/{calendarId}", operation_id = "putCalendar", tag = "calendars",
    params(CalendarPath, IfMatch), request_body = BusinessCalendarSpec,
    responses(
        (status = 200, description = "Edited", body = BusinessCalendarChange, headers(("ETag" = String, description = "its version"))),
        (status = 201, description = "Created", body = BusinessCalendarChange, headers(("ETag" = String, description = "its version"))),
        (status = 404, description = "If-Match for a calendar that does not exist", body = ErrorBody),
        (status = 409, description = "It exists (create without If-Match), or is deleted", body = ErrorBody),
        (status = 412, description = "If-Match names another version", body = ErrorBody),
    ))]
pub(crate) async fn put_calendar(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
    P(p): P<CalendarPath>,
    IfMatch(m): IfMatch,
    Body(spec): Body<BusinessCalendarSpec>,
) -> Res<(StatusCode, HeaderMap, Json<BusinessCalendarChange>)> {
    let v = control::calendars::put(api.control(), &caller, &p.calendar_id, m, spec, now).await?;
    let status = if v.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, headers(v.calendar.version, None)?, Json(dto::calendar_view(&v))))
}

/// Read a business calendar.
#[utoipa::path(get, path = "/v1/calendars/{calendarId}", operation_id = "getCalendar", tag = "calendars",
    params(CalendarPath),
    responses(
        (status = 200, description = "The calendar", body = BusinessCalendar, headers(("ETag" = String, description = "its version"))),
        (status = 404, description = "No such calendar for this tenant", body = ErrorBody),
    ))]
pub(crate) async fn get_calendar(
    State(api): State<Api>,
    Auth(caller): Auth,
    P(p): P<CalendarPath>,
) -> Res<(HeaderMap, Json<BusinessCalendar>)> {
    let c = control::calendars::get(api.control(), &caller, &p.calendar_id).await?;
    Ok((headers(c.version, None)?, Json(dto::calendar(&c))))
}

/// Delete a business calendar (refused while jobs use it).
#[utoipa::path(delete, path = "/v1/calendars/{calendarId}", operation_id = "deleteCalendar", tag = "calendars",
    params(CalendarPath, IfMatch),
    responses(
        (status = 200, description = "Deleted", body = DeletedCalendar),
        (status = 404, description = "No such calendar for this tenant", body = ErrorBody),
        (status = 409, description = "Jobs still use it", body = ErrorBody),
        (status = 412, description = "If-Match names another version", body = ErrorBody),
    ))]
pub(crate) async fn delete_calendar(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
    P(p): P<CalendarPath>,
    IfMatch(m): IfMatch,
) -> Res<Json<DeletedCalendar>> {
    let c = control::calendars::delete(api.control(), &caller, &p.calendar_id, m, now).await?;
    Ok(Json(DeletedCalendar { calendar_id: c.id, version: c.version, deleted: true }))
}

/// The caller's business calendars.
#[utoipa::path(get, path = "/v1/calendars", operation_id = "listCalendars", tag = "calendars", params(ListQuery),
    responses((status = 200, description = "One page of calendars", body = sundial_api_types::BusinessCalendarPage)))]
pub(crate) async fn list_calendars(
    State(api): State<Api>,
    Auth(caller): Auth,
    Q(q): Q<ListQuery>,
) -> Res<Json<Page<BusinessCalendar>>> {
    let page = control::calendars::list(api.control(), &caller, q.limit(), q.cursor.as_deref()).await?;
    Ok(Json(Page::new(page.items.iter().map(dto::calendar).collect(), page.next)))
}

/// Read one calendar version.
#[utoipa::path(get, path = "/v1/calendars/{calendarId}/versions/{version}", operation_id = "getCalendarVersion",
    tag = "calendars", params(CalendarVersionPath),
    responses(
        (status = 200, description = "That version", body = BusinessCalendar),
        (status = 404, description = "No such calendar or version for this tenant", body = ErrorBody),
    ))]
pub(crate) async fn get_calendar_version(
    State(api): State<Api>,
    Auth(caller): Auth,
    P(p): P<CalendarVersionPath>,
) -> Res<Json<BusinessCalendar>> {
    let c = control::calendars::get_version(api.control(), &caller, &p.calendar_id, p.version.0).await?;
    Ok(Json(dto::calendar(&c)))
}
