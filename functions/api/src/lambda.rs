//! The Lambda entry point's adapter: API Gateway HTTP API (payload v2) requests, as
//! `lambda_http` presents them, into [`ApiRequest`]s; the caller comes from the authorizer
//! context only ([`crate::auth`]).

use crate::auth::caller_of;
use crate::router::{Api, ApiRequest, ApiResponse};
use bytes::Bytes;
use lambda_http::http::header::CONTENT_TYPE;
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use std::convert::Infallible;

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

/// Translates a `lambda_http` request, resolving its caller as `api` is configured to.
pub async fn api_request(req: Request, api: &Api) -> ApiRequest {
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
    let query = req.uri().query().unwrap_or_default().to_string();
    let (parts, body) = req.into_parts();
    let body = match body {
        Body::Empty => Bytes::new(),
        Body::Text(s) => Bytes::from(s),
        Body::Binary(b) => Bytes::from(b),
        _ => Bytes::new(),
    };
    ApiRequest { method: parts.method, path, query, headers: parts.headers, body, caller }
}

/// Translates a response.
pub fn lambda_response(r: ApiResponse) -> Response<Body> {
    let mut b = Response::builder().status(r.status).header(CONTENT_TYPE, r.content_type());
    for (k, v) in &r.headers {
        b = b.header(k, v);
    }
    let text = String::from_utf8(r.body_bytes()).unwrap_or_default();
    b.body(Body::Text(text)).unwrap_or_else(|_| Response::new(Body::Empty))
}

/// The `lambda_http::run` handler.
pub async fn handle(api: &Api, req: Request) -> Result<Response<Body>, Infallible> {
    if !from_own_api(&req, api) {
        // Generic on purpose: the answer does not say which API is expected.
        tracing::warn!("refused an event that did not come through this stack's API (requestContext.apiId)");
        let e =
            crate::error::ApiError::new(lambda_http::http::StatusCode::FORBIDDEN, "forbidden", "forbidden");
        return Ok(lambda_response(e.into()));
    }
    let req = api_request(req, api).await;
    Ok(lambda_response(api.handle(req).await))
}
