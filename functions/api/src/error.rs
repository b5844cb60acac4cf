//! The API's one error shape: `{"error": {"code", "message", "field"}}` with the right status.
//!
//! Validation errors name the JSON path or parameter (`field`); not-found never says whether
//! the id exists for another tenant (404, not 403, so ids cannot be probed); store and queue
//! failures are logged with their detail and shown as a generic 500/503 without internal text.
//! Every code is an [`ErrorCode`], so the document lists every code the server can send.

use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use sundial_api_types::{ErrorBody, ErrorCode};
use sundial_core::control::ControlError;

/// An error answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Stable machine-readable code.
    pub code: ErrorCode,
    /// Human-readable message (never internal error text).
    pub message: String,
    /// The offending field or parameter, if any.
    pub field: Option<String>,
    /// `Retry-After` seconds (429, 503).
    pub retry_after: Option<u32>,
}

impl ApiError {
    /// An error without a field.
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError { status, code, message: message.into(), field: None, retry_after: None }
    }

    /// Names the field.
    pub fn field(mut self, f: impl Into<String>) -> Self {
        self.field = Some(f.into());
        self
    }

    /// Sets `Retry-After`.
    pub fn retry_after(mut self, secs: u32) -> Self {
        self.retry_after = Some(secs);
        self
    }

    /// 400 `validation_failed` on `field`.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, ErrorCode::ValidationFailed, message).field(field)
    }

    /// 404 `not_found`.
    pub fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, format!("{what} not found"))
    }

    /// 500 `internal`, with nothing of the cause in it.
    pub fn internal() -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::Internal, "internal error")
    }

    /// The response body.
    pub fn body(&self) -> ErrorBody {
        ErrorBody::new(self.code, self.message.clone(), self.field.clone())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let retry_after = self.retry_after.or((self.status == StatusCode::SERVICE_UNAVAILABLE).then_some(1));
        let mut r = (self.status, Json(self.body())).into_response();
        if let Some(secs) = retry_after {
            r.headers_mut().insert(RETRY_AFTER, HeaderValue::from(secs));
        }
        r
    }
}

impl From<ControlError> for ApiError {
    fn from(e: ControlError) -> Self {
        match e {
            ControlError::NotFound { what } => ApiError::not_found(what),
            ControlError::Invalid(v) => ApiError::invalid(v.field, v.reason),
            ControlError::Exists => ApiError::new(
                StatusCode::CONFLICT,
                ErrorCode::AlreadyExists,
                "a job with this id already exists (deleted jobs keep their id for the retention period)",
            )
            .field("jobId"),
            ControlError::VersionConflict { expected, current } => ApiError::new(
                StatusCode::PRECONDITION_FAILED,
                ErrorCode::VersionMismatch,
                format!("it is at version {current}, not {expected}: read it again and retry"),
            )
            .field("If-Match"),
            ControlError::Limited { code, field, message, retry_after_secs } => {
                ApiError::new(StatusCode::TOO_MANY_REQUESTS, code, message)
                    .field(field)
                    .retry_after(retry_after_secs)
            }
            ControlError::Conflict { code, field, message } => {
                ApiError::new(StatusCode::CONFLICT, code, message).field(field)
            }
            ControlError::Forbidden { message } => {
                ApiError::new(StatusCode::FORBIDDEN, ErrorCode::Forbidden, message)
            }
            other => {
                let retryable = other.is_retryable();
                tracing::error!(error = %other, retryable, "control plane failure");
                if retryable {
                    ApiError::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        ErrorCode::Unavailable,
                        "the service is temporarily unavailable; retry",
                    )
                } else {
                    ApiError::internal()
                }
            }
        }
    }
}
