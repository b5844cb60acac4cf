//! Hardening headers on every JSON answer: `X-Content-Type-Options: nosniff` (a browser never
//! runs an answer as a script) and `Cache-Control: no-store` (no tenant data in a shared cache),
//! unless the answer set them. The console's files set their own (crate::console).

use axum::extract::Request;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

/// The layer's function.
pub async fn layer(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let json =
        resp.headers().get(CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if json {
        let h = resp.headers_mut();
        h.entry(X_CONTENT_TYPE_OPTIONS).or_insert(HeaderValue::from_static("nosniff"));
        h.entry(CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    }
    resp
}
