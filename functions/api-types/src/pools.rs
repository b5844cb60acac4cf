//! The worker pools' queues (`GET /v1/pools`, operators only).

use crate::time;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// SQS's approximate counts of one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueDepth {
    /// Waiting to be received.
    #[schema(minimum = 0)]
    pub visible: u64,
    /// Received and not deleted: running, or held for a retry's backoff or a wait.
    #[schema(minimum = 0)]
    pub in_flight: u64,
    /// Sent with a delay that has not passed: fires not due yet.
    #[schema(minimum = 0)]
    pub delayed: u64,
}

/// One worker pool's queues now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PoolQueue {
    /// The pool.
    pub pool: String,
    /// The most executions its workers can run at once (`SUNDIAL_POOL_CAPACITY`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1)]
    pub capacity: Option<u32>,
    /// In flight on both lanes over `capacity`: an upper bound of the share of its slots in use
    /// (a message held for a retry's backoff is in flight too). Absent without a capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0)]
    pub saturation: Option<f64>,
    /// Its main lane.
    pub main: QueueDepth,
    /// Its low-priority lane (docs/priority.md).
    pub low: QueueDepth,
    /// Its dead-letter queue.
    pub dead_letters: QueueDepth,
}

/// `GET /v1/pools`: every pool of the deployment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PoolQueues {
    /// When the counts were read.
    #[serde(serialize_with = "time::one")]
    pub observed_at: DateTime<Utc>,
    /// In the deployment's order.
    pub pools: Vec<PoolQueue>,
}
