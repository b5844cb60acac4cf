//! Validation errors of a [`ScheduleSpec`](super::ScheduleSpec).
//!
//! Every variant names the JSON field of the spec that is wrong (camelCase, as the API receives
//! it) and says why, so the API can answer `400 {"field": .., "message": ..}` without parsing
//! strings. All of them are permanent: retrying the same spec cannot succeed.

use std::borrow::Cow;

/// Why a [`ScheduleSpec`](super::ScheduleSpec) was refused. `Display` is one line:
/// `"<field>: <reason>"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// The `expression` field (cron, `rate(..)`, `at(..)`).
    #[error("expression: {0}")]
    Expression(String),
    /// One item of the `expressions` list, by its index in that list (malformed, a duplicate
    /// of another expression, or past the limit).
    #[error("expressions[{index}]: {reason}")]
    Expressions {
        /// Index in the `expressions` list (not counting `expression`).
        index: usize,
        /// Why.
        reason: String,
    },
    /// The `timezone` field (must be an IANA zone name).
    #[error("timezone: {0}")]
    Timezone(String),
    /// The `onGap` field (`skip` or `shift`).
    #[error("onGap: {0}")]
    OnGap(String),
    /// The `onOverlap` field (`first`, `last` or `both`).
    #[error("onOverlap: {0}")]
    OnOverlap(String),
    /// The `start` bound.
    #[error("start: {0}")]
    Start(String),
    /// The `end` bound.
    #[error("end: {0}")]
    End(String),
    /// The `exclusions` calendar.
    #[error("exclusions: {0}")]
    Exclusions(String),
    /// The `jitterWindowSecs` field.
    #[error("jitterWindowSecs: {0}")]
    JitterWindowSecs(String),
    /// The `businessCalendar` reference (its roll policy, or the calendar it names).
    #[error("businessCalendar: {0}")]
    BusinessCalendar(String),
}

impl ScheduleError {
    /// The spec field at fault, spelled as in the JSON job definition.
    pub fn field(&self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            ScheduleError::Expressions { index, .. } => return Cow::Owned(format!("expressions[{index}]")),
            ScheduleError::Expression(_) => "expression",
            ScheduleError::Timezone(_) => "timezone",
            ScheduleError::OnGap(_) => "onGap",
            ScheduleError::OnOverlap(_) => "onOverlap",
            ScheduleError::Start(_) => "start",
            ScheduleError::End(_) => "end",
            ScheduleError::Exclusions(_) => "exclusions",
            ScheduleError::JitterWindowSecs(_) => "jitterWindowSecs",
            ScheduleError::BusinessCalendar(_) => "businessCalendar",
        })
    }

    /// The reason alone, without the field prefix.
    pub fn reason(&self) -> &str {
        match self {
            ScheduleError::Expression(r)
            | ScheduleError::Timezone(r)
            | ScheduleError::OnGap(r)
            | ScheduleError::OnOverlap(r)
            | ScheduleError::Start(r)
            | ScheduleError::End(r)
            | ScheduleError::Exclusions(r)
            | ScheduleError::JitterWindowSecs(r)
            | ScheduleError::BusinessCalendar(r)
            | ScheduleError::Expressions { reason: r, .. } => r,
        }
    }

    /// Always `false`: a spec that failed validation fails again. Kept so callers can treat
    /// every Sundial error type alike (docs/architecture.md,
    /// "Errors say whether a retry can help").
    pub fn is_retryable(&self) -> bool {
        false
    }
}
