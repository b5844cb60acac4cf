//! Schedule views: a draft schedule's preview, a job's upcoming fires and the tzdb upgrade report.

use super::Res;
use crate::dto;
use crate::error::ApiError;
use crate::extract::{Auth, Body, Now, P, Q};
use crate::params::{Int, JobPath, TzReportQuery, UpcomingQuery};
use crate::Api;
use axum::extract::State;
use axum::Json;
use sundial_api_types::{ErrorBody, Preview, PreviewRequest, TzReport, UpcomingFires};
use sundial_core::control;
use sundial_model::JobState;

/// Fires per job the tz report compares when `fires` is not sent.
const DEFAULT_REPORT_FIRES: u32 = 50;
/// Days of upcoming fires when `days` is not sent.
const DEFAULT_UPCOMING_DAYS: i64 = 28;

/// Preview a draft schedule: its next fires (with a business calendar, the rolled and skipped
/// ones and why).
#[utoipa::path(post, path = "/v1/preview", operation_id = "previewSchedule", tag = "runs", request_body = PreviewRequest,
    responses((status = 200, description = "The fires", body = Preview)))]
pub(crate) async fn preview_schedule(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
    Body(b): Body<PreviewRequest>,
) -> Res<Json<Preview>> {
    let count = b.count.unwrap_or(10);
    if !(1..=1000).contains(&count) {
        return Err(ApiError::invalid("count", "must be between 1 and 1000"));
    }
    let after = b.after.unwrap_or(now);
    let p = control::jobs::preview(api.control(), &caller, &b.schedule, after, count as usize).await?;
    let mut v = dto::preview(&p.lines, b.schedule.business_calendar.is_some());
    v.fire_expressions = p.expressions.map(|ix| dto::fire_expressions(&b.schedule, &ix));
    Ok(Json(v))
}

/// A job's fires in `days` days from `from`, with the daylight-saving transitions they cross.
#[utoipa::path(get, path = "/v1/jobs/{jobId}/upcoming", operation_id = "getUpcomingFires", tag = "jobs",
    params(JobPath, UpcomingQuery),
    responses(
        (status = 200, description = "The window", body = UpcomingFires),
        (status = 404, description = "No such job for this tenant", body = ErrorBody),
    ))]
pub(crate) async fn get_upcoming_fires(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
    P(p): P<JobPath>,
    Q(q): Q<UpcomingQuery>,
) -> Res<Json<UpcomingFires>> {
    let days = q.days.map_or(DEFAULT_UPCOMING_DAYS, |d| i64::from(d.get()));
    let j = control::jobs::get(api.control(), &caller, &p.job_id).await?;
    // From `from`, else from now, or from the schedule's start when that is later (a job
    // starting next spring shows its first weeks, not an empty window).
    let from = q.from.map(|f| f.0).unwrap_or_else(|| j.definition.schedule.start.map_or(now, |s| s.max(now)));
    let to = from + chrono::Duration::days(days);
    let u = match (j.state, sundial_core::trigger::cache::schedule_of(&j)) {
        (JobState::Enabled, Ok(s)) => control::upcoming::upcoming(&j.definition.schedule, &s, from, to),
        _ => control::upcoming::Upcoming {
            fires: vec![],
            truncated: false,
            transitions: vec![],
            explained: None,
            expressions: None,
        },
    };
    Ok(Json(dto::upcoming(&u, &j.definition.schedule, from, to)))
}

/// Jobs whose fires the tz database upgrade moves.
#[utoipa::path(get, path = "/v1/tz-report", operation_id = "tzReport", tag = "jobs", params(TzReportQuery),
    responses((status = 200, description = "One page of the report", body = TzReport)))]
pub(crate) async fn tz_report(
    State(api): State<Api>,
    Auth(caller): Auth,
    Q(q): Q<TzReportQuery>,
) -> Res<Json<TzReport>> {
    let fires = q.fires.map_or(DEFAULT_REPORT_FIRES, Int::get) as usize;
    let r =
        control::tzreport::report(api.control(), &caller, fires, q.limit.map(Int::get), q.cursor.as_deref())
            .await?;
    Ok(Json(dto::tz_report(&r)))
}
