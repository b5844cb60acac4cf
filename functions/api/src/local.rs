//! The local run's HTTP server (hyper 1 on loopback), serving the same [`Api`] router as the
//! Lambda.
//!
//! There is no API Gateway locally, so the caller comes from two headers:
//! `X-Sundial-Tenant` (default `local`) and `X-Sundial-Principal` (default `local-user`). That is
//! only acceptable because this server binds to 127.0.0.1 for one developer; the Lambda never
//! reads these headers.

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

async fn serve_one(api: Arc<Api>, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
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
    let mut b = Response::builder().status(resp.status).header(CONTENT_TYPE, "application/json");
    for (k, v) in &resp.headers {
        b = b.header(k, v);
    }
    Ok(b.body(Full::new(Bytes::from(resp.body_bytes()))).unwrap_or_else(|_| Response::new(Full::default())))
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
