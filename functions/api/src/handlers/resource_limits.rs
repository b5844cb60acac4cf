//! Resource limits: put and delete (operators only), read with holders, list.

use super::Cx;
use crate::dto;
use crate::router::{ok, parse_body, ApiResponse, Res};
use lambda_http::http::header::ETAG;
use lambda_http::http::StatusCode;
use serde_json::json;
use sundial_core::control;

/// `PUT /v1/resources/{resource}`: 201 when created, 200 when changed.
pub(crate) async fn put(cx: &Cx<'_>) -> Res {
    let b: dto::ResourceBody = parse_body(&cx.req.body)?;
    let (r, created) =
        control::resource_limits::put(cx.ctl, cx.caller, cx.p(0), b.limit, b.per_tenant, cx.now).await?;
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok(ApiResponse::json(status, dto::resource(&r, true)).header(ETAG, dto::etag(r.version)))
}

/// `GET /v1/resources/{resource}`.
pub(crate) async fn get(cx: &Cx<'_>) -> Res {
    let v = control::resource_limits::get(cx.ctl, cx.caller, cx.p(0), cx.now).await?;
    ok(dto::resource_view(&v))
}

/// `DELETE /v1/resources/{resource}`.
pub(crate) async fn delete(cx: &Cx<'_>) -> Res {
    control::resource_limits::delete(cx.ctl, cx.caller, cx.p(0)).await?;
    ok(json!({"resource": cx.p(0), "deleted": true}))
}

/// `GET /v1/resources`: operators see every field.
pub(crate) async fn list(cx: &Cx<'_>) -> Res {
    let operator = control::resource_limits::is_operator(cx.ctl, cx.caller);
    let all = control::resource_limits::list(cx.ctl).await?;
    ok(dto::page(all.iter().map(|r| dto::resource(r, operator)).collect(), None))
}
