//! The local run's HTTP server (hyper 1 on loopback), serving the same [`Api`] router as the
//! Lambda.
//!
//! There is no API Gateway locally, so the caller comes from two headers:
//! `X-Sundial-Tenant` (default `local`) and `X-Sundial-Principal` (default `local-user`). That is
//! only acceptable because this server binds to 127.0.0.1 for one developer; the Lambda never
//! reads these headers. Because any web page open in the developer's browser can reach
//! 127.0.0.1 too, the server refuses a non-loopback `Host` (DNS rebinding) and any `Origin`
//! other than a loopback one (cross-site requests), and the router refuses bodies that are not
//! `Content-Type: application/json` (which a page cannot send cross-site without a CORS
//! preflight, and this server answers no preflight).

use crate::error::ApiError;
use crate::router::{Api, ApiRequest};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use lambda_http::http::header::CONTENT_TYPE;
use lambda_http::http::StatusCode;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use sundial_core::control::Caller;
use sundial_core::keys;
use tokio::net::TcpListener;

/// Header naming the tenant (local server only).
pub const TENANT_HEADER: &str = "x-sundial-tenant";
/// Header naming the principal (local server only).
pub const PRINCIPAL_HEADER: &str = "x-sundial-principal";
/// The tenant when no header is sent.
pub const LOCAL_TENANT: &str = "local";

fn caller_of(req: &Request<Incoming>) -> Result<Caller, ApiError> {
    let h = |k: &str, d: &str| {
        req.headers().get(k).and_then(|v| v.to_str().ok()).filter(|v| !v.is_empty()).unwrap_or(d).to_string()
    };
    let tenant = h(TENANT_HEADER, LOCAL_TENANT);
    keys::validate_id("tenant", &tenant).map_err(|_| {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", "X-Sundial-Tenant is not a valid tenant id")
    })?;
    Ok(Caller { tenant, principal: h(PRINCIPAL_HEADER, "local-user") })
}

/// Whether `host` (a `Host` header or an origin's authority, with or without port) names this
/// machine's loopback interface.
fn is_loopback_authority(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map(|(h, _)| h).unwrap_or(v6),
        None => host
            .rsplit_once(':')
            .filter(|(_, p)| p.chars().all(|c| c.is_ascii_digit()))
            .map_or(host, |(h, _)| h),
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Refuses requests a web page could make: a `Host` that is not loopback (DNS rebinding: a
/// page on `evil.example` whose name resolves to 127.0.0.1) and an `Origin` that is not a
/// loopback origin (a cross-site `fetch` or form post). Clients that are not browsers send no
/// `Origin`.
fn same_machine(req: &Request<Incoming>) -> Result<(), ApiError> {
    let forbidden = |field: &str, msg: &str| {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", msg.to_string()).field(field.to_string())
    };
    let host = req.headers().get(hyper::header::HOST).and_then(|v| v.to_str().ok()).unwrap_or_default();
    if !is_loopback_authority(host) {
        return Err(forbidden(
            "Host",
            "the local API answers only requests addressed to localhost or a loopback address",
        ));
    }
    if let Some(origin) = req.headers().get(hyper::header::ORIGIN) {
        let o = origin.to_str().unwrap_or_default();
        let authority = o.strip_prefix("http://").or_else(|| o.strip_prefix("https://"));
        if !authority.is_some_and(is_loopback_authority) {
            return Err(forbidden(
                "Origin",
                "the local API refuses requests from web pages of other origins",
            ));
        }
    }
    Ok(())
}

async fn serve_one(api: Arc<Api>, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    if let Err(e) = same_machine(&req) {
        return Ok(respond(e.into()));
    }
    let caller = caller_of(&req);
    let (parts, body) = req.into_parts();
    let limit = api.settings().max_body_bytes;
    let resp = match Limited::new(body, limit).collect().await {
        Ok(b) => {
            let r = ApiRequest {
                method: parts.method,
                path: parts.uri.path().to_string(),
                query: parts.uri.query().unwrap_or_default().to_string(),
                headers: parts.headers,
                body: b.to_bytes(),
                caller,
            };
            api.handle(r).await
        }
        Err(_) => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!(
                "the body is larger than {limit} bytes (pass large parameters by reference in paramsRef)"
            ),
        )
        .field("body")
        .into(),
    };
    Ok(respond(resp))
}

fn respond(resp: crate::router::ApiResponse) -> Response<Full<Bytes>> {
    let mut b = Response::builder().status(resp.status).header(CONTENT_TYPE, resp.content_type());
    for (k, v) in &resp.all_headers() {
        b = b.header(k, v);
    }
    b.body(Full::new(Bytes::from(resp.body_bytes()))).unwrap_or_else(|_| {
        // A header that cannot be sent: a plain 500, never an empty 200 (as the Lambda adapter).
        let (status, headers, body) = crate::router::ApiResponse::internal_error_parts();
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        r.headers_mut().insert(CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
        for (k, v) in headers {
            if let Ok(v) = hyper::header::HeaderValue::from_str(&v) {
                r.headers_mut().insert(k, v);
            }
        }
        r
    })
}

/// Serves `api` on `listener` until `shutdown` completes.
pub async fn serve(
    api: Arc<Api>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            r = listener.accept() => r?,
            _ = &mut shutdown => return Ok(()),
        };
        let api = api.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| serve_one(api.clone(), req));
            if let Err(e) = http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await {
                tracing::debug!(error = %e, "connection ended");
            }
        });
    }
}
