//! The local run's HTTP server (hyper 1 on loopback), serving the same router as the Lambda.
//!
//! There is no API Gateway locally, so the caller comes from two headers:
//! `X-Sundial-Tenant` (default `local`) and `X-Sundial-Principal` (default `local-user`). That is
//! only acceptable because this server binds to 127.0.0.1 for one developer; the Lambda never
//! reads these headers. Because any web page open in the developer's browser can reach
//! 127.0.0.1 too, the server refuses a non-loopback `Host` (DNS rebinding) and any `Origin`
//! other than a loopback one (cross-site requests), and the body layer refuses bodies that are
//! not `Content-Type: application/json` (which a page cannot send cross-site without a CORS
//! preflight, and this server answers no preflight).

use crate::error::ApiError;
use crate::layers::caller::Resolved;
use crate::Api;
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::Request;
use hyper_util::rt::TokioIo;
use lambda_http::http::StatusCode;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use sundial_api_types::ErrorCode;
use sundial_core::control::Caller;
use sundial_model::keys;
use tokio::net::TcpListener;
use tower::ServiceExt;

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
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            ErrorCode::Unauthorized,
            "X-Sundial-Tenant is not a valid tenant id",
        )
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
        ApiError::new(StatusCode::FORBIDDEN, ErrorCode::Forbidden, msg.to_string()).field(field.to_string())
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

async fn serve_one(router: Router, req: Request<Incoming>) -> Result<Response, Infallible> {
    if let Err(e) = same_machine(&req) {
        return Ok(e.into_response());
    }
    let caller = caller_of(&req);
    let mut req = req.map(axum::body::Body::new);
    req.extensions_mut().insert(Resolved(caller));
    router.oneshot(req).await
}

/// Serves `api` on `listener` until `shutdown` completes.
pub async fn serve(
    api: Arc<Api>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let router = api.router();
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            biased;
            r = listener.accept() => r?,
            _ = &mut shutdown => return Ok(()),
        };
        let router = router.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| serve_one(router.clone(), req));
            if let Err(e) = http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await {
                tracing::debug!(error = %e, "connection ended");
            }
        });
    }
}
