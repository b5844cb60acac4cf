//! Executions: trigger-now and backfill (which create them), lists, one execution with its
//! children, its log lines, and cancel.

use super::{location, Res};
use crate::dto;
use crate::error::ApiError;
use crate::extract::{Auth, Body, Now, P, Q};
use crate::layers::idempotency::IdempotencyKeyHeader;
use crate::params::{ChildrenQuery, ExecutionPath, ExecutionsQuery, Int, JobExecutionsQuery, JobPath};
use crate::Api;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use sundial_api_types::{
    BackfillReport, BackfillRequest, ErrorBody, EventAccepted, EventRequest, Execution, ExecutionDetail,
    ExecutionLogs, Page, TriggerRequest,
};
use sundial_core::control;
use sundial_core::control::executions::{BackfillRequest as Range, JobExecFilter};

/// Run a job now: one execution at this instant, with the job's current definition and, when the
/// optional body names them, per-run parameters merged over the job's (RFC 7396).
#[utoipa::path(post, path = "/v1/jobs/{jobId}/trigger", operation_id = "triggerJob", tag = "runs",
    params(JobPath, IdempotencyKeyHeader),
    request_body(content = Option<TriggerRequest>, description = "Optional: per-run parameters"),
    responses(
        (status = 202, description = "The execution, queued", body = ExecutionDetail,
            headers(("Location" = String, description = "the execution"))),
        (status = 404, description = "No such job for this tenant", body = ErrorBody),
        (status = 409, description = "The job is deleted, or this instant already has its execution", body = ErrorBody),
    ))]
pub(crate) async fn trigger_job(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
    P(p): P<JobPath>,
    Body(b): Body<TriggerRequest>,
) -> Res<(StatusCode, HeaderMap, Json<ExecutionDetail>)> {
    let e = control::executions::trigger_now_with(api.control(), &caller, &p.job_id, b.params.as_ref(), now)
        .await?;
    let h = location(format!("/v1/executions/{}", e.id()))?;
    Ok((StatusCode::ACCEPTED, h, Json(dto::execution_detail(&e))))
}

/// An event for a job whose definition sets `events`: it becomes one execution (its own instant,
/// or with `oncePerPeriod` the next scheduled fire, run now), deduplicated by `key`
/// (docs/dependencies.md, "Event triggers").
#[utoipa::path(post, path = "/v1/jobs/{jobId}/events", operation_id = "postJobEvent", tag = "runs",
    params(JobPath, IdempotencyKeyHeader), request_body = EventRequest,
    responses(
        (status = 202, description = "The execution the event is (created, or the one it was deduplicated onto)", body = EventAccepted,
            headers(("Location" = String, description = "the execution"))),
        (status = 400, description = "The job takes no events or is paused, or a bad key, at or params", body = ErrorBody),
        (status = 404, description = "No such job for this tenant", body = ErrorBody),
        (status = 409, description = "The job is deleted", body = ErrorBody),
    ))]
pub(crate) async fn post_job_event(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
    P(p): P<JobPath>,
    Body(b): Body<EventRequest>,
) -> Res<(StatusCode, HeaderMap, Json<EventAccepted>)> {
    let ev = control::events::EventIn { key: b.key, params: b.params, at: b.at };
    let out = control::events::fire(api.control(), &caller, &p.job_id, &ev, now).await?;
    let h = location(format!("/v1/executions/{}", out.execution.id()))?;
    let body = EventAccepted { created: out.created, execution: dto::execution_detail(&out.execution) };
    Ok((StatusCode::ACCEPTED, h, Json(body)))
}

/// Backfill a past range: one execution per fire of the range, paced.
#[utoipa::path(post, path = "/v1/jobs/{jobId}/backfill", operation_id = "backfillJob", tag = "runs",
    params(JobPath, IdempotencyKeyHeader), request_body = BackfillRequest,
    responses(
        (status = 202, description = "What was created", body = BackfillReport),
        (status = 404, description = "No such job for this tenant", body = ErrorBody),
        (status = 409, description = "The job is deleted", body = ErrorBody),
    ))]
pub(crate) async fn backfill_job(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
    P(p): P<JobPath>,
    Body(b): Body<BackfillRequest>,
) -> Res<(StatusCode, Json<BackfillReport>)> {
    let r = Range { from: b.from, to: b.to, pace_secs: b.pace_secs.unwrap_or(1), params: b.params };
    let rep = control::executions::backfill(api.control(), &caller, &p.job_id, &r, now).await?;
    Ok((StatusCode::ACCEPTED, Json(dto::backfill_report(&rep))))
}

/// A job's executions, newest first (or `order=asc`).
#[utoipa::path(get, path = "/v1/jobs/{jobId}/executions", operation_id = "listJobExecutions", tag = "executions",
    params(JobPath, JobExecutionsQuery),
    responses(
        (status = 200, description = "One page of executions", body = sundial_api_types::ExecutionPage),
        (status = 404, description = "No such job for this tenant", body = ErrorBody),
    ))]
pub(crate) async fn list_job_executions(
    State(api): State<Api>,
    Auth(caller): Auth,
    P(p): P<JobPath>,
    Q(q): Q<JobExecutionsQuery>,
) -> Res<Json<Page<Execution>>> {
    let f = JobExecFilter {
        status: q.status.map(|s| s.0),
        oldest_first: q.order.is_some_and(|o| o.0),
        limit: q.limit.map(Int::get),
        cursor: q.cursor,
        until: q.until.map(|t| t.0),
    };
    let page = control::executions::list_for_job(api.control(), &caller, &p.job_id, &f).await?;
    let origins = control::fire_calendar::explain(api.control(), &caller, &page.items).await?;
    Ok(Json(Page::new(dto::executions_explained(&page.items, &origins), page.next)))
}

/// Executions by status across the caller's jobs (`status` is required).
#[utoipa::path(get, path = "/v1/executions", operation_id = "listExecutions", tag = "executions",
    params(ExecutionsQuery),
    responses((status = 200, description = "One page of executions", body = sundial_api_types::ExecutionPage)))]
pub(crate) async fn list_executions(
    State(api): State<Api>,
    Auth(caller): Auth,
    Q(q): Q<ExecutionsQuery>,
) -> Res<Json<Page<Execution>>> {
    let st = q.status.ok_or_else(|| {
        ApiError::invalid(
            "status",
            "required: RETRY_WAIT, FAILED, DEAD or CANCELED (per job: /v1/jobs/{jobId}/executions)",
        )
    })?;
    let page = control::executions::list_by_status(
        api.control(),
        &caller,
        st.0,
        q.limit.map(Int::get),
        q.cursor.as_deref(),
    )
    .await?;
    let origins = control::fire_calendar::explain(api.control(), &caller, &page.items).await?;
    Ok(Json(Page::new(dto::executions_explained(&page.items, &origins), page.next)))
}

/// One execution with its timeline, checkpoint and run time; of its children only the counts
/// (`children`), never the children themselves (`/children` pages them).
#[utoipa::path(get, path = "/v1/executions/{executionId}", operation_id = "getExecution", tag = "executions",
    params(ExecutionPath),
    responses(
        (status = 200, description = "The execution", body = ExecutionDetail),
        (status = 404, description = "No such execution for this tenant", body = ErrorBody),
    ))]
pub(crate) async fn get_execution(
    State(api): State<Api>,
    Auth(caller): Auth,
    P(p): P<ExecutionPath>,
) -> Res<Json<ExecutionDetail>> {
    let snap = control::executions::get_snapshot(api.control(), &caller, &p.execution_id).await?;
    let mut v = dto::execution_detail(&snap.exec);
    let facts =
        control::fire_calendar::explain(api.control(), &caller, std::slice::from_ref(&snap.exec)).await?;
    if let Some(f) = facts.first() {
        v.execution = dto::execution_explained(&snap.exec, f);
    }
    v.checkpoint = Some(snap.checkpoint.unwrap_or(serde_json::Value::Null));
    v.total_run_ms = Some(snap.total_run_ms);
    if let Some(w) = control::dependencies::waiting(api.control(), &snap.exec).await? {
        v.waiting_since = w.since;
        v.waiting_for = Some(
            w.upstreams
                .into_iter()
                .map(|u| sundial_api_types::WaitingFor {
                    job: u.job,
                    execution_id: u.execution_id,
                    status: u.status,
                    met: u.met,
                })
                .collect(),
        );
    }
    Ok(Json(v))
}

/// The children of a sharded, broadcast or map-reduce fire, one page (`limit`, default 100, at
/// most 1,000).
#[utoipa::path(get, path = "/v1/executions/{executionId}/children", operation_id = "listExecutionChildren",
    tag = "executions", params(ExecutionPath, ChildrenQuery),
    responses(
        (status = 200, description = "One page of children", body = sundial_api_types::ExecutionPage),
        (status = 404, description = "No such execution for this tenant", body = ErrorBody),
    ))]
pub(crate) async fn list_execution_children(
    State(api): State<Api>,
    Auth(caller): Auth,
    P(p): P<ExecutionPath>,
    Q(q): Q<ChildrenQuery>,
) -> Res<Json<Page<Execution>>> {
    let limit = q.limit.map(Int::get);
    let page =
        control::executions::children(api.control(), &caller, &p.execution_id, limit, q.cursor.as_deref())
            .await?;
    Ok(Json(Page::new(page.items.iter().map(dto::execution).collect(), page.next)))
}

/// An execution's worker log lines (the local run) or a Logs Insights link (deployed).
#[utoipa::path(get, path = "/v1/executions/{executionId}/logs", operation_id = "getExecutionLogs", tag = "executions",
    params(ExecutionPath),
    responses(
        (status = 200, description = "Its lines, or where to find them", body = ExecutionLogs),
        (status = 404, description = "No such execution for this tenant", body = ErrorBody),
    ))]
pub(crate) async fn get_execution_logs(
    State(api): State<Api>,
    Auth(caller): Auth,
    P(p): P<ExecutionPath>,
) -> Res<Json<ExecutionLogs>> {
    // The execution must be the caller's (404 otherwise), like every other read.
    let snap = control::executions::get_snapshot(api.control(), &caller, &p.execution_id).await?;
    let id = snap.exec.id();
    let logs = api.exec_logs();
    let lines = logs.map(|l| l.lines(&caller.tenant, &id)).unwrap_or_default();
    let global = sundial_store::executions::ExecKey::of(&snap.exec).global_id();
    let url = crate::console::insights_url(api.console_settings(), &global);
    Ok(Json(dto::exec_logs(&id, logs.is_some(), &lines, url)))
}

/// Cancel an execution: 200 when final, 202 while a running attempt stops.
#[utoipa::path(post, path = "/v1/executions/{executionId}/cancel", operation_id = "cancelExecution", tag = "executions",
    params(ExecutionPath),
    responses(
        (status = 200, description = "Canceled", body = ExecutionDetail),
        (status = 202, description = "Its running attempt is asked to stop", body = ExecutionDetail),
        (status = 404, description = "No such execution for this tenant", body = ErrorBody),
        (status = 409, description = "It is final", body = ErrorBody),
    ))]
pub(crate) async fn cancel_execution(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
    P(p): P<ExecutionPath>,
) -> Res<(StatusCode, Json<ExecutionDetail>)> {
    let (e, done) = control::executions::cancel(api.control(), &caller, &p.execution_id, now).await?;
    let status = if done { StatusCode::OK } else { StatusCode::ACCEPTED };
    Ok((status, Json(dto::execution_detail(&e))))
}
