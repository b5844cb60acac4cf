//! Resource limits: put and delete (operators only), read with holders, list.

use super::{headers, Res};
use crate::dto;
use crate::extract::{Auth, Body, Now, P};
use crate::params::ResourcePath;
use crate::Api;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use sundial_api_types::{DeletedResource, ErrorBody, Page, ResourceLimit, ResourceLimitRequest};
use sundial_core::control;

/// Set a platform-wide resource limit (operators only): 201 when created, 200 when changed.
#[utoipa::path(put, path = "/v1/resources/{resource}", operation_id = "putResource", tag = "resources",
    params(ResourcePath), request_body = ResourceLimitRequest,
    responses(
        (status = 200, description = "Changed", body = ResourceLimit, headers(("ETag" = String, description = "its version"))),
        (status = 201, description = "Created", body = ResourceLimit, headers(("ETag" = String, description = "its version"))),
    ))]
pub(crate) async fn put_resource(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
    P(p): P<ResourcePath>,
    Body(b): Body<ResourceLimitRequest>,
) -> Res<(StatusCode, HeaderMap, Json<ResourceLimit>)> {
    let (r, created) =
        control::resource_limits::put(api.control(), &caller, &p.resource, b.limit, b.per_tenant, now)
            .await?;
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, headers(r.version, None)?, Json(dto::resource(&r, true))))
}

/// Read a resource limit; operators also see its holders.
#[utoipa::path(get, path = "/v1/resources/{resource}", operation_id = "getResource", tag = "resources",
    params(ResourcePath),
    responses(
        (status = 200, description = "The limit", body = ResourceLimit),
        (status = 404, description = "No such resource limit", body = ErrorBody),
    ))]
pub(crate) async fn get_resource(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
    P(p): P<ResourcePath>,
) -> Res<Json<ResourceLimit>> {
    let v = control::resource_limits::get(api.control(), &caller, &p.resource, now).await?;
    Ok(Json(dto::resource_view(&v)))
}

/// Delete a resource limit (operators only).
#[utoipa::path(delete, path = "/v1/resources/{resource}", operation_id = "deleteResource", tag = "resources",
    params(ResourcePath),
    responses(
        (status = 200, description = "Deleted", body = DeletedResource),
        (status = 404, description = "No such resource limit", body = ErrorBody),
    ))]
pub(crate) async fn delete_resource(
    State(api): State<Api>,
    Auth(caller): Auth,
    P(p): P<ResourcePath>,
) -> Res<Json<DeletedResource>> {
    control::resource_limits::delete(api.control(), &caller, &p.resource).await?;
    Ok(Json(DeletedResource { resource: p.resource, deleted: true }))
}

/// The resource limits (operators see every field).
#[utoipa::path(get, path = "/v1/resources", operation_id = "listResources", tag = "resources",
    responses((status = 200, description = "Every limit (one page)", body = sundial_api_types::ResourceLimitPage)))]
pub(crate) async fn list_resources(
    State(api): State<Api>,
    Auth(caller): Auth,
) -> Res<Json<Page<ResourceLimit>>> {
    let operator = control::resource_limits::is_operator(api.control(), &caller);
    let all = control::resource_limits::list(api.control()).await?;
    Ok(Json(Page::new(all.iter().map(|r| dto::resource(r, operator)).collect(), None)))
}
