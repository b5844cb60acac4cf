//! The dependency types a definition embeds: one upstream ([`Dependency`], with its
//! [`DependencyPeriod`] and [`DependencyStatus`]) and the [`OnDependencyDeadline`] policy.
//! Below the definition, so it imports nothing of the crate; the rules over them (the period
//! rule, what satisfies a status, the syntax check, the waiting fire's verdict) are
//! `dependency.rs`'s.

use serde::{Deserialize, Serialize};

/// One upstream a job's fires wait for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    description = "An upstream run each fire of this job waits for: the run of `job` (same tenant) for the same period (the upstream fire whose period contains this fire's scheduled instant), the previous one, or the one whose period contains the instant shifted by offsetSecs.",
    examples(json!({"job": "close-books", "period": "same", "status": "succeeded"}))
)]
pub struct Dependency {
    /// The upstream job's id (the caller's tenant); it must exist when the job is created or
    /// edited, else 400 on `after[i].job`.
    #[schema(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub job: String,
    // Which of the upstream's runs (`DependencyPeriod`, inline).
    #[serde(default)]
    #[schema(inline)]
    pub period: DependencyPeriod,
    /// With `period: offset`: seconds added to this fire's scheduled instant before the
    /// upstream's period is looked up (negative: earlier); required then, refused otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = -2678400, maximum = 2678400)]
    pub offset_secs: Option<i64>,
    // What the upstream run must have reached (`DependencyStatus`, inline).
    #[serde(default)]
    #[schema(inline)]
    pub status: DependencyStatus,
}

/// Which upstream run a fire waits for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(
    default = "same",
    description = "same: the upstream fire whose period contains this fire's instant; previous: the one before it; offset: the one whose period contains the instant plus offsetSecs."
)]
pub enum DependencyPeriod {
    /// The upstream fire whose period contains the downstream's instant.
    #[default]
    Same,
    /// The upstream fire before that one (a job may wait for its own previous run this way).
    Previous,
    /// The upstream fire whose period contains the instant plus `offsetSecs`.
    Offset,
}

/// What the upstream run must have reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(
    default = "succeeded",
    description = "succeeded: the upstream run SUCCEEDED; final: it ended, whatever the outcome (SUCCEEDED, FAILED, DEAD, SKIPPED, CANCELED)."
)]
pub enum DependencyStatus {
    /// SUCCEEDED.
    #[default]
    Succeeded,
    /// Any final status.
    Final,
}

/// What a fire does when its upstreams are not satisfied by its dependency deadline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(
    default = "fail",
    description = "At the dependency deadline: fail ends the fire DEAD (DependencyNotMet, copied to the dead-letter queue, replayable), skip ends it SKIPPED, run starts it anyway with a DependencyDeadlineRun note on its timeline."
)]
pub enum OnDependencyDeadline {
    /// DEAD, `DependencyNotMet`, copied to the DLQ (replay it once the upstream is fixed).
    #[default]
    Fail,
    /// SKIPPED, `DependencyNotMet`.
    Skip,
    /// Run anyway (audited).
    Run,
}

impl OnDependencyDeadline {
    /// Whether this is the default (left out of a stored definition).
    pub fn is_default(&self) -> bool {
        *self == OnDependencyDeadline::Fail
    }
}
