//! The clients and names every plane shares: DynamoDB, the deployment's configuration, and
//! the per-pool SQS queues. The tick's scans and the API's control plane take the same value;
//! the worker builds its own (it wraps DynamoDB in the clock-skew probe).

use crate::config::Config;
use sundial_store::executions::ExecStore;
use sundial_store::queue::PoolQueues;

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

impl Ctx {
    /// The executions table's store handle (the client is shared; the handle is a cheap clone).
    pub fn execs(&self) -> ExecStore {
        ExecStore::new(self.ddb.clone(), self.cfg.executions_table.clone())
    }
}
