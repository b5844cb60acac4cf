//! The deployment a definition is judged against: its pools, its logical shard count, its
//! target policy and the names of its own queues (which no job may target). A plain borrowed
//! value, so validation needs no environment: the control plane passes its `Config`
//! (`impl From<&Config> for Deployment`), tests and tools build one directly.

use crate::lane::Lane;
use crate::outbound::TargetPolicy;
use crate::resources::Resources;

/// What validation needs to know of a deployment.
#[derive(Debug, Clone, Copy)]
pub struct Deployment<'a> {
    /// Worker pools; each has a queue and a DLQ.
    pub pools: &'a [String],
    /// Logical shard count (hash(job) mod shards).
    pub shards: u32,
    /// Prefix of every pool queue name: pool `p` is `{queue_prefix}{p}`.
    pub queue_prefix: &'a str,
    /// What jobs may call.
    pub targets: &'a TargetPolicy,
}

impl<'a> From<&Deployment<'a>> for Deployment<'a> {
    fn from(d: &Deployment<'a>) -> Self {
        *d
    }
}

impl Deployment<'_> {
    /// Queue name of a pool.
    pub fn queue_name(&self, pool: &str) -> String {
        format!("{}{pool}", self.queue_prefix)
    }

    /// Queue name of one of a pool's lanes: the pool queue, or its low lane
    /// `{prefix}{pool}-low` (docs/priority.md).
    pub fn lane_queue_name(&self, pool: &str, lane: Lane) -> String {
        format!("{}{pool}{}", self.queue_prefix, lane.suffix())
    }

    /// Outcome-notification queue name of a pool: `{prefix}{pool}-notify` (docs/outcomes.md).
    pub fn notify_queue_name(&self, pool: &str) -> String {
        format!("{}{pool}{}", self.queue_prefix, Resources::get().queues.notify_suffix)
    }

    /// Dead-letter queue name of a pool.
    pub fn dlq_name(&self, pool: &str) -> String {
        format!("{}{pool}{}", self.queue_prefix, Resources::get().queues.dlq_suffix)
    }
}
