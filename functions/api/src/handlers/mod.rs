//! The operations' handlers, one typed function per operation, grouped by what they act on.
//! Each names what it reads (path, query, body, headers: [`crate::extract`]) and answers a wire
//! type ([`sundial_api_types`]); its `#[utoipa::path]` is the operation in the document. The
//! layers ([`crate::layers`]) have checked the caller, the throttle, the body and the
//! `Idempotency-Key`; a handler calls the control plane and shapes the answer.

pub(crate) mod bodies;
pub(crate) mod calendars;
pub(crate) mod dlq;
pub(crate) mod executions;
pub(crate) mod jobs;
pub(crate) mod meta;
pub(crate) mod ops;
pub(crate) mod pools;
pub(crate) mod resource_limits;
pub(crate) mod schedules;

use crate::error::ApiError;
use axum::http::header::{ETAG, LOCATION};
use axum::http::{HeaderMap, HeaderValue};

/// A handler's result.
pub(crate) type Res<T> = Result<T, ApiError>;

/// `ETag: "{version}"`, and `Location` when given.
pub(crate) fn headers(version: u64, location: Option<String>) -> Res<HeaderMap> {
    let mut h = HeaderMap::new();
    h.insert(ETAG, HeaderValue::from_str(&crate::dto::etag(version)).map_err(|_| ApiError::internal())?);
    if let Some(l) = location {
        h.insert(LOCATION, HeaderValue::from_str(&l).map_err(|_| ApiError::internal())?);
    }
    Ok(h)
}

/// `Location` alone.
pub(crate) fn location(l: String) -> Res<HeaderMap> {
    let mut h = HeaderMap::new();
    h.insert(LOCATION, HeaderValue::from_str(&l).map_err(|_| ApiError::internal())?);
    Ok(h)
}
