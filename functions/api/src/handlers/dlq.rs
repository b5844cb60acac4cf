//! Dead letters: list them, replay several, replay one.

use super::Cx;
use crate::dto;
use crate::error::ApiError;
use crate::router::{ok, parse_body, ApiResponse, Res};
use lambda_http::http::StatusCode;
use serde_json::{json, Value};
use sundial_core::control;

/// `GET /v1/dlq`.
pub(crate) async fn list(cx: &Cx<'_>) -> Res {
    let page = control::dlq::list(cx.ctl, cx.caller, cx.q.limit()?, cx.q.str("cursor")).await?;
    ok(dto::page(page.items.iter().map(|e| dto::execution(e, false)).collect(), page.next))
}

/// `POST /v1/dlq/replay`: one outcome per execution, with an optional reason for the audit log.
pub(crate) async fn replay_many(cx: &Cx<'_>) -> Res {
    let b: dto::ReplayBody = parse_body(&cx.req.body)?;
    let max = control::dlq::MAX_REASON_CHARS;
    if b.reason.as_ref().is_some_and(|r| r.chars().count() > max) {
        return Err(ApiError::invalid("reason", format!("must be at most {max} characters")));
    }
    let reason = b.reason.as_deref().map(str::trim).filter(|r| !r.is_empty());
    let out = control::dlq::replay_many_because(cx.ctl, cx.caller, &b.execution_ids, reason, cx.now).await?;
    let results: Vec<Value> =
        out.iter().map(|(id, o)| json!({"executionId": id, "outcome": o.as_str()})).collect();
    ok(json!({"results": results}))
}

/// `POST /v1/dlq/{executionId}/replay`: 202 with the execution, or why it was not replayed.
pub(crate) async fn replay_one(cx: &Cx<'_>) -> Res {
    use control::dlq::ReplayOutcome as R;
    match control::dlq::replay(cx.ctl, cx.caller, cx.p(0), cx.now).await? {
        R::Replayed | R::Resent => {
            let e = control::executions::get(cx.ctl, cx.caller, cx.p(0)).await?;
            Ok(ApiResponse::json(StatusCode::ACCEPTED, dto::execution(&e, true)))
        }
        R::NotFound => Err(ApiError::not_found("execution")),
        R::NotDead(st) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_dead",
            format!("only DEAD executions are replayed; this one is {}", st.as_str()),
        )
        .field("executionId")),
        R::TooOld => Err(ApiError::new(
            StatusCode::CONFLICT,
            "too_old",
            "the execution is older than its job's retry.maxAgeSecs; workers would refuse it (trigger the job instead)",
        )
        .field("executionId")),
    }
}
