//! The error mapper. Handlers and the other layers answer errors as [`ApiError`]s already; this
//! layer covers what is left: a panic anywhere below it is a 500 `internal` (never a dropped
//! connection, never its message), the router's own 404 and 405 are the API's error bodies (see
//! [`not_found`], [`method_not_allowed`]), and every 5xx is logged with its method and path.

use crate::error::ApiError;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;
use std::panic::AssertUnwindSafe;
use sundial_api_types::ErrorCode;

/// The layer's function.
pub async fn layer(req: Request, next: Next) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let resp = match AssertUnwindSafe(next.run(req)).catch_unwind().await {
        Ok(r) => r,
        Err(_) => {
            tracing::error!(%method, %path, "a handler panicked; answering 500");
            ApiError::internal().into_response()
        }
    };
    if resp.status().is_server_error() {
        tracing::warn!(%method, %path, status = resp.status().as_u16(), "request failed");
    }
    resp
}

/// The router's answer for a path it does not know.
pub async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, "no such route")
}

/// The router's answer for a known path and another method; the router adds `Allow`.
pub async fn method_not_allowed() -> ApiError {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, ErrorCode::MethodNotAllowed, "method not allowed")
}
