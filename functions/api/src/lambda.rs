//! The Lambda entry point's adapter: API Gateway HTTP API (payload v2) requests, as
//! `lambda_http` presents them, into the router; the caller comes from the authorizer context
//! only ([`crate::auth`]).

use crate::auth::caller_of;
use crate::error::ApiError;
use crate::layers::caller::Resolved;
use crate::Api;
use axum::response::IntoResponse;
use axum::Router;
use http_body_util::BodyExt;
use lambda_http::http::StatusCode;
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use std::convert::Infallible;
use sundial_api_types::ErrorCode;
use tower::ServiceExt;

/// Whether the event came through the stack's own API Gateway API, as far as the event can
/// tell: with [`sundial_core::config::ApiSettings::api_id`] set, its `requestContext.apiId`
/// must be that id. A principal allowed to invoke the function directly can still copy the
/// right id into a hand-made context; only the deployment boundary stops that (docs/api.md).
fn from_own_api(req: &Request, api: &Api) -> bool {
    let Some(want) = api.settings().api_id.as_deref() else { return true };
    match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(c)) => c.apiid.as_deref() == Some(want),
        _ => false,
    }
}

/// The request for the router: the raw path (API Gateway's `rawPath`, still percent-encoded),
/// the query, headers, body and the caller the authorizer context names.
async fn router_request(req: Request, api: &Api) -> axum::extract::Request {
    let (auth, account) = match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(c)) => (c.authorizer.as_ref(), c.account_id.as_deref()),
        Some(c) => (c.authorizer(), None),
        None => (None, None),
    };
    let caller = caller_of(auth, account, api.settings(), api.principal_tags()).await;
    let path = match req.raw_http_path() {
        "" => req.uri().path().to_string(),
        raw => raw.to_string(),
    };
    let pq = match req.uri().query() {
        Some(q) if !q.is_empty() => format!("{path}?{q}"),
        _ => path,
    };
    let (mut parts, body) = req.into_parts();
    if let Ok(uri) = pq.parse() {
        parts.uri = uri;
    }
    let body = match body {
        Body::Empty => axum::body::Body::empty(),
        Body::Text(s) => axum::body::Body::from(s),
        Body::Binary(b) => axum::body::Body::from(b),
        _ => axum::body::Body::empty(),
    };
    let mut out = axum::extract::Request::from_parts(parts, body);
    out.extensions_mut().insert(Resolved(caller));
    out
}

/// The router's answer as `lambda_http`'s: text when it is UTF-8 (every JSON answer and the
/// console's text files), binary otherwise.
async fn lambda_response(r: axum::response::Response) -> Response<Body> {
    let (parts, body) = r.into_parts();
    let bytes = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let body = match String::from_utf8(bytes.to_vec()) {
        Ok(t) if t.is_empty() => Body::Empty,
        Ok(t) => Body::Text(t),
        Err(e) => Body::Binary(e.into_bytes()),
    };
    Response::from_parts(parts, body)
}

/// Serves one event with `router` (built once per process by the function's `main`).
pub async fn serve(router: &Router, api: &Api, req: Request) -> Result<Response<Body>, Infallible> {
    if !from_own_api(&req, api) {
        // Generic on purpose: the answer does not say which API is expected.
        tracing::warn!("refused an event that did not come through this stack's API (requestContext.apiId)");
        let e = ApiError::new(StatusCode::FORBIDDEN, ErrorCode::Forbidden, "forbidden");
        return Ok(lambda_response(e.into_response()).await);
    }
    let req = router_request(req, api).await;
    let resp = match router.clone().oneshot(req).await {
        Ok(r) => r,
        Err(never) => match never {},
    };
    Ok(lambda_response(resp).await)
}

/// Serves one event with a router built for it ([`serve`] reuses one).
pub async fn handle(api: &Api, req: Request) -> Result<Response<Body>, Infallible> {
    serve(&api.router(), api, req).await
}
