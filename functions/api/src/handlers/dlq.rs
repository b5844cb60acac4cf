//! Dead letters: list them, replay several, replay one.

use super::Res;
use crate::dto;
use crate::error::ApiError;
use crate::extract::{Auth, Body, Now, P, Q};
use crate::params::{ExecutionPath, ListQuery};
use crate::Api;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use sundial_api_types::{
    ErrorBody, ErrorCode, Execution, ExecutionDetail, Page, ReplayOutcome, ReplayRequest, ReplayResult,
    ReplayResults,
};
use sundial_core::control;
use sundial_core::control::dlq::ReplayOutcome as Outcome;

/// Dead executions, newest first.
#[utoipa::path(get, path = "/v1/dlq", operation_id = "listDeadLetters", tag = "dlq", params(ListQuery),
    responses((status = 200, description = "One page of dead executions", body = sundial_api_types::ExecutionPage)))]
pub(crate) async fn list_dead_letters(
    State(api): State<Api>,
    Auth(caller): Auth,
    Q(q): Q<ListQuery>,
) -> Res<Json<Page<Execution>>> {
    let page = control::dlq::list(api.control(), &caller, q.limit(), q.cursor.as_deref()).await?;
    Ok(Json(Page::new(page.items.iter().map(dto::execution).collect(), page.next)))
}

fn outcome(o: &Outcome) -> ReplayOutcome {
    match o {
        Outcome::Replayed => ReplayOutcome::Replayed,
        Outcome::Resent => ReplayOutcome::Resent,
        Outcome::NotFound => ReplayOutcome::NotFound,
        Outcome::NotDead(_) => ReplayOutcome::NotDead,
        Outcome::TooOld => ReplayOutcome::TooOld,
    }
}

/// Replay several dead executions: one outcome each, with an optional reason for the audit log.
#[utoipa::path(post, path = "/v1/dlq/replay", operation_id = "replayDeadLetters", tag = "dlq", request_body = ReplayRequest,
    responses((status = 200, description = "One outcome per execution", body = ReplayResults)))]
pub(crate) async fn replay_dead_letters(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
    Body(b): Body<ReplayRequest>,
) -> Res<Json<ReplayResults>> {
    let max = control::dlq::MAX_REASON_CHARS;
    if b.reason.as_ref().is_some_and(|r| r.chars().count() > max) {
        return Err(ApiError::invalid("reason", format!("must be at most {max} characters")));
    }
    let reason = b.reason.as_deref().map(str::trim).filter(|r| !r.is_empty());
    let out =
        control::dlq::replay_many_because(api.control(), &caller, &b.execution_ids, reason, now).await?;
    let results =
        out.iter().map(|(id, o)| ReplayResult { execution_id: id.clone(), outcome: outcome(o) }).collect();
    Ok(Json(ReplayResults { results }))
}

/// Replay one dead execution: 202 with the execution, or why it was not replayed.
#[utoipa::path(post, path = "/v1/dlq/{executionId}/replay", operation_id = "replayDeadLetter", tag = "dlq",
    params(ExecutionPath),
    responses(
        (status = 202, description = "Replayed (or its message sent again)", body = ExecutionDetail),
        (status = 404, description = "No such execution for this tenant", body = ErrorBody),
        (status = 409, description = "Not DEAD, or older than its job's retry.maxAgeSecs", body = ErrorBody),
    ))]
pub(crate) async fn replay_dead_letter(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
    P(p): P<ExecutionPath>,
) -> Res<(StatusCode, Json<ExecutionDetail>)> {
    let conflict = |code, msg: String| ApiError::new(StatusCode::CONFLICT, code, msg).field("executionId");
    match control::dlq::replay(api.control(), &caller, &p.execution_id, now).await? {
        Outcome::Replayed | Outcome::Resent => {
            let e = control::executions::get(api.control(), &caller, &p.execution_id).await?;
            Ok((StatusCode::ACCEPTED, Json(dto::execution_detail(&e))))
        }
        Outcome::NotFound => Err(ApiError::not_found("execution")),
        Outcome::NotDead(st) => Err(conflict(
            ErrorCode::NotDead,
            format!("only DEAD executions are replayed; this one is {}", st.as_str()),
        )),
        Outcome::TooOld => Err(conflict(
            ErrorCode::TooOld,
            "the execution is older than its job's retry.maxAgeSecs; workers would refuse it (trigger the job instead)".into(),
        )),
    }
}
