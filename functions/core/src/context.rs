//! The clients and names every plane shares: DynamoDB, the deployment's configuration, and
//! the per-pool SQS queues. The tick's scans and the API's control plane take the same value;
//! the worker builds its own (it wraps DynamoDB in the clock-skew probe).

use crate::config::Config;
use crate::queue::PoolQueues;

/// Clients, names and pool queues, built once per process in each `main`.
#[derive(Debug)]
pub struct Ctx {
    /// DynamoDB.
    pub ddb: aws_sdk_dynamodb::Client,
    /// Table, queue and pool names, shard count.
    pub cfg: Config,
    /// Pool queues (URLs resolved once).
    pub queues: PoolQueues,
}
