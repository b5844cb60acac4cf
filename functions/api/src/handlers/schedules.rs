//! Schedule views: a draft schedule's preview, a job's upcoming fires and the tzdb upgrade report.

use super::Cx;
use crate::dto;
use crate::error::ApiError;
use crate::router::{ok, parse_body, Res};
use chrono::{DateTime, Utc};
use sundial_core::control;
use sundial_core::model::JobState;

/// Fires per job the tz report compares when `fires` is not sent.
const DEFAULT_REPORT_FIRES: usize = 50;

/// `POST /v1/preview`: the next fires of a draft schedule.
pub(crate) async fn preview(cx: &Cx<'_>) -> Res {
    let b: dto::PreviewBody = parse_body(&cx.req.body)?;
    let count = b.count.unwrap_or(10);
    if !(1..=1000).contains(&count) {
        return Err(ApiError::invalid("count", "must be between 1 and 1000"));
    }
    let after = b.after.unwrap_or(cx.now);
    let fires = control::jobs::preview(cx.ctl, cx.caller, &b.schedule, after, count as usize).await?;
    ok(dto::preview(&fires, b.schedule.business_calendar.is_some()))
}

/// `GET /v1/jobs/{jobId}/upcoming`: fires in `days` days from `from`, with the daylight-saving
/// transitions they cross.
pub(crate) async fn upcoming(cx: &Cx<'_>) -> Res {
    let days = match cx.q.str("days") {
        None => 28,
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|d| (1..=90).contains(d))
            .ok_or_else(|| ApiError::invalid("days", "must be an integer between 1 and 90"))?,
    };
    let j = control::jobs::get(cx.ctl, cx.caller, cx.p(0)).await?;
    // From `from`, else from now, or from the schedule's start when that is later (a
    // job starting next spring shows its first weeks, not an empty window).
    let from = match cx.q.str("from") {
        Some(v) => DateTime::parse_from_rfc3339(v)
            .map(|t| t.with_timezone(&Utc))
            .ok()
            .filter(|t| sundial_core::instant::in_range(*t))
            .ok_or_else(|| ApiError::invalid("from", sundial_core::instant::RANGE_MESSAGE))?,
        None => j.definition.schedule.start.map_or(cx.now, |s| s.max(cx.now)),
    };
    let to = from + chrono::Duration::days(days);
    let u = match (j.state, sundial_core::trigger::cache::schedule_of(&j)) {
        (JobState::Enabled, Ok(s)) => control::upcoming::upcoming(&j.definition.schedule, &s, from, to),
        _ => control::upcoming::Upcoming { fires: vec![], truncated: false, transitions: vec![] },
    };
    ok(dto::upcoming(&u, &j.definition.schedule.timezone, from, to))
}

/// `GET /v1/tz-report`: jobs whose fires the tzdb upgrade moves.
pub(crate) async fn tz_report(cx: &Cx<'_>) -> Res {
    let max = control::tzreport::MAX_REPORT_FIRES;
    let fires = match cx.q.str("fires") {
        None => DEFAULT_REPORT_FIRES,
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=max).contains(&n) => n,
            _ => return Err(ApiError::invalid("fires", format!("must be an integer between 1 and {max}"))),
        },
    };
    let r = control::tzreport::report(cx.ctl, cx.caller, fires, cx.q.limit()?, cx.q.str("cursor")).await?;
    ok(dto::tz_report(&r))
}
