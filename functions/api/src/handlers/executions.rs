//! Executions: trigger-now and backfill (which create them), lists, one execution with its
//! children, its log lines, and cancel.

use super::Cx;
use crate::dto;
use crate::error::ApiError;
use crate::router::{ok, parse_body, ApiResponse, Res};
use lambda_http::http::header::LOCATION;
use lambda_http::http::StatusCode;
use serde_json::{json, Value};
use sundial_core::control;
use sundial_core::control::executions::{BackfillRequest, JobExecFilter};

/// `POST /v1/jobs/{jobId}/trigger`.
pub(crate) async fn trigger(cx: &Cx<'_>) -> Res {
    let e = control::executions::trigger_now(cx.ctl, cx.caller, cx.p(0), cx.now).await?;
    let loc = format!("/v1/executions/{}", e.id());
    Ok(ApiResponse::json(StatusCode::ACCEPTED, dto::execution(&e, true)).header(LOCATION, loc))
}

/// `POST /v1/jobs/{jobId}/backfill`.
pub(crate) async fn backfill(cx: &Cx<'_>) -> Res {
    let b: dto::BackfillBody = parse_body(&cx.req.body)?;
    let r = BackfillRequest { from: b.from, to: b.to, pace_secs: b.pace_secs.unwrap_or(1) };
    let rep = control::executions::backfill(cx.ctl, cx.caller, cx.p(0), &r, cx.now).await?;
    Ok(ApiResponse::json(
        StatusCode::ACCEPTED,
        json!({
            "fires": rep.fires, "created": rep.created, "existing": rep.existing,
            "lastStartAt": rep.last_start_at.map(dto::time),
        }),
    ))
}

/// `GET /v1/jobs/{jobId}/executions`.
pub(crate) async fn list_for_job(cx: &Cx<'_>) -> Res {
    let q = &cx.q;
    let f = JobExecFilter {
        status: q.status()?,
        oldest_first: match q.str("order") {
            None | Some("desc") => false,
            Some("asc") => true,
            Some(_) => return Err(ApiError::invalid("order", "must be asc or desc")),
        },
        limit: q.limit()?,
        cursor: q.str("cursor").map(str::to_string),
    };
    let page = control::executions::list_for_job(cx.ctl, cx.caller, cx.p(0), &f).await?;
    ok(dto::page(page.items.iter().map(|e| dto::execution(e, false)).collect(), page.next))
}

/// `GET /v1/executions?status=`: `status` is required.
pub(crate) async fn list_by_status(cx: &Cx<'_>) -> Res {
    let q = &cx.q;
    let st = q.status()?.ok_or_else(|| {
        ApiError::invalid(
            "status",
            "required: RETRY_WAIT, FAILED, DEAD or CANCELED (per job: /v1/jobs/{jobId}/executions)",
        )
    })?;
    let page =
        control::executions::list_by_status(cx.ctl, cx.caller, st, q.limit()?, q.str("cursor")).await?;
    ok(dto::page(page.items.iter().map(|e| dto::execution(e, false)).collect(), page.next))
}

/// `GET /v1/executions/{executionId}`: with its checkpoint and run time; of its children only
/// the counts (`children`), never the children themselves (`/children` pages them).
pub(crate) async fn get(cx: &Cx<'_>) -> Res {
    let snap = control::executions::get_snapshot(cx.ctl, cx.caller, cx.p(0)).await?;
    let mut v = dto::execution(&snap.exec, true);
    v["checkpoint"] = snap.checkpoint.unwrap_or(Value::Null);
    v["totalRunMs"] = snap.total_run_ms.into();
    ok(v)
}

/// `GET /v1/executions/{executionId}/children`: one page (`limit`, default 100, at most 1,000;
/// `cursor`).
pub(crate) async fn children(cx: &Cx<'_>) -> Res {
    let limit = cx.q.limit_up_to(control::executions::CHILDREN_PAGE_MAX)?;
    let page = control::executions::children(cx.ctl, cx.caller, cx.p(0), limit, cx.q.str("cursor")).await?;
    ok(dto::page(page.items.iter().map(|c| dto::execution(c, false)).collect(), page.next))
}

/// `GET /v1/executions/{executionId}/logs`: the local run's lines, or a Logs Insights link.
pub(crate) async fn logs(cx: &Cx<'_>) -> Res {
    // The execution must be the caller's (404 otherwise), like every other read.
    let snap = control::executions::get_snapshot(cx.ctl, cx.caller, cx.p(0)).await?;
    let id = snap.exec.id();
    let exec_logs = cx.api.exec_logs();
    let lines = match exec_logs {
        Some(logs) => logs.lines(&cx.caller.tenant, &id),
        None => Vec::new(),
    };
    let global = sundial_core::store::executions::ExecKey::of(&snap.exec).global_id();
    let url = crate::console::insights_url(cx.api.console_settings(), &global);
    ok(dto::exec_logs(&id, exec_logs.is_some(), &lines, url))
}

/// `POST /v1/executions/{executionId}/cancel`: 200 when final, 202 while it stops.
pub(crate) async fn cancel(cx: &Cx<'_>) -> Res {
    let (e, done) = control::executions::cancel(cx.ctl, cx.caller, cx.p(0), cx.now).await?;
    let status = if done { StatusCode::OK } else { StatusCode::ACCEPTED };
    Ok(ApiResponse::json(status, dto::execution(&e, true)))
}
