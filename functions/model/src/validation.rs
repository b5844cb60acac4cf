//! Why a definition, an id or a target was refused: the field and the reason (the API's 400).

/// Why a job definition or id was refused. Always permanent; `field` is the JSON path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ValidationError {
    /// The offending field (`schedule.expression`, `pool`, `retry.maxAttempts`, ...).
    pub field: String,
    /// Why.
    pub reason: String,
}

pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> ValidationError {
    ValidationError { field: field.into(), reason: reason.into() }
}
