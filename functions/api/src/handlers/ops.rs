//! The operations audit log.

use super::Res;
use crate::dto;
use crate::extract::{Auth, Q};
use crate::params::OperationsQuery;
use crate::Api;
use axum::extract::State;
use axum::Json;
use sundial_api_types::{Operation, Page};
use sundial_core::control;

/// The operations log, newest first, optionally for one `jobId`.
#[utoipa::path(get, path = "/v1/operations", operation_id = "listOperations", tag = "audit", params(OperationsQuery),
    responses((status = 200, description = "One page of entries", body = sundial_api_types::OperationPage)))]
pub(crate) async fn list_operations(
    State(api): State<Api>,
    Auth(caller): Auth,
    Q(q): Q<OperationsQuery>,
) -> Res<Json<Page<Operation>>> {
    let job = q.job_id.as_ref().map(|j| j.0.as_str());
    let page = control::ops::list(
        api.control(),
        &caller,
        job,
        q.limit.map(crate::params::Int::get),
        q.cursor.as_deref(),
    )
    .await?;
    Ok(Json(Page::new(page.items.iter().map(dto::ops).collect(), page.next)))
}
