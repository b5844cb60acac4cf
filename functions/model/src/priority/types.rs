//! [`Priority`], the field a definition embeds, and the lane it sends a job's executions to.
//! Below the definition, so it imports nothing of the crate but [`Lane`]; the back-pressure
//! and fairness rules are `priority.rs`'s.

use crate::lane::Lane;
use serde::{Deserialize, Serialize};

/// A job's priority within its pool.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    Serialize,
    Deserialize,
    PartialOrd,
    Ord,
    utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
#[schema(
    default = "normal",
    description = "Priority within the pool. `low` runs from the pool's low lane, which workers read after the main queue, and is deferred first when the pool is busy (its message held back while the pool's queue is deep); `high` and `normal` share the main queue, `high` is never deferred. A create, trigger-now or backfill into a saturated lane answers 429 `saturated` with `Retry-After` (docs/priority.md). Absent: normal."
)]
pub enum Priority {
    /// Never deferred by the tick; main queue.
    High,
    /// The default; main queue.
    #[default]
    Normal,
    /// Low lane; deferred first when the pool is busy.
    Low,
}

impl Priority {
    /// Whether this is the default (left out of stored and returned definitions).
    pub fn is_normal(&self) -> bool {
        *self == Priority::Normal
    }

    /// The lane its executions are sent to.
    pub fn lane(self) -> Lane {
        match self {
            Priority::Low => Lane::Low,
            Priority::High | Priority::Normal => Lane::Main,
        }
    }

    /// Its name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::High => "high",
            Priority::Normal => "normal",
            Priority::Low => "low",
        }
    }
}
