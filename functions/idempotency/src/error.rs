//! The crate's one error type.
//!
//! Expected outcomes of idempotency checks ("already done", "stale token", "exists") are *not*
//! errors: they are values of each module's outcome enum, because a handler must branch on them.
//! What remains is infrastructure failure and bad input, and the question a caller has about
//! those is "may I retry?", answered by [`Error::is_retryable`]. SDK errors are classified before
//! anything is turned into text, and the SDK error stays attached as the source.

use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a toolkit operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// DynamoDB failed in a way a later attempt may not (throttling, timeout, connection, 5xx).
    #[error("DynamoDB {operation} on table {table} failed (retryable): {message}")]
    Transient {
        /// The API call.
        operation: &'static str,
        /// The table.
        table: String,
        /// The SDK error with its full context.
        message: String,
        /// The SDK error.
        #[source]
        source: BoxError,
    },
    /// DynamoDB refused the request in a way a retry will not fix (validation, missing table,
    /// access denied).
    #[error("DynamoDB {operation} on table {table} failed (permanent): {message}")]
    Permanent {
        /// The API call.
        operation: &'static str,
        /// The table.
        table: String,
        /// The SDK error with its full context.
        message: String,
        /// The SDK error.
        #[source]
        source: BoxError,
    },
    /// A stored item does not have the shape this crate wrote.
    #[error("table {table}, item {key}: malformed {field}: {reason}")]
    Malformed {
        /// The table.
        table: String,
        /// The item's key, for the operator.
        key: String,
        /// The offending attribute.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Other writers kept changing the item between this call's write and its read-back; a
    /// later attempt will see a settled item.
    #[error("table {table}, item {key}: {reason} (retryable)")]
    Contended {
        /// The table.
        table: String,
        /// The item's key.
        key: String,
        /// What kept changing.
        reason: &'static str,
    },
    /// The caller passed a value this crate cannot use.
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The offending argument.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

impl Error {
    /// Whether the same call may succeed later (permanent errors need a code or data fix).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Transient { .. } | Error::Contended { .. })
    }

    pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        Error::Invalid { field, reason: reason.into() }
    }

    pub(crate) fn malformed(
        table: &str,
        key: impl Into<String>,
        field: &str,
        reason: impl Into<String>,
    ) -> Self {
        Error::Malformed {
            table: table.to_owned(),
            key: key.into(),
            field: field.to_owned(),
            reason: reason.into(),
        }
    }

    /// Classifies an SDK error of any DynamoDB operation.
    pub(crate) fn dynamo<E>(operation: &'static str, table: &str, err: SdkError<E, HttpResponse>) -> Self
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let retryable = match &err {
            SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => true,
            SdkError::ServiceError(s) => {
                s.raw().status().is_server_error()
                    || matches!(
                        s.err().code(),
                        Some(
                            "ThrottlingException"
                                | "ProvisionedThroughputExceededException"
                                | "RequestLimitExceeded"
                                | "InternalServerError"
                                | "TransactionConflictException"
                                | "TransactionInProgressException"
                        )
                    )
            }
            _ => false,
        };
        let message = DisplayErrorContext(&err).to_string();
        let table = table.to_owned();
        let source: BoxError = Box::new(err);
        if retryable {
            Error::Transient { operation, table, message, source }
        } else {
            Error::Permanent { operation, table, message, source }
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
