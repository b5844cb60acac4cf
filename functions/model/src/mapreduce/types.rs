//! The map-reduce types a definition and an execution embed: the job's [`MapReduceSpec`] and
//! the [`MapState`] (with its [`Phase`]) stored on a map-reduce execution. Below the
//! definition and the execution, so it imports nothing of the crate; the rules that read them
//! are `mapreduce.rs`'s.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most items one fire may emit (`mapReduce.maxItems` defaults to it).
pub const MAX_ITEMS: u32 = 100_000;

/// The job definition's `mapReduce` block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    description = "Map-reduce job (docs/mapreduce.md): needs an inProcess target whose handler is registered with Handlers::with_map_reduce. Each fire's map emits items (each its own child execution `{id}.i-{key}`, claimed, retried and dead-lettered alone); once every item is final a fenced reduce runs once with all their results. Not with shards or broadcast."
)]
pub struct MapReduceSpec {
    /// Most items one fire may emit; an emit past it fails the map attempt permanently
    /// (EmitInvalid).
    // 1 to `MAX_ITEMS`, default `MAX_ITEMS`; `null` is read as absent (no `not_null` here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 100000, default = 100000)]
    pub max_items: Option<u32>,
}

impl MapReduceSpec {
    /// The effective item limit.
    pub fn limit(&self) -> u64 {
        u64::from(self.max_items.unwrap_or(MAX_ITEMS))
    }
}

/// Which phase a map-reduce parent is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Phase {
    /// Its handler emits items (RUNNING, or READY / RETRY_WAIT before and between attempts).
    Map,
    /// Sealed: its items run (WAITING).
    Wait,
    /// Every item is final: the reduce runs (READY, RUNNING, RETRY_WAIT, then final).
    Reduce,
}

/// What a map-reduce execution carries besides an ordinary one's fields.
#[derive(Debug, Clone, PartialEq)]
pub enum MapState {
    /// The parent: its phase and counts.
    Parent {
        /// Current phase (a final parent keeps the last one).
        phase: Phase,
        /// Item children created so far (exact: counted in the transaction that creates them).
        emitted: u64,
        /// Item children final so far (exact: counted in the transaction of their finish).
        done: u64,
        /// Of those, how many did not succeed.
        failed: u64,
    },
    /// An item child: its input and, once it succeeded, its handler's result.
    Item {
        /// The input the map emitted with it.
        input: Value,
        /// The result its `run_item` returned.
        result: Option<Value>,
    },
}

impl MapState {
    /// A fresh parent's state.
    pub fn new_parent() -> Self {
        MapState::Parent { phase: Phase::Map, emitted: 0, done: 0, failed: 0 }
    }
}
