//! `X-Request-Id`: the caller's (API Gateway forwards the header a client sent) when it is a
//! sane token, else a new one; echoed on the answer and recorded on the request's log span, so
//! one id ties a client's report to the function's logs.

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::atomic::{AtomicU64, Ordering};
use tracing::Instrument;

/// The header.
pub const HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// A request id the caller sent and this API keeps: 1-128 of `[A-Za-z0-9._:-]`.
fn sane(v: &HeaderValue) -> Option<String> {
    let s = v.to_str().ok()?;
    let ok = (1..=128).contains(&s.len())
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
    ok.then(|| s.to_string())
}

/// A new id: process id, a per-process counter and the nanoseconds of the wall clock, unique
/// enough to find a request in the logs (it is not a secret and not a key).
fn fresh() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{:x}-{:x}-{:x}", std::process::id(), nanos, N.fetch_add(1, Ordering::Relaxed))
}

/// The layer's function.
pub async fn layer(mut req: Request, next: Next) -> Response {
    let id = req.headers().get(&HEADER).and_then(sane).unwrap_or_else(fresh);
    let value = HeaderValue::from_str(&id).unwrap_or_else(|_| HeaderValue::from_static("invalid"));
    req.headers_mut().insert(HEADER, value.clone());
    let span =
        tracing::info_span!("request", request_id = %id, method = %req.method(), path = %req.uri().path());
    let mut resp = next.run(req).instrument(span).await;
    resp.headers_mut().insert(HEADER, value);
    resp
}
