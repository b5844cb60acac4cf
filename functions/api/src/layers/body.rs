//! The request body: read once into memory, at most
//! [`sundial_core::config::ApiSettings::max_body_bytes`] (413 `payload_too_large`, counted
//! while reading, so a large body is never held whole), and, when there is one, sent as
//! `application/json` (415 `unsupported_media_type`). The type is required, not merely checked
//! when present: a web page can post `text/plain` or no type cross-site without a CORS
//! preflight, never `application/json`.

use crate::error::ApiError;
use crate::Api;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, Limited};
use sundial_api_types::ErrorCode;

fn too_large(max: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::PayloadTooLarge,
        format!("the body is larger than {max} bytes (pass large parameters by reference in paramsRef)"),
    )
    .field("body")
}

/// Whether the Content-Type is `application/json` (parameters such as `charset` aside).
fn is_json(headers: &HeaderMap) -> bool {
    let ct = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let media = ct.split(';').next().unwrap_or_default().trim();
    media.eq_ignore_ascii_case("application/json")
}

/// The layer's function.
pub async fn layer(State(api): State<Api>, req: Request, next: Next) -> Response {
    let max = api.settings().max_body_bytes;
    let (parts, body) = req.into_parts();
    let bytes = match Limited::new(body, max).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return too_large(max).into_response(),
    };
    if !bytes.is_empty() && !is_json(&parts.headers) {
        return ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::UnsupportedMediaType,
            "a request body must be sent with Content-Type: application/json",
        )
        .field("Content-Type")
        .into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}
