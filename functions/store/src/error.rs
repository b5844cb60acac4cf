//! Store errors that answer questions instead of carrying strings.

use aws_sdk_dynamodb::error::SdkError;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;

/// A DynamoDB call failed (a failed *condition* is never this: it is a typed outcome).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Throttling, 5xx, timeouts, connection errors: retry with backoff.
    #[error("DynamoDB {op} failed transiently: {message}")]
    Transient {
        /// The operation.
        op: &'static str,
        /// What the SDK said.
        message: String,
    },
    /// Validation errors, missing tables, access denied: retrying will not help.
    #[error("DynamoDB {op} failed: {message}")]
    Permanent {
        /// The operation.
        op: &'static str,
        /// What the SDK said.
        message: String,
    },
    /// A stored item does not decode.
    #[error(transparent)]
    Decode(#[from] super::items::DecodeError),
}

impl StoreError {
    /// Whether a retry may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Transient { .. })
    }

    /// Classifies an SDK error by its code, not its text.
    pub fn from_sdk<E>(op: &'static str, e: SdkError<E, HttpResponse>) -> Self
    where
        E: aws_smithy_types::error::metadata::ProvideErrorMetadata
            + std::error::Error
            + Send
            + Sync
            + 'static,
    {
        let message = format!("{}", aws_sdk_dynamodb::error::DisplayErrorContext(&e));
        let transient = match &e {
            SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => true,
            SdkError::ServiceError(s) => {
                let code = s.err().code().unwrap_or_default();
                s.raw().status().as_u16() >= 500
                    || matches!(
                        code,
                        "ProvisionedThroughputExceededException"
                            | "ThrottlingException"
                            | "RequestLimitExceeded"
                            | "InternalServerError"
                            | "ServiceUnavailable"
                            | "TransactionConflictException"
                    )
            }
            _ => false,
        };
        if transient {
            StoreError::Transient { op, message }
        } else {
            StoreError::Permanent { op, message }
        }
    }
}

/// Whether an SDK error is a failed condition (the normal "someone else got there" outcome).
pub fn is_condition_failed<E>(e: &SdkError<E, HttpResponse>) -> bool
where
    E: aws_smithy_types::error::metadata::ProvideErrorMetadata,
{
    matches!(e, SdkError::ServiceError(s) if s.err().code() == Some("ConditionalCheckFailedException"))
}
