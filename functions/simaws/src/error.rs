//! The one error type of every simulated operation: what the service would answer (HTTP status,
//! error code, message, extra body fields), rendered by the protocol of the service.

use serde_json::{Map, Value};

/// A service error, as the wire carries it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ApiError {
    pub(crate) status: u16,
    /// The error code (`ConditionalCheckFailedException`, `QueueDoesNotExist`, ...).
    pub(crate) code: String,
    pub(crate) message: String,
    /// Fields merged into the body (`Item`, `CancellationReasons`).
    pub(crate) extra: Map<String, Value>,
    /// SQS's legacy query error code (`AWS.SimpleQueueService.NonExistentQueue;Sender`).
    pub(crate) query_error: Option<String>,
}

impl ApiError {
    pub(crate) fn new(status: u16, code: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code: code.to_string(),
            message: message.into(),
            extra: Map::new(),
            query_error: None,
        }
    }

    pub(crate) fn validation(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "ValidationException", message)
    }

    pub(crate) fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "ResourceNotFoundException", message)
    }

    pub(crate) fn unknown_operation(service: &str, op: &str) -> ApiError {
        ApiError::new(
            400,
            "UnknownOperationException",
            format!("simaws does not model {service} operation {op} (see docs/simulation.md, \"The simulated AWS\")"),
        )
    }

    pub(crate) fn with(mut self, key: &str, v: Value) -> ApiError {
        self.extra.insert(key.to_string(), v);
        self
    }

    pub(crate) fn with_query_error(mut self, q: &str) -> ApiError {
        self.query_error = Some(q.to_string());
        self
    }

    /// The awsJson body: `{"__type": code, "message": ..., extra...}`.
    pub(crate) fn json_body(&self) -> Value {
        let mut m = self.extra.clone();
        m.insert("__type".into(), Value::String(self.code.clone()));
        m.insert("message".into(), Value::String(self.message.clone()));
        Value::Object(m)
    }
}
