//! The id alphabet shared by every name Sundial stores in a key (tenants, jobs, calendars,
//! resources): 1–64 characters of `[A-Za-z0-9_-]`, so `#`, `@` and `:` can separate key parts
//! unambiguously. It lives in the lowest crate that names things (a business calendar names its
//! parent), so the key module and the calendars apply one rule.

/// Ids (tenant, job) are 1–64 characters of `[A-Za-z0-9_-]`, so `#`, `@` and `:` can separate
/// key parts unambiguously.
pub fn validate_id(field: &'static str, id: &str) -> Result<(), KeyError> {
    if id.is_empty()
        || id.len() > 64
        || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(KeyError {
            field,
            reason: format!("{id:?} must be 1-64 characters of A-Z, a-z, 0-9, '-' or '_'"),
        });
    }
    Ok(())
}

/// An id or key that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct KeyError {
    /// The offending field.
    pub field: &'static str,
    /// Why.
    pub reason: String,
}
