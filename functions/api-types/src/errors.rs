//! The one error shape: `{"error": {"code", "message", "field"}}`.

use serde::{Deserialize, Serialize};
pub use sundial_model::ErrorCode;
use utoipa::ToSchema;

/// Every error answer's body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = Error)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// The error itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable and machine-readable: decide on it, never on the message.
    pub code: ErrorCode,
    /// For people; never internal error text.
    pub message: String,
    /// The offending JSON path (`retry.maxAttempts`), parameter (`cursor`) or header
    /// (`If-Match`); `null` when the error is about no one field.
    #[schema(required = true, example = "retry.maxAttempts")]
    pub field: Option<String>,
}

impl ErrorBody {
    /// An error body.
    pub fn new(code: ErrorCode, message: impl Into<String>, field: Option<String>) -> Self {
        ErrorBody { error: ErrorDetail { code, message: message.into(), field } }
    }
}
