//! The service limits the model checks against.

use serde::{Deserialize, Serialize};

/// Service limits the model checks against.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Write units per second one DynamoDB partition (table or GSI) accepts.
    pub partition_wcu: f64,
    /// Read units per second one DynamoDB partition (table or GSI) accepts.
    pub partition_rcu: f64,
    /// On-demand write units per second per table (default account quota, adjustable).
    pub table_wcu: f64,
    /// On-demand read units per second per table (default account quota, adjustable).
    pub table_rcu: f64,
    /// Share of the table quota a plan may use (`min_executions_tables` and [`fit`](fn@crate::fit)).
    pub table_headroom: f64,
    /// Concurrent Lambda executions per account (default quota, adjustable).
    pub lambda_concurrency: f64,
    /// Largest shard count [`fit`](fn@crate::fit) may choose.
    pub max_shards: u32,
}

impl Limits {
    /// AWS defaults: 1,000 WCU / 3,000 RCU per partition, 40,000 WCU / 40,000 RCU per
    /// on-demand table, 80 % headroom, 1,000 concurrent Lambda executions, 65,536 shards.
    pub fn aws_default() -> Limits {
        Limits {
            partition_wcu: 1_000.0,
            partition_rcu: 3_000.0,
            table_wcu: 40_000.0,
            table_rcu: 40_000.0,
            table_headroom: 0.8,
            lambda_concurrency: 1_000.0,
            max_shards: 65_536,
        }
    }
}
