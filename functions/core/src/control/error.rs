//! The control plane's errors: each variant is one answer the API gives (status and code), and
//! says whether retrying may help. Store and queue errors keep their typed source; the API logs
//! them and shows the caller a generic message, never their text.

use crate::trigger::scan::ScanError;
use sundial_model::ValidationError;
use sundial_store::queue::QueueError;
use sundial_store::StoreError;

/// A control-plane operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// No such job or execution *for this tenant* (another tenant's is not found either).
    #[error("{what} not found")]
    NotFound {
        /// `job`, `execution` or `version`.
        what: &'static str,
    },
    /// The request is invalid; `field` names the offending JSON path or parameter.
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    /// A job with this id exists (or existed and is still retained after deletion).
    #[error("jobId: a job with this id already exists")]
    Exists,
    /// Optimistic concurrency: the job is not at the version the caller read. Nothing changed.
    #[error("version: it is at version {current}, not {expected}")]
    VersionConflict {
        /// The version the caller sent (If-Match).
        expected: u64,
        /// The version now stored.
        current: u64,
    },
    /// The operation does not apply in the current state (deleted job, final execution, ...).
    #[error("{field}: {message}")]
    Conflict {
        /// Machine-readable code (`job_deleted`, `not_cancellable`, `not_dead`, ...).
        code: sundial_model::ErrorCode,
        /// The field the conflict is about.
        field: &'static str,
        /// Why.
        message: String,
    },
    /// A per-tenant quota or rate has no room (HTTP 429).
    #[error("{field}: {message}")]
    Limited {
        /// `quota_exceeded` (a standing quota), `rate_limited` (a per-minute rate) or `saturated`.
        code: sundial_model::ErrorCode,
        /// The field or operation it is about.
        field: &'static str,
        /// Which limit, and its value.
        message: String,
        /// When to try again (seconds).
        retry_after_secs: u32,
    },
    /// The caller may not do this (a platform operation by a caller that is not an operator).
    #[error("forbidden: {message}")]
    Forbidden {
        /// Why.
        message: String,
    },
    /// DynamoDB failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// SQS failed.
    #[error(transparent)]
    Queue(#[from] QueueError),
}

impl ControlError {
    /// Whether the same request may succeed later unchanged.
    pub fn is_retryable(&self) -> bool {
        match self {
            ControlError::Store(e) => e.is_retryable(),
            ControlError::Queue(e) => e.is_retryable(),
            _ => false,
        }
    }

    /// A validation error on `field`.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ControlError::Invalid(ValidationError { field: field.into(), reason: reason.into() })
    }
}

impl From<ScanError> for ControlError {
    fn from(e: ScanError) -> Self {
        match e {
            ScanError::Store(s) => ControlError::Store(s),
            ScanError::Queue(q) => ControlError::Queue(q),
            ScanError::Crash(p) => ControlError::Store(StoreError::Transient {
                op: "dispatch",
                message: format!("injected crash at {p:?}"),
            }),
            ScanError::Shards { first, .. } => ControlError::from(*first),
        }
    }
}
