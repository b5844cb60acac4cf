//! What a call can fail with. The API's own answer ([`ApiError`]) is kept apart from failing to
//! reach it, failing to sign, or an answer outside the contract, so a caller decides on the
//! status and code, never on a message string.

use std::time::Duration;

/// The API answered with an error: `{"error": {"code", "message", "field"}}` (docs/api.md).
///
/// An answer that is not in that shape (API Gateway's own throttling or IAM refusals are
/// `{"message": "..."}`) still becomes an `ApiError`, with code `http_{status}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {code}{}: {message}", field.as_ref().map(|f| format!(" ({f})")).unwrap_or_default())]
pub struct ApiError {
    /// HTTP status.
    pub status: u16,
    /// The stable error code (`validation_failed`, `not_found`, `rate_limited`, ...).
    pub code: String,
    /// The JSON path or parameter the error is about (`schedule.expression`, `cursor`).
    pub field: Option<String>,
    /// A message for people.
    pub message: String,
    /// The answer's `Retry-After`, if it had one.
    pub retry_after: Option<Duration>,
}

impl ApiError {
    /// Whether the same request may succeed later: 429 (a quota or the stage's throttle), 502,
    /// 503 and 504 (a dependency or the gateway), and 409 `idempotency_in_progress` (the first
    /// request with the same key still runs). 500 `internal` is not: docs/api.md keeps it for
    /// failures a retry does not mend.
    pub fn is_retryable(&self) -> bool {
        matches!(self.status, 429 | 502 | 503 | 504) || self.code == "idempotency_in_progress"
    }

    /// Whether the request was refused before it did anything, so that any request, even one
    /// that is not idempotent, may be sent again: 429. A quota refuses before writing (the API's
    /// fuzz tests check that a refused request writes nothing), and API Gateway's throttle
    /// refuses before the function runs.
    pub fn refused_before_effect(&self) -> bool {
        self.status == 429
    }

    /// The code as the document's [`ErrorCode`](sundial_api_types::ErrorCode), when it is one
    /// this client knows (a newer server's code, or a gateway's `http_{status}`, is `None`;
    /// [`ApiError::code`] keeps the text).
    pub fn error_code(&self) -> Option<sundial_api_types::ErrorCode> {
        serde_json::from_value(serde_json::Value::String(self.code.clone())).ok()
    }
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The API answered with an error.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// No answer: connection refused or dropped, TLS, or the per-request timeout.
    #[error("cannot reach the API at {url}: {source}")]
    Transport {
        /// The URL called.
        url: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A success answer whose body is not what openapi.json says.
    #[error("the answer from {url} is not the documented JSON: {source}")]
    Decode {
        /// The URL called.
        url: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// IAM mode could not get credentials or sign.
    #[error("signing the request (IAM): {0}")]
    Signing(String),
    /// The client was set up or called with something that cannot be sent (a bad URL, a header
    /// value with control characters).
    #[error("invalid request: {0}")]
    Invalid(String),
}

impl Error {
    /// Whether the same request may succeed later (see [`ApiError::is_retryable`]); a transport
    /// failure is, since nothing may have reached the API.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Api(e) => e.is_retryable(),
            Error::Transport { .. } => true,
            Error::Decode { .. } | Error::Signing(_) | Error::Invalid(_) => false,
        }
    }

    /// The API's error, if it answered with one.
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            Error::Api(e) => Some(e),
            _ => None,
        }
    }
}

/// Builds the [`ApiError`] of a non-2xx answer from its body.
pub(crate) fn api_error(status: u16, body: &[u8], retry_after: Option<Duration>) -> ApiError {
    let json: serde_json::Value = serde_json::from_slice(body).unwrap_or(serde_json::Value::Null);
    let err = &json["error"];
    match err["code"].as_str() {
        Some(code) => ApiError {
            status,
            code: code.to_string(),
            field: err["field"].as_str().map(str::to_string),
            message: err["message"].as_str().unwrap_or_default().to_string(),
            retry_after,
        },
        // Not Sundial's shape: API Gateway (`{"message": "Forbidden"}`) or a proxy.
        None => ApiError {
            status,
            code: format!("http_{status}"),
            field: None,
            message: json["message"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned()),
            retry_after,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_apis_errors_and_the_gateways_both_become_api_errors() {
        let ours = api_error(
            400,
            br#"{"error":{"code":"validation_failed","message":"bad","field":"schedule.expression"}}"#,
            None,
        );
        assert_eq!(
            (ours.code.as_str(), ours.field.as_deref()),
            ("validation_failed", Some("schedule.expression"))
        );
        assert_eq!(ours.to_string(), "400: validation_failed (schedule.expression): bad");
        assert!(!ours.is_retryable());
        let gateway = api_error(429, br#"{"message":"Too Many Requests"}"#, Some(Duration::from_secs(1)));
        assert_eq!((gateway.code.as_str(), gateway.message.as_str()), ("http_429", "Too Many Requests"));
        assert!(gateway.is_retryable() && gateway.refused_before_effect());
        let in_progress = api_error(
            409,
            br#"{"error":{"code":"idempotency_in_progress","message":"m","field":null}}"#,
            None,
        );
        assert!(in_progress.is_retryable() && !in_progress.refused_before_effect());
        assert!(!api_error(500, b"oops", None).is_retryable());
    }
}
