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

/// Translates a response; one that cannot be built (a header value that cannot be sent) is a
/// plain 500 `internal`, never an empty 200.
pub fn lambda_response(r: ApiResponse) -> Response<Body> {
    let mut b = Response::builder().status(r.status).header(CONTENT_TYPE, r.content_type());
    for (k, v) in &r.all_headers() {
        b = b.header(k, v);
    }
    let text = String::from_utf8(r.body_bytes()).unwrap_or_default();
    b.body(Body::Text(text)).unwrap_or_else(|e| {
        tracing::error!(error = %e, status = r.status.as_u16(), "could not build the response; answering 500");
        let (status, headers, body) = ApiResponse::internal_error_parts();
        let mut resp = Response::new(Body::Text(String::from_utf8(body).unwrap_or_default()));
        *resp.status_mut() = status;
        resp.headers_mut().insert(CONTENT_TYPE, lambda_http::http::HeaderValue::from_static("application/json"));
        for (k, v) in headers {
            if let Ok(v) = lambda_http::http::HeaderValue::from_str(&v) {
                resp.headers_mut().insert(k, v);
            }
        }
        resp
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::http::header::HeaderName;
    use lambda_http::http::StatusCode;

    #[test]
    fn a_response_whose_headers_cannot_be_built_is_a_500_not_an_empty_200() {
        // Issue 28, L5: a header value with a line break cannot be sent.
        let r = ApiResponse::json(StatusCode::OK, serde_json::json!({"ok": true}))
            .header(HeaderName::from_static("etag"), "\"1\"\r\nx-injected: yes");
        let resp = lambda_response(r);
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let Body::Text(t) = resp.body() else { panic!("a JSON body") };
        assert!(t.contains("\"internal\""), "{t}");
        assert!(resp.headers().get("x-injected").is_none());
    }
}
