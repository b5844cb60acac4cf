//! The API's error codes: one enum, so the server can only answer a code the document lists and
//! a client can match on it. Each is stable once published; the HTTP status says the class, the
//! code says which rule refused the request.

use serde::{Deserialize, Serialize};

/// A stable, machine-readable error code (`{"error": {"code": ...}}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// 400: a field, parameter or header is invalid (`field` names it).
    ValidationFailed,
    /// 400: the body is not JSON.
    InvalidJson,
    /// 401: no valid caller.
    Unauthorized,
    /// 403: the caller may not do this.
    Forbidden,
    /// 404: no such route, or no such object for this tenant.
    NotFound,
    /// 405: the path exists, the method does not (`Allow` lists those that do).
    MethodNotAllowed,
    /// 409: an object with this id exists (or is retained after deletion).
    AlreadyExists,
    /// 409: the job is deleted.
    JobDeleted,
    /// 409: the job is completed (its `maxRuns` scheduled fires were created).
    JobCompleted,
    /// 409: the execution is final.
    NotCancellable,
    /// 409: only DEAD executions are replayed.
    NotDead,
    /// 409: the execution is older than its job's `retry.maxAgeSecs`.
    TooOld,
    /// 409: the calendar is deleted.
    CalendarDeleted,
    /// 409: a calendar with this id exists (create without If-Match).
    CalendarExists,
    /// 409: jobs still use the calendar.
    CalendarInUse,
    /// 409: a request with this Idempotency-Key still runs (`Retry-After`).
    IdempotencyInProgress,
    /// 412: If-Match names another version.
    VersionMismatch,
    /// 413: the body is over the size limit.
    PayloadTooLarge,
    /// 415: a body not sent as `application/json`.
    UnsupportedMediaType,
    /// 422: the Idempotency-Key was used for another request.
    IdempotencyKeyReused,
    /// 428: the operation needs If-Match.
    PreconditionRequired,
    /// 429: a standing per-tenant quota is full.
    QuotaExceeded,
    /// 429: a per-minute rate is spent.
    RateLimited,
    /// 429: the pool's lane is saturated (back-pressure).
    Saturated,
    /// 429: the tenant's requests per second are spent.
    Throttled,
    /// 500: a failure a retry does not mend.
    Internal,
    /// 503: a dependency is unavailable; retry (`Retry-After`).
    Unavailable,
}

impl ErrorCode {
    /// The code as sent.
    pub fn as_str(self) -> &'static str {
        use ErrorCode::*;
        match self {
            ValidationFailed => "validation_failed",
            InvalidJson => "invalid_json",
            Unauthorized => "unauthorized",
            Forbidden => "forbidden",
            NotFound => "not_found",
            MethodNotAllowed => "method_not_allowed",
            AlreadyExists => "already_exists",
            JobDeleted => "job_deleted",
            JobCompleted => "job_completed",
            NotCancellable => "not_cancellable",
            NotDead => "not_dead",
            TooOld => "too_old",
            CalendarDeleted => "calendar_deleted",
            CalendarExists => "calendar_exists",
            CalendarInUse => "calendar_in_use",
            IdempotencyInProgress => "idempotency_in_progress",
            VersionMismatch => "version_mismatch",
            PayloadTooLarge => "payload_too_large",
            UnsupportedMediaType => "unsupported_media_type",
            IdempotencyKeyReused => "idempotency_key_reused",
            PreconditionRequired => "precondition_required",
            QuotaExceeded => "quota_exceeded",
            RateLimited => "rate_limited",
            Saturated => "saturated",
            Throttled => "throttled",
            Internal => "internal",
            Unavailable => "unavailable",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn every_code_is_sent_as_its_name() {
        for c in [ErrorCode::ValidationFailed, ErrorCode::IdempotencyKeyReused, ErrorCode::Unavailable] {
            assert_eq!(serde_json::to_value(c).unwrap_or_default(), c.as_str());
        }
    }
}
